"""The validated configuration of one real-data run and the defaults per dataset and model.

One run = one ``(dataset, ratio, seed, optimizer, model, recipe)``; everything else is fixed by the
dataset's defaults for that model (and ``quick``), declared in :mod:`validation.real.datasets`, in
particular the OV rate ``lr_ov`` and the rate of every other parameter (embeddings, positions, head)
``lr_other = lr_ov``, identical for every ratio (``recipe="ratio-only"``; ``"paper"`` also moves the
dataset's ``paper_recipe`` groups with the ratio). Three model families (``model``):

- ``"paper"``: the official code's models (PAPER.md). HateXplain/SVA: one layer, d_model 64,
  4 heads of d_head 64, classifier at the last token; HateXplain AdamW 5e-5 with cosine decay
  after a linear warm-up, SVA SGD momentum 0.99 lr 5e-4. SQuAD: a 6-layer decoder that generates
  the answer.
- ``"small"`` (``--quick``, CI, 2-core machines): HateXplain/SVA the single-head QKOV classifier
  (``param``, ``layers``) with AdamW 3e-3; SQuAD a 2-layer decoder over a short context window.
- ``"minilm"`` (HateXplain only): the pretrained all-MiniLM-L6-v2 fine-tuned with the ratio
  (:mod:`validation.real.pretrained`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from theory.parametrization import BASELINE, ParamName
from theory.spec import Ge, Gt, Le, Lt, PositiveFinite, Spec

from . import datasets as _registry
from . import official as _official

DATASETS = _registry.NAMES
DatasetName = Literal[_registry.NAMES]  # type: ignore[valid-type]  # the registry's names, read once here
PresetName = Literal[_official.PRESETS]  # type: ignore[valid-type]  # the preset registry's names, read once here
OPTIMIZERS = ("adamw", "sgd")
MODELS = ("paper", "small", "minilm")
RECIPES = ("ratio-only", "paper")
RATE_GROUPS = ("qk", "ov", "position", "embedding", "bias", "mlp", "other")
"""Named parameter groups, each with its own rate factor (:func:`group_rates`): the QK circuit, the OV
circuit, the position embeddings (an ``nn.Embedding`` named in :data:`validation.real.training.POSITION_MODULES`:
the classifiers' distance-to-``[CLS]`` embedding, the decoder's positions; at the ``embedding`` factor unless set,
so ``embedding`` moves both as before issue 45), the embeddings (every other ``nn.Embedding``: words), the biases
(every other ``*bias``), the MLPs (parameters under a module named ``mlp``/``ffn``/``feed_forward``/
``intermediate``) and everything else (heads, norms' weights); the first group that claims a parameter keeps it,
in this order (:func:`validation.real.training.named_parameter_groups`)."""
RateGroup = Literal["qk", "ov", "position", "embedding", "bias", "mlp", "other"]
FACTOR_MIN, FACTOR_MAX = 1e-6, 1e6
"""Bounds of a rate factor (the ratio ``eta_QK/eta_OV`` and every ``rates`` factor), the same as ``--ratios``'
(:data:`qkov.cli.options.RATIO_MIN`): a factor of 1e300 overflowed float32 after minutes of data loading
(issue 44), one of 1e-300 trained a group that does not move."""
RateFactor = Annotated[float, Ge(FACTOR_MIN), Le(FACTOR_MAX)]
PAPER_RATIO = {k: d.paper_ratio for k, d in _registry.DATASETS.items()}
"""The QK learning-rate multiplier of the official code (PAPER.md), one per dataset."""
RATIOS = {k: d.ratios for k, d in _registry.DATASETS.items()}
"""Ratios of the full sweep (each includes the paper's)."""
QUICK_RATIOS = {k: d.quick_ratios for k, d in _registry.DATASETS.items()}
"""Ratios of ``--quick``: 1, an intermediate one and the paper's (SQuAD: 1 and the paper's 20 only,
to stay within the time budget of the decoder)."""
SEEDS = (0, 1, 2, 3, 4)
QUICK_SEEDS = (0, 1, 2)
PAPER_OPTIMIZER = {k: d.paper_optimizer for k, d in _registry.DATASETS.items()}


@dataclass(frozen=True, kw_only=True)
class RealRunConfig(Spec):
    """One real-data training run (see ``docs/real-data.md`` for every choice)."""

    dataset: DatasetName
    ratio: RateFactor = 1.0
    seed: Annotated[int, Ge(0)] = 0
    optimizer: Literal["adamw", "sgd"] = "adamw"
    model: Literal["paper", "small", "minilm"] = "small"
    recipe: Literal["ratio-only", "paper"] = "ratio-only"
    quick: bool = False
    data_dir: str
    param: ParamName = BASELINE
    d: Annotated[int, Ge(2), Le(1024)] = 64
    heads: Annotated[int, Ge(1), Le(16)] = 1
    d_head: Annotated[int, Ge(1), Le(1024)] = 64
    layers: Annotated[int, Ge(1), Le(12)] = 1
    epochs: Annotated[int, Ge(1), Le(1000)] = 10
    batch_size: Annotated[int, Ge(1), Le(4096)] = 32
    lr_ov: PositiveFinite = 1e-3
    lr_other: PositiveFinite | None = None
    momentum: Annotated[float, Ge(0.0), Lt(1.0)] = 0.9
    weight_decay: Annotated[float, Ge(0.0)] = 0.0
    schedule: Literal["constant", "cosine"] = "constant"
    warmup: Annotated[float, Ge(0.0), Lt(1.0)] = 0.0
    checkpoints_per_epoch: Annotated[int, Ge(1), Le(100)] = 1
    val_fraction: Annotated[float, Gt(0.0), Lt(1.0)] = 0.1
    max_train: Annotated[int, Ge(1)] | None = None
    max_val: Annotated[int, Ge(1)] | None = 1000
    max_test: Annotated[int, Ge(1)] | None = None
    max_len: Annotated[int, Ge(4), Le(4096)] = 256
    window: Annotated[int, Ge(8), Le(1024)] = 64
    question_len: Annotated[int, Ge(4), Le(256)] = 24
    answer_len: Annotated[int, Ge(1), Le(64)] = 8
    glove: bool = True
    init_std: Annotated[float, Ge(0.0)] = 0.02
    rates: dict[Literal["ov", "position", "embedding", "bias", "mlp", "other"], RateFactor] | None = None
    """Rate factors (times ``lr_ov``) of named groups (:data:`RATE_GROUPS` but ``qk``, whose factor is
    ``ratio``) that replace the recipe's (:func:`group_rates`); ``None``: the recipe alone."""
    # issue 32, the official settings as a preset (validation.real.official); each field left out of
    # to_json_dict at its default, so the keys of earlier runs are unchanged
    preset: PresetName = "sized"
    """``sized``: qkov's defaults; ``official``: the official code's (a dataset's registry row ``official``,
    :mod:`validation.real.official`); ``powered``: MiniLM on the full HateXplain, sized for power
    (:mod:`validation.real.powered`). One entry each of :data:`validation.real.official.PRESET_REGISTRY`."""
    context_chars: Annotated[int, Ge(1), Le(10000)] | None = None
    """SQuAD: the context cut to this many characters either side of the first gold answer (official: 200);
    ``None``: a ``window``-word window drawn around it."""
    d_ff: Annotated[int, Ge(1), Le(16384)] | None = None
    """SQuAD decoder MLP width (``None``: 4 d)."""
    d_mlp: Annotated[int, Ge(0), Le(16384)] = 0
    """Paper classifier: width of the MLP on the read-out (0: none; official HateXplain: 256, frozen)."""
    dropout: Annotated[float, Ge(0.0), Lt(1.0)] = 0.0
    """SQuAD decoder: dropout on the embeddings and each block's residual branches (official: 0.2)."""
    label_smoothing: Annotated[float, Ge(0.0), Lt(1.0)] = 0.0
    """SQuAD decoder: label smoothing of the answer-token loss (official: 0.1)."""
    clip_norm: PositiveFinite | None = None
    """Global gradient-norm clip (``None``: :data:`validation.real.training.CLIP_NORM`)."""
    warmup_steps: Annotated[int, Ge(1)] | None = None
    """Linear warm-up over this many steps (replaces the ``warmup`` share)."""
    frozen: tuple[RateGroup, ...] = ()
    """Named groups in no optimizer group (they stay at their initialisation); ``mlp`` means every parameter of
    an MLP module, its biases too (:func:`validation.real.training.frozen_ids`)."""
    qkv_bias: bool = False
    """Paper classifier: biases b_Q, b_K, b_V (per head) and b_O on the attention's projections, zero at the start, in
    the ``bias`` group (the official HateXplain notebook's; issue 45). Off: the model without them, as before."""
    clip: bool = True
    """Clip the gradient to global norm ``clip_norm`` (default :data:`validation.real.training.CLIP_NORM`); off: no
    clipping (the official HateXplain notebook states none)."""
    fused: bool = False
    """AdamW's fused kernel (``torch.optim.AdamW(fused=True)``; issue 34: 1.47x on small steps). Off by default:
    its float rounding differs from the default implementation's, so a fused run is not bitwise the same."""

    def __post_init__(self) -> None:
        if self.rates is not None and "qk" in self.rates:
            raise ValueError("rates: qk: the QK factor is the ratio (give it as ratio)")
        if self.fused and self.optimizer != "adamw":
            raise ValueError(f"fused: true: only with optimizer adamw (got {self.optimizer})")
        if self.qkv_bias and self.model != "paper":
            raise ValueError(f"qkv_bias: true: only with the paper model (got {self.model})")
        if not self.clip and self.clip_norm is not None:
            raise ValueError(f"clip_norm: {self.clip_norm}: does not apply with clip false")

    def __hash__(self) -> int:
        """Hash of the canonical JSON (the ``rates`` dict is not hashable itself); equal configs hash equal."""
        import json

        return hash(json.dumps(self.to_json_dict(), sort_keys=True))

    def to_json_dict(self) -> dict:
        """The spec as JSON data; ``recipe`` is left out at its default ``"ratio-only"`` and ``rates`` when
        ``None`` or empty, so the key (the run directory) of every run made before the fields existed is
        unchanged and complete runs are reused. ``rates`` is written sorted by group name."""
        d = super().to_json_dict()
        if d.get("recipe") == "ratio-only":
            d.pop("recipe")
        if not d.get("rates"):
            d.pop("rates", None)
        else:
            d["rates"] = {k: float(d["rates"][k]) for k in sorted(d["rates"])}
        for k, default in _ADDED_DEFAULTS.items():   # issue 32's preset fields, left out at their defaults
            if k in d and (d[k] == default or (isinstance(default, tuple) and not d[k])):
                d.pop(k)
        return d

    @property
    def eta_qk(self) -> float:
        """The QK learning rate ``ratio * lr_ov``."""
        return self.ratio * self.lr_ov


_ADDED_DEFAULTS = {"preset": "sized", "context_chars": None, "d_ff": None, "d_mlp": 0, "dropout": 0.0,
                   "label_smoothing": 0.0, "clip_norm": None, "warmup_steps": None, "frozen": (),
                   "fused": False, "qkv_bias": False, "clip": True}
"""Fields added after runs were stored, and their defaults (left out of the JSON, so old keys stay)."""


def group_rates(cfg: RealRunConfig) -> dict[str, float]:
    r"""The rate factor of every named group (:data:`RATE_GROUPS`), the group's rate being
    ``factor * lr_ov``: the preset of ``cfg.recipe``, then ``cfg.rates`` on top.

    ``ratio-only``: ``qk`` = ``ratio``, ``ov`` = 1, every other group ``lr_other / lr_ov`` (1 by default).
    ``paper``: as ratio-only, and the dataset's ``paper_recipe`` groups (HateXplain ``embedding``; SVA
    ``embedding`` and ``bias``) also at ``ratio``. So ``--recipe paper --ratios 30`` on HateXplain is
    ``{"qk": 30, "embedding": 30}`` and ``--ratios 30 --rates embedding=1`` is ratio-only at 30. ``position``
    is at the ``embedding`` factor unless ``cfg.rates`` sets it (the official HateXplain preset: 1)."""
    other = (cfg.lr_other or cfg.lr_ov) / cfg.lr_ov
    out = {g: other for g in RATE_GROUPS}
    out.update(qk=float(cfg.ratio), ov=1.0)
    if cfg.recipe == "paper":
        out.update({g: float(cfg.ratio) for g in _registry.get(cfg.dataset).paper_recipe})
    out.update({g: float(v) for g, v in (cfg.rates or {}).items()})
    if "position" not in (cfg.rates or {}):
        out["position"] = out["embedding"]
    return out


def parse_rates(text: str) -> dict[str, float]:
    """``"qk=30,embedding=30"`` -> ``{"qk": 30.0, "embedding": 30.0}``; ``ValueError`` (one line naming the
    field, the value and what is allowed) for an unknown group, a repeated one or a factor outside
    ``[FACTOR_MIN, FACTOR_MAX]`` (the bounds of ``--ratios``); a text over 1000 characters is refused unread."""
    allowed = (f"comma-separated GROUP=FACTOR with GROUP one of {', '.join(RATE_GROUPS)} and FACTOR a number in "
               f"[{FACTOR_MIN:g}, {FACTOR_MAX:g}]")
    out: dict[str, float] = {}
    if len(text) > 1000:  # six groups fit in far less: a huge value costs nothing to refuse
        raise ValueError(f"rates: {text[:40]!r}...: too long; allowed: {allowed}")
    for part in (p.strip() for p in text.split(",")):
        name, eq, val = part.partition("=")
        name = name.strip()
        if not eq or name not in RATE_GROUPS or name in out:
            what = "a repeated group" if name in out else "unknown group" if eq else "not GROUP=FACTOR"
            raise ValueError(f"rates: {part!r}: {what}; allowed: {allowed}")
        try:
            f = float(val)
        except ValueError:
            f = math.nan
        if not (math.isfinite(f) and FACTOR_MIN <= f <= FACTOR_MAX):
            raise ValueError(f"rates: {part!r}: bad factor; allowed: {allowed}")
        out[name] = f
    return out


# (model, optimizer) -> base rate lr_ov (and momentum for SGD)
_LR = {("small", "adamw"): dict(lr_ov=3e-3), ("small", "sgd"): dict(lr_ov=0.05, momentum=0.9),
       ("paper", "adamw"): dict(lr_ov=5e-5), ("paper", "sgd"): dict(lr_ov=5e-4, momentum=0.99),
       ("minilm", "adamw"): dict(lr_ov=5e-5), ("minilm", "sgd"): dict(lr_ov=1e-2, momentum=0.9)}
MINILM_QUICK_LR = 1e-4
"""MiniLM ``--quick`` trains 20 steps; at the usual fine-tuning rate 5e-5 the new head barely learns in
so few, so quick uses 1e-4 (full: 5e-5, the paper's HateXplain rate)."""
MODEL_QUICK_SWEEP = {"minilm": ((1.0, 30.0), (0,))}
"""``--quick`` ratios and seeds per model where they differ from the dataset's (MiniLM: 2 runs, so the
command stays under 5 minutes on a 2-core machine)."""
_SQUAD_LR = {"adamw": dict(lr_ov=1e-3), "sgd": dict(lr_ov=0.05, momentum=0.9)}
"""SQuAD decoders: AdamW 1e-3 (the official notebook's rate is not in PAPER.md; 1e-3 trains the
small decoder in a few epochs on CPU), or SGD+momentum 0.05."""


def default_optimizer(dataset: str, model: str) -> str:
    """The paper's optimizer for the paper model, AdamW for the small one."""
    return PAPER_OPTIMIZER[dataset] if model == "paper" else "adamw"


def default_ratios(dataset: str, quick: bool, model: str | None = None, preset: str = "sized") -> tuple[float, ...]:
    """The sweep's ratios: the preset's where its registry entry declares them
    (:data:`validation.real.official.PRESET_REGISTRY`), else ``model``'s quick ones where
    :data:`MODEL_QUICK_SWEEP` has them, else the dataset's."""
    from .official import preset as preset_entry

    declared = preset_entry(preset).ratios
    if declared is not None:
        return declared
    if quick and model in MODEL_QUICK_SWEEP:
        return MODEL_QUICK_SWEEP[model][0]
    return (QUICK_RATIOS if quick else RATIOS)[dataset]


def default_seeds(quick: bool, model: str | None = None, preset: str = "sized") -> tuple[int, ...]:
    """The sweep's seeds: the preset's where its registry entry declares them (``powered``: derived for power,
    :func:`validation.real.powered.powered_seeds`), else ``model``'s quick ones where :data:`MODEL_QUICK_SWEEP`
    has them, else :data:`QUICK_SEEDS` / :data:`SEEDS`."""
    from .official import preset as preset_entry

    declared = preset_entry(preset).seeds
    if declared is not None:
        return declared()
    if quick and model in MODEL_QUICK_SWEEP:
        return MODEL_QUICK_SWEEP[model][1]
    return QUICK_SEEDS if quick else SEEDS


def claim_ratio(dataset: str, preset: str = "sized", default: float | None = None) -> float:
    """The ratio of the pre-declared primary comparison (against ratio 1): the preset's where its registry entry
    declares one (``powered``: 10, the largest ratio at a usual fine-tuning rate), else the dataset's paper
    ratio (:data:`PAPER_RATIO`), else ``default`` (``ValueError`` when none applies)."""
    from .official import preset as preset_entry

    declared = preset_entry(preset).claim_ratio
    value = declared if declared is not None else PAPER_RATIO.get(dataset, default)
    if value is None:
        raise ValueError(f"dataset: {dataset}: no claim ratio (not in the registry, no default)")
    return float(value)


def default_config(dataset: str, *, ratio: float, seed: int, optimizer: str | None = None, quick: bool,
                   data_dir: str, model: str | None = None, **overrides) -> RealRunConfig:
    """The run configuration of the study for one (dataset, ratio, seed, optimizer, model).

    ``model`` defaults to the preset's, else ``"small"`` with ``quick`` and ``"paper"`` without; ``optimizer`` to
    :func:`default_optimizer`. ``preset`` (an override; a key of :data:`validation.real.official.PRESET_REGISTRY`)
    puts its entry's settings for the dataset over the dataset's defaults, before the other overrides
    (``official``: the dataset's official row; ``powered``: :mod:`validation.real.powered`); a preset with
    settings is the full-size model with the optimizer they name only (``ValueError``, one line, otherwise).
    """
    from .official import preset as preset_entry

    name = overrides.get("preset", "sized")
    fixed = preset_entry(name).settings(dataset)
    model = model or fixed.get("model") or ("small" if quick else "paper")
    optimizer = optimizer or default_optimizer(dataset, model)
    values: dict[str, Any] = dict(dataset=dataset, ratio=ratio, seed=seed, optimizer=optimizer, quick=quick, model=model,
                  data_dir=str(data_dir))
    entry = _registry.get(dataset)
    if model not in entry.models:
        raise ValueError(f"model: {model}: not offered for {dataset} (offered: {', '.join(entry.models)})")
    values.update(_SQUAD_LR.get(optimizer, {}) if entry.task == "generation" else _LR.get((model, optimizer), {}))
    if model == "minilm" and quick and optimizer == "adamw":
        values["lr_ov"] = MINILM_QUICK_LR
    values.update(entry.defaults.get((model, bool(quick)), {}))
    if fixed:
        if quick or model != fixed["model"] or optimizer != fixed["optimizer"]:
            raise ValueError(f"preset: {name}: the {name} settings are the full-size {fixed['model']} model "
                             f"with {fixed['optimizer']} (got model {model}, optimizer {optimizer}"
                             f"{', --quick' if quick else ''})")
        values.update(fixed)
    if isinstance(fixed.get("rates"), dict) and overrides.get("rates"):
        overrides = {**overrides, "rates": {**fixed["rates"], **overrides["rates"]}}   # --rates on top of the preset's
    values.update(overrides)
    if values.get("fused") and values["optimizer"] != "adamw":
        values.pop("fused")   # --fused-adamw applies to the sweep's AdamW runs (SVA's paper runs use SGD)
    return RealRunConfig(**values)
