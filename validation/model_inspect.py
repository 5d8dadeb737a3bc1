r"""How qkov would classify a Hugging Face model's attention, and the rate each parameter would get (``qkov inspect``).

:func:`inspect_model` builds the model a config describes (a local model directory, a config JSON file, or a
``transformers`` model type such as ``qwen2``), with random weights and nothing downloaded, and returns
:class:`ModelInspection`: for each attention module its layout and each of its parameters' role (Q, K, V, O, a
fused tensor's q/k/v slice, an adapter, a score-only parameter with ``whole_circuit``, or other) with the
learning rate :func:`validation.user_models.param_groups` would give it; the modules it would refuse (with
``strict=True``), one line each; and how many parameters outside the attention stay at ``lr_other``.

The model is first built on the ``meta`` device (no memory) to count its parameters. Up to ``max_params`` it is
then built on the CPU and run once, so that fused layouts are confirmed against the forward exactly as
``param_groups`` confirms them; above it, layouts are read from the module structure only (``verified`` is
``False``: a fused tensor shows its preferred layout, unchecked).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from theory.errors import InputError

DEFAULT_MAX_PARAMS = 150_000_000
"""Largest model built and run on the CPU to confirm its layouts (GPT-2 small, BERT-base and T5-small fit)."""


@dataclass(frozen=True)
class ParamRate:
    """One parameter (or one q/k/v slice of a fused tensor) and the rate it would train at."""

    name: str
    role: str
    rows: str
    shape: tuple[int, ...]
    circuit: str
    lr: float


@dataclass(frozen=True)
class SiteReport:
    """One recognised attention module: its layout and its parameters' roles and rates."""

    name: str
    module: str
    layout: str
    parameters: list[ParamRate]


@dataclass(frozen=True)
class ModelInspection:
    """What :func:`inspect_model` found; :meth:`render` for people, :meth:`as_dict` for ``--json``."""

    source: str
    model_class: str
    parameters: int
    verified: bool
    rates: dict[str, float]
    sites: list[SiteReport]
    refused: list[str]
    other: list[ParamRate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (shapes as lists)."""
        return json.loads(json.dumps(asdict(self)))

    def render(self) -> str:
        """Plain text: a header, one block per attention module, the refused modules, the rest."""
        r = self.rates
        lines = [f"{self.model_class} ({self.source}): {self.parameters:,} parameters; rates: QK {r['qk']:g}, "
                 f"OV {r['ov']:g}, other {r['other']:g} (ratio {r['qk'] / r['ov']:g}); layouts "
                 + ("checked by running the model" if self.verified else
                    "from the module structure only (not run: more parameters than --max-params)")]
        for s in self.sites:
            lines.append(f"{s.name or '<root>'} ({s.module}): {s.layout}")
            w = max(len(p.name) for p in s.parameters)
            lines += [f"  {p.lr:10.4g}  {p.role:15}  {p.name:{w}}  {p.rows} {tuple(p.shape)}" for p in s.parameters]
        if not self.sites:
            lines.append("no attention module recognised: every parameter would stay at lr_other")
        lines += [f"refused: {msg}" for msg in self.refused] + [f"note: {msg}" for msg in self.notes]
        lines.append(f"other: {len(self.other)} tensors outside the attention circuits at {r['other']:g}")
        return "\n".join(lines)


def _transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise InputError("source: reading a transformers config needs transformers: pip install \"qkov[hf]\"") \
            from None
    return transformers


def load_config(source: str) -> Any:
    """The ``transformers`` config ``source`` names: a local directory holding ``config.json``, a config JSON
    file, or a model type (``transformers.CONFIG_MAPPING``: ``gpt2``, ``llama``, ``qwen2``, ...). Nothing is
    downloaded; nothing is read through a link. Bad input: :class:`~theory.errors.InputError`, one line."""
    tf = _transformers()
    path = Path(source)
    if path.is_symlink():
        raise InputError(f"source: {source!r}: a symbolic link; give the directory or file itself")
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.is_file() or cfg.is_symlink():
            raise InputError(f"source: {source!r}: a directory without a config.json (a regular file)")
        path = cfg
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"source: {str(path)!r}: not a readable config JSON ({type(e).__name__})") from None
        kind = data.get("model_type") if isinstance(data, dict) else None
        if kind not in tf.CONFIG_MAPPING:
            raise InputError(f"source: {str(path)!r}: model_type {kind!r} is not a transformers model type")
        try:
            return tf.AutoConfig.for_model(kind, **{k: v for k, v in data.items() if k != "model_type"})
        except (TypeError, ValueError) as e:
            raise InputError(f"source: {str(path)!r}: not a valid {kind} config ({str(e).splitlines()[0]})") from None
    if source in tf.CONFIG_MAPPING:
        return tf.AutoConfig.for_model(source)
    raise InputError(f"source: {source!r}: not a directory with config.json, a config JSON file or a transformers "
                     "model type (e.g. gpt2, llama, qwen2)")


def build_model(config: Any, *, device: str) -> Any:
    """The model ``config.architectures[0]`` names (else the base ``AutoModel``), with random weights."""
    import torch

    tf = _transformers()
    arch = (getattr(config, "architectures", None) or [None])[0]
    cls = getattr(tf, arch, None) if isinstance(arch, str) else None
    with torch.device(device):
        if cls is not None and hasattr(cls, "_from_config"):
            return cls._from_config(config)
        return tf.AutoModel.from_config(config)


def inspect_model(source: str, *, lr: float = 1e-3, ratio: float = 10.0, lr_other: float | None = None,
                  qk_bias: bool = True, embeddings: bool = False, whole_circuit: bool = False,
                  max_params: int = DEFAULT_MAX_PARAMS) -> ModelInspection:
    """Classify the attention of the model ``source`` describes (see the module docstring); changes nothing.

    ``lr``, ``ratio``, ``lr_other``, ``qk_bias``, ``embeddings``, ``whole_circuit``: as for
    :func:`validation.user_models.param_groups`. ``max_params``: the largest model built and run to confirm its
    layouts (``whole_circuit`` needs the run). Bad input raises :class:`~theory.errors.InputError` in one line
    before any model is built.
    """
    import torch

    from validation.user_models import check_rates, circuit_rates, plan_qk_ov

    check_rates(lr, ratio, lr_other)
    if not (isinstance(max_params, int) and max_params >= 0):
        raise InputError(f"max_params: {max_params!r}: must be an integer >= 0")
    config = load_config(source)
    with torch.no_grad():
        meta = build_model(config, device="meta")
    n = sum(p.numel() for p in meta.parameters())
    verified = n <= max_params
    if whole_circuit and not verified:
        raise InputError(f"max_params: {max_params}: the model has {n:,} parameters; whole_circuit must run it to "
                         "find the parameters that act only on the scores: raise --max-params")
    if verified:
        torch.manual_seed(0)
        model = build_model(config, device="cpu")
    else:
        model = meta
    from validation.attention_layouts import UnknownAttentionLayout

    refused: list[str] = []
    notes: list[str] = []
    def plan_of(verify: bool | None) -> list[Any]:
        return plan_qk_ov(model, verify=verify, refusals=refused, qk_bias=qk_bias, embeddings=embeddings,
                          whole_circuit=whole_circuit, strict=False)

    try:
        plan = plan_of(None if verified else False)
    except UnknownAttentionLayout as e:  # the model did not run on its dummy inputs
        if whole_circuit:
            raise InputError(f"whole_circuit: {e}") from None
        refused.clear()
        notes.append(f"layouts from the module structure only: {e}")
        verified = False
        plan = plan_of(False)
    rates = circuit_rates(lr, ratio, lr_other)
    sites: dict[str, tuple[str, str, list[ParamRate]]] = {}
    order = [s for s in dict.fromkeys(r.site for r in plan if r.layout and r.site)]
    for name in order:
        layout = next((r.layout for r in plan if r.site == name and r.layout != "whole circuit"), "whole circuit")
        sites[name] = (type(model.get_submodule(name)).__name__, layout, [])
    other: list[ParamRate] = []
    for r in plan:
        pr = ParamRate(r.name, r.role or "other", r.rows, tuple(r.shape), r.circuit, rates[r.circuit])
        home = r.site if r.site in sites else next((s for s in sites if s and r.name.startswith(s + ".")), None)
        if home is not None:
            sites[home][2].append(pr)
        else:
            other.append(pr)
    reports = [SiteReport(name, cls, layout, rows) for name, (cls, layout, rows) in sites.items()]
    return ModelInspection(source, type(model).__name__, n, verified, rates, reports, refused, other, notes)
