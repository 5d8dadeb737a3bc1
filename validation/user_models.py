r"""Apply the QK/OV learning-rate ratio to your own torch models.

qkov's intervention is :math:`\eta_{QK} = \text{ratio}\cdot\eta_{OV}`: query and key
projections learn ``ratio`` times faster than value and output projections. For a model
built from

(a) attention modules with separate or fused projections in any layout listed in
    :mod:`validation.attention_layouts` (HF ``q_proj/k_proj/v_proj/o_proj``, BERT
    ``query/key/value``, DistilBERT ``q_lin/...``, T5 ``q/k/v/o``; fused GPT-2 ``c_attn``,
    GPT-NeoX ``query_key_value``, ``qkv_proj``, ``Wqkv``): QK = W_Q, W_K (and biases),
    OV = W_V, W_O (and biases); a fused tensor is split by :class:`FusedSlices`;
(b) :class:`torch.nn.MultiheadAttention` (also inside :class:`~torch.nn.TransformerEncoderLayer`,
    :class:`~torch.nn.TransformerEncoder`, decoder layers, ...): QK = the q and k slices of
    ``in_proj_weight``/``in_proj_bias`` (and ``bias_k``), OV = the v slice (and ``bias_v``)
    and ``out_proj``;

:func:`param_groups` (``qkov.param_groups``) returns optimizer parameter groups; everything else is at
``lr_other``. Before a fused tensor is split, which of its rows are q, k, v is confirmed against
the module's own forward (:func:`resolve_sites`, :mod:`validation.layout_probe`); a layout the
forward contradicts is refused in one line naming the module. :func:`describe_param_groups` prints, without changing the model, which tensor
(or which rows of a fused tensor) gets which rate.

Every entry point is re-entrant: on a model split earlier, the layout is read back from the
split (:func:`validation.attention_layouts.split_labels`) and the same groups come back. PEFT
adapters (LoRA A/B, ...) on a separate projection take that projection's circuit
(:func:`adapter_parameters`); an adapter on a fused q/k/v projection is refused. An optimizer
built before the split raises at its first ``step()`` (a global step pre-hook sees the retired
fused Parameter); rates that are not finite numbers raise ``InputError`` before the model is
touched; DDP / FSDP(``use_orig_params=True``) wrappers are read, FSDP that flattens is refused
(:mod:`validation.distributed`).

Why the split: ``nn.MultiheadAttention`` stores :math:`W_Q, W_K, W_V` stacked in one
``in_proj_weight`` Parameter :math:`(3E, E)`, and an optimizer's learning rate is per
Parameter. Scaling the gradient of the q/k rows would give the right rates under SGD
but does nothing under Adam/AdamW, whose update :math:`m/\sqrt{v}` is invariant to a
constant gradient scale. :func:`split_mha_in_proj` therefore re-parametrizes
``in_proj_weight`` with :mod:`torch.nn.utils.parametrize` as the concatenation of three
Parameters ``original0`` (q), ``original1`` (k), ``original2`` (v): the module computes
exactly the same function, and each slice can get its own learning rate with any optimizer.

State dict: the split keeps the model's own checkpoint format. Each split module carries a
state-dict hook that folds the parts back into the fused tensor on save (``in_proj_weight``,
``c_attn.weight``, ...) and a load pre-hook that splits a fused tensor on load, so
``state_dict()``, ``save_pretrained``, ``Trainer`` checkpoints and ``from_pretrained`` of a fresh
model all see the standard keys; a checkpoint written with the parts
(``parametrizations.<name>.original0/1/2``) still loads. :func:`merge_all` folds the parts back
into plain Parameters (needed only for code that reads ``module.<name>`` as a Parameter); it is
safe on a ``copy.deepcopy`` of a split model and leaves the original working.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

import torch
from torch import nn
from torch.nn.utils import parametrize

from theory.errors import InputError
from validation.attention_layouts import (
    AttentionSite,
    FusedTensor,
    WholeTensor,
    UnknownAttentionLayout,
    find_attention_sites,
    leave_at_other,
    verify_sites,
)
from validation.layout_probe import default_inputs
from validation.param_groups import circuit_param_groups
from validation.step_checks import record_groups, retire as _retire

def check_model(model: Any) -> None:
    """Refuse a ``model`` that is not a ``torch.nn.Module`` (one line naming its type)."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model: a {type(model).__name__}: must be a torch.nn.Module")


def check_rates(lr: Any, ratio: Any, lr_other: Any = None) -> None:
    """Refuse, before anything is touched, a rate that is not a finite number (``lr``, ``ratio`` > 0; ``lr_other`` >= 0)."""
    for field_, v, low in (("lr", lr, "> 0"), ("ratio", ratio, "> 0"), ("lr_other", lr_other, ">= 0")):
        if field_ == "lr_other" and v is None:
            continue
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
            and (v > 0 if low == "> 0" else v >= 0)
        if not ok:
            raise InputError(f"{field_}: {v!r}: must be a finite number {low}")


class ConcatSlices(nn.Module):
    r"""Parametrization :math:`(W_q, W_k, W_v) \mapsto [W_q; W_k; W_v]` (concatenation along dim 0).

    ``right_inverse`` splits a stacked tensor ``(3E, ...)`` into its three equal slices,
    so that registering it turns one Parameter into three (``original0/1/2``).
    """

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.cat([q, k, v], dim=0)

    def right_inverse(self, stacked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if stacked.shape[0] % 3:
            raise ValueError(f"cannot split a tensor of shape {tuple(stacked.shape)} into q, k, v slices")
        q, k, v = stacked.chunk(3, dim=0)
        return q.clone(), k.clone(), v.clone()


_FUSED_ATTRS = "_qkov_fused_attrs"


def _n_parts(pl: Any) -> int:
    return int(getattr(pl, "ntensors", 3))


def _plist(module: nn.Module, attr: str) -> parametrize.ParametrizationList:
    """The ``ParametrizationList`` torch registered on ``module.<attr>`` (``module.parametrizations[attr]``).

    Looked up with ``get_submodule`` and checked, because ``nn.Module.__getattr__`` is typed ``Tensor | Module``.
    """
    pl = module.get_submodule(f"parametrizations.{attr}")
    if not isinstance(pl, parametrize.ParametrizationList):
        raise TypeError(f"{type(module).__name__}.{attr}: not a parametrized tensor ({type(pl).__name__})")
    return pl


def _slicer(pl: parametrize.ParametrizationList) -> nn.Module:
    """The first (qkov's: :class:`ConcatSlices` or :class:`FusedSlices`) parametrization in ``pl``."""
    return pl[0]


def _originals(pl: parametrize.ParametrizationList) -> list[nn.Parameter]:
    """The stored parts ``original0, original1, ...`` of a split tensor."""
    return [getattr(pl, f"original{i}") for i in range(_n_parts(pl))]


def _fuse_on_save(module: nn.Module, state_dict: dict, prefix: str, _local_metadata: Any) -> None:
    """State-dict post-hook: ``parametrizations.<attr>.original0..`` -> the fused ``<attr>`` (standard key).

    Parts that are sharded DTensors (FSDP2) stay as they are: fusing them would need every rank's shard
    (a collective inside ``state_dict()``); :func:`validation.distributed.plain_state_dict` gathers and fuses.
    """
    from validation.distributed import is_dtensor

    for attr in module.__dict__.get(_FUSED_ATTRS, ()):
        if not parametrize.is_parametrized(module, attr):
            continue
        pl = _plist(module, attr)
        keys = [f"{prefix}parametrizations.{attr}.original{i}" for i in range(_n_parts(pl))]
        if not all(k in state_dict for k in keys) or any(is_dtensor(state_dict[k]) for k in keys):
            continue
        parts = [state_dict.pop(k) for k in keys]
        with torch.no_grad():
            state_dict[prefix + attr] = pl[0](*[p.detach() for p in parts])


def fold_split_parts(model: nn.Module, state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state_dict`` (of ``model``, whole tensors) with each split tensor's parts folded into its standard key.

    What :func:`_fuse_on_save` does inside ``state_dict()``, for a state dict gathered afterwards (FSDP2).
    """
    out = dict(state_dict)
    for name, m in model.named_modules():
        prefix = f"{name}." if name else ""
        _fuse_on_save(m, out, prefix, None)
    return out


def _split_on_load(module: nn.Module, state_dict: dict, prefix: str, *_args: Any) -> None:
    """Load pre-hook: a fused ``<attr>`` in the state dict -> the parts the split module stores."""
    for attr in module.__dict__.get(_FUSED_ATTRS, ()):
        key = prefix + attr
        if key not in state_dict or not parametrize.is_parametrized(module, attr):
            continue
        pl = _plist(module, attr)
        slicer = _slicer(pl)
        assert isinstance(slicer, (ConcatSlices, FusedSlices))  # _FUSED_ATTRS lists the tensors qkov split
        fused = state_dict.pop(key)
        with torch.no_grad():
            parts = slicer.right_inverse(fused)
        for i, part in enumerate(parts):
            state_dict[f"{prefix}parametrizations.{attr}.original{i}"] = part


def _keep_standard_format(module: nn.Module, attr: str) -> None:
    """Register :func:`_fuse_on_save` / :func:`_split_on_load` on ``module`` for ``attr`` (once)."""
    attrs = module.__dict__.get(_FUSED_ATTRS)
    if attrs is None:
        attrs = module.__dict__[_FUSED_ATTRS] = []
        module.register_state_dict_post_hook(_fuse_on_save)
        module.register_load_state_dict_pre_hook(_split_on_load)
    if attr not in attrs:
        attrs.append(attr)


def _own_class(module: nn.Module) -> None:
    """Give a parametrized module a class of its own before removing a parametrization.

    torch injects one ``Parametrized<Cls>`` class per module, and ``copy.deepcopy`` shares it
    between the copy and the original; ``remove_parametrizations`` deletes the property from
    that class, which would break the original (``... has no attribute 'bias'``).
    """
    cls = type(module)
    body = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
    module.__class__ = type(cls.__name__, cls.__bases__, body)


def _remove_split(module: nn.Module, attr: str) -> None:
    for p in _plist(module, attr).parameters():
        _retire(p)
    _own_class(module)
    parametrize.remove_parametrizations(module, attr, leave_parametrized=True)


def is_split(mha: nn.MultiheadAttention) -> bool:
    """Whether :func:`split_mha_in_proj` has been applied to ``mha``."""
    return any(parametrize.is_parametrized(mha, n) and isinstance(_slicer(_plist(mha, n)), ConcatSlices)
               for n in ("in_proj_weight", "in_proj_bias") if getattr(mha, n, None) is not None)


def split_mha_in_proj(mha: nn.MultiheadAttention) -> nn.MultiheadAttention:
    """Give the q, k and v slices of ``mha``'s packed input projection their own Parameters.

    Registers :class:`ConcatSlices` on ``in_proj_weight`` (when q, k, v share one weight) and
    on ``in_proj_bias`` (when present). The forward function is unchanged. Idempotent;
    returns ``mha``. Build the optimizer *after* splitting: the old packed Parameter is
    no longer part of the module.
    """
    if not isinstance(mha, nn.MultiheadAttention):
        raise TypeError(f"expected nn.MultiheadAttention, got {type(mha).__name__}")
    for name in ("in_proj_weight", "in_proj_bias"):
        if getattr(mha, name, None) is None:
            continue
        if parametrize.is_parametrized(mha, name):
            if isinstance(_slicer(_plist(mha, name)), ConcatSlices):
                continue
            raise ValueError(f"{name} already carries another parametrization; cannot split it")
        _retire(getattr(mha, name))
        parametrize.register_parametrization(mha, name, ConcatSlices(), unsafe=True)
        _keep_standard_format(mha, name)
    return mha


def merge_mha_in_proj(mha: nn.MultiheadAttention) -> nn.MultiheadAttention:
    """Undo :func:`split_mha_in_proj`: plain ``in_proj_weight``/``in_proj_bias`` with the current values."""
    for name in ("in_proj_weight", "in_proj_bias"):
        if parametrize.is_parametrized(mha, name) and isinstance(_slicer(_plist(mha, name)), ConcatSlices):
            _remove_split(mha, name)
    return mha


def _slices(mha: nn.MultiheadAttention, name: str) -> list[nn.Parameter]:
    if getattr(mha, name, None) is None:
        return []
    return _originals(_plist(mha, name))


def _mha_circuits(mha: nn.MultiheadAttention) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    split_mha_in_proj(mha)
    qk: list[nn.Parameter] = []
    ov: list[nn.Parameter] = []
    if mha._qkv_same_embed_dim:
        w = _slices(mha, "in_proj_weight")
        qk += w[:2]
        ov += w[2:]
    else:  # kdim/vdim differ from embed_dim: torch already keeps separate weights
        qk += [mha.q_proj_weight, mha.k_proj_weight]
        ov += [mha.v_proj_weight]
    b = _slices(mha, "in_proj_bias")
    qk += b[:2]
    ov += b[2:]
    if isinstance(mha.bias_k, nn.Parameter):  # None, or a Parameter (typed Tensor | None by torch)
        qk.append(mha.bias_k)
    if isinstance(mha.bias_v, nn.Parameter):
        ov.append(mha.bias_v)
    ov += list(mha.out_proj.parameters())
    return qk, ov


class FusedSlices(nn.Module):
    r"""Parametrization of a fused q/k/v tensor by its q, k and v parts (any row order).

    ``labels[i]`` is the role (``"q"``, ``"k"``, ``"v"``) of index ``i`` along ``dim`` of
    the fused tensor :math:`W`. The parts are ``W`` restricted to each role's indices, in
    their order along ``dim``; :math:`W = \mathrm{cat}(\text{parts}).\mathrm{index\_select}(dim, \pi)`
    with :math:`\pi` the position of fused index ``i`` in the concatenation. This covers
    contiguous blocks (GPT-2 ``c_attn`` along dim 1, ``qkv_proj``, ``Wqkv``) and GPT-NeoX's
    per-head interleaving alike. Forward and ``right_inverse`` only copy entries, so the
    module computes bit for bit the same function.
    """

    order: torch.Tensor
    """Buffer: the fused indices of each role in turn (q's, then k's, then v's)."""
    position: torch.Tensor
    """Buffer: the position of fused index ``i`` in the concatenation (the inverse permutation of ``order``)."""

    def __init__(self, dim: int, labels: tuple[str, ...]):
        super().__init__()
        self.dim = dim
        self.roles = tuple(r for r in ("q", "k", "v") if r in labels)
        order = [i for r in self.roles for i, lab in enumerate(labels) if lab == r]
        self.sizes = [sum(1 for lab in labels if lab == r) for r in self.roles]
        self.register_buffer("order", torch.tensor(order, dtype=torch.long), persistent=False)
        self.register_buffer("position", torch.argsort(self.order), persistent=False)

    def forward(self, *parts: torch.Tensor) -> torch.Tensor:
        return torch.cat(parts, dim=self.dim).index_select(self.dim, self.position)

    def right_inverse(self, fused: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if fused.shape[self.dim] != len(self.order):
            raise ValueError(f"fused tensor {tuple(fused.shape)} has not {len(self.order)} entries along dim {self.dim}")
        cat = fused.index_select(self.dim, self.order.to(fused.device))
        return tuple(p.clone() for p in cat.split(self.sizes, dim=self.dim))


def split_fused(ft: FusedTensor) -> dict[str, nn.Parameter]:
    """Register :class:`FusedSlices` on ``ft`` (idempotent); return ``{role: Parameter}``."""
    m, attr = ft.module, ft.attr
    if parametrize.is_parametrized(m, attr):
        if not isinstance(_slicer(_plist(m, attr)), FusedSlices):
            raise ValueError(f"{type(m).__name__}.{attr} already carries another parametrization; cannot split it")
    else:
        _retire(getattr(m, attr))
        parametrize.register_parametrization(m, attr, FusedSlices(ft.dim, ft.labels), unsafe=True)
        _keep_standard_format(m, attr)
    pl = _plist(m, attr)
    slicer = _slicer(pl)
    assert isinstance(slicer, FusedSlices)  # checked above, or registered just now
    return {r: getattr(pl, f"original{i}") for i, r in enumerate(slicer.roles)}


def merge_all(model: nn.Module) -> nn.Module:
    """Undo every split qkov made in ``model`` (MHA and fused projections): plain Parameters again.

    Not needed for saving (the split model's ``state_dict`` is already the standard one). In place;
    an optimizer built on the split Parameters no longer drives the model afterwards. For an
    export copy use :func:`merged_copy`, which leaves ``model`` untouched.
    """
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention):
            merge_mha_in_proj(m)
        for attr in list(getattr(m, "parametrizations", {}) or {}):
            if isinstance(_slicer(_plist(m, attr)), FusedSlices):
                _remove_split(m, attr)
    return model


def merged_copy(model: nn.Module) -> nn.Module:
    """A deep copy of ``model`` with every split merged back; ``model`` (and its optimizer) unchanged."""
    import copy

    return merge_all(copy.deepcopy(model))


def adapter_parameters(proj: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """``(name, Parameter)`` of the adapters on a wrapped projection (PEFT LoRA A/B, DoRA, IA3 ...).

    By structure: a module with a ``base_layer`` child (how PEFT wraps a ``Linear``/``Conv1D``)
    owns its base's parameters plus the adapters'; the adapters are the rest. ``[]`` otherwise.
    """
    base = getattr(proj, "base_layer", None)
    if not isinstance(base, nn.Module) or base is proj:
        return []
    base_ids = {id(p) for p in base.parameters()}
    return [(n, p) for n, p in proj.named_parameters() if id(p) not in base_ids]


def _refuse_fused_adapters(sites: list[AttentionSite], strict: bool,
                           refusals: list[str] | None = None) -> list[AttentionSite]:
    """A PEFT adapter on a fused q/k/v projection: refused in one line (``strict``) or left at lr_other."""
    out = []
    for s in sites:
        wrapped = next((ft for ft in s.fused if isinstance(getattr(ft.module, "base_layer", None), nn.Module)), None)
        if wrapped is None:
            out.append(s)
            continue
        child = next((n for n, c in s.module.named_modules() if c is wrapped.module), "?")
        msg = (f"{s.name + '.' if s.name else ''}{child} ({type(wrapped.module).__name__}): an adapter on a fused "
               "q/k/v projection mixes q, k and v (one shared A), so it has no circuit rate; put the adapters on "
               "separate q/k/v projections (or only on the output projection)")
        if strict:
            raise UnknownAttentionLayout(msg + ", or pass strict=False to leave it at lr_other")
        leave_at_other(msg, refusals, stacklevel=4)
    return out


def _needs_probe(site: AttentionSite) -> bool:
    return any(not parametrize.is_parametrized(ft.module, ft.attr) for ft in site.fused)


def resolve_sites(model: nn.Module, *, strict: bool = True, example_inputs: Any = None,
                  verify: bool | None = None, refusals: list[str] | None = None) -> list[AttentionSite]:
    """The attention sites of ``model`` with their layouts confirmed against its forward.

    ``example_inputs`` (a mapping of keyword arguments, a tuple of positional ones, or one
    tensor) default to a Hugging Face model's ``dummy_inputs``. ``verify``: ``None`` (default)
    checks every site when inputs are available and refuses a not-yet-split fused projection
    (not declared by :func:`~validation.attention_layouts.register_attention_layout`) when
    they are not; ``True`` requires the check; ``False`` takes the preferred layout unchecked.
    ``refusals``: with ``strict=False``, a list that collects one line per module left at ``lr_other``
    (instead of a warning each).
    """
    sites = _refuse_fused_adapters(find_attention_sites(model, strict=strict, refusals=refusals), strict, refusals)
    if verify is False or not sites:
        return sites
    inputs = example_inputs if example_inputs is not None else default_inputs(model)
    pending = [s for s in sites if _needs_probe(s) and not all(ft.declared for ft in s.fused)]
    if inputs is None:
        if verify or pending:
            s = pending[0] if pending else sites[0]
            ft = s.fused[0] if s.fused else None
            child = next((n for n, c in s.module.named_modules() if ft is not None and c is ft.module), "")
            what = (f"{child + '.' if child else ''}{ft.attr} is a fused q/k/v projection (preferred layout: "
                    f"{ft.candidates[0][0] if ft.candidates else 'given'})" if ft is not None
                    else "its layout is to be verified")
            raise UnknownAttentionLayout(
                f"{s.name or '<root>'} ({type(s.module).__name__}): {what}; qkov confirms which rows are q, k, v by "
                "running the model: pass example_inputs=... (or verify=False to take it unchecked)")
        return sites
    try:
        sites = verify_sites(model, sites, inputs, strict=strict, refusals=refusals)
        _check_all_found(model, sites, inputs, strict=strict, refusals=refusals)
        return sites
    except UnknownAttentionLayout:
        raise
    except Exception as e:  # the model did not run on these inputs
        if verify or pending:
            raise UnknownAttentionLayout(
                f"{type(model).__name__}: could not run the model on its example inputs to check the attention layout "
                f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); pass example_inputs=...") from e
        return sites


def _check_all_found(model: nn.Module, sites: list[AttentionSite], inputs: Any, *, strict: bool,
                     refusals: list[str] | None = None) -> None:
    """Refuse (or, ``strict=False``, warn about) a module that computes attention but is in no site.

    Found by structure (:func:`validation.layout_probe.attention_modules`: the innermost module with
    parameters running when a softmax over scores or ``scaled_dot_product_attention`` ran), so a
    hybrid model's second mixer is not skipped for its class name.
    """
    from validation.layout_probe import attention_modules

    known = [s.name for s in sites] + [n for n, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)]

    def covered(n: str) -> bool:
        return any(n == k or n.startswith(k + ".") or k.startswith(n + ".") or n == "" or k == "" for k in known)

    missed = [n for n in attention_modules(model, inputs) if not covered(n)]
    if not missed:
        return
    from validation.attention_layouts import _describe

    n = missed[0]
    more = f" (+{len(missed) - 1} more: {', '.join(missed[1:4])})" if len(missed) > 1 else ""
    msg = (f"{_describe(n, model.get_submodule(n))} computes attention scores (softmax or "
           f"scaled_dot_product_attention) but is in no known layout{more}; declare it with "
           "register_attention_layout")
    if strict:
        raise UnknownAttentionLayout(msg + ", or pass strict=False to leave it at lr_other")
    if refusals is not None:
        refusals += [f"{_describe(m, model.get_submodule(m))} computes attention scores (softmax or "
                     "scaled_dot_product_attention) but is in no known layout" for m in missed]
        return
    leave_at_other(msg, None, stacklevel=4)


@dataclass(frozen=True)
class PlanRow:
    """One line of the plan: tensor ``name`` (``rows`` of it) goes to ``circuit``."""

    name: str
    rows: str
    shape: tuple[int, ...]
    circuit: str
    site: str
    layout: str
    role: str = ""
    """``Q``, ``K``, ``V``, ``O``; ``Q slice`` ... of a fused tensor; ``adapter of Q`` ...; ``scores only`` /
    ``values only`` (``whole_circuit``); ``embedding``; ``other``."""


def _param_names(model: nn.Module) -> dict[int, str]:
    """``id(Parameter) -> name``: the first name, as ``named_parameters()`` gives it (a Parameter shared by
    several modules, Zamba2's layers or a tied head, is one entry)."""
    names: dict[int, str] = {}
    for n, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), n)
    return names


def _fmt_segments(ft: FusedTensor, role: str) -> str:
    segs = [(a, b) for r, a, b in ft.segments() if r == role]
    head = ", ".join(f"{a}:{b}" for a, b in segs[:3]) + (f", ... ({len(segs)} blocks)" if len(segs) > 3 else "")
    return f"{role} {'rows' if ft.dim == 0 else 'columns'} [{head}]"


def _input_embeddings(model: nn.Module) -> list[nn.Parameter]:
    get = getattr(model, "get_input_embeddings", None)
    if callable(get):
        try:
            emb = get()
        except (NotImplementedError, AttributeError):
            emb = None
        if isinstance(emb, nn.Module):
            return list(emb.parameters())
    return [p for m in model.modules() if isinstance(m, nn.Embedding) for p in m.parameters()]


def _mha_rows(model: nn.Module, name: str, mha: nn.MultiheadAttention,
              qk_bias: bool) -> list[tuple[str, str, str, str]]:
    """``(parameter name, rows, circuit, role)`` for an MHA, before or after its split."""
    pre = f"{name}." if name else ""
    e = mha.embed_dim
    rows = []
    split = is_split(mha)
    for attr in ("in_proj_weight", "in_proj_bias"):
        if getattr(mha, attr, None) is None:
            continue
        bias = attr.endswith("bias")
        for i, (role, circ) in enumerate((("q", "qk"), ("k", "qk"), ("v", "ov"))):
            c = "other" if bias and circ == "qk" and not qk_bias else circ
            if split:
                rows.append((f"{pre}parametrizations.{attr}.original{i}", f"{role} (split)", c,
                             f"{role.upper()} slice"))
            else:
                rows.append((f"{pre}{attr}", f"{role} rows [{i * e}:{(i + 1) * e}]", c, f"{role.upper()} slice"))
    if not mha._qkv_same_embed_dim:
        rows += [(f"{pre}q_proj_weight", "all", "qk", "Q"), (f"{pre}k_proj_weight", "all", "qk", "K"),
                 (f"{pre}v_proj_weight", "all", "ov", "V")]
    if mha.bias_k is not None:
        rows.append((f"{pre}bias_k", "all", "qk" if qk_bias else "other", "K"))
    if mha.bias_v is not None:
        rows.append((f"{pre}bias_v", "all", "ov", "V"))
    rows += [(f"{pre}out_proj.{n}", "all", "ov", "O") for n, _ in mha.out_proj.named_parameters()]
    return rows


@dataclass(frozen=True)
class GroupOptions:
    """What decides a Parameter's circuit, beyond the model: the options of :func:`param_groups`."""

    qk_bias: bool = True
    embeddings: bool = False
    whole_circuit: bool = False
    strict: bool = True
    example_inputs: Any = None
    verify: bool | None = None


def _classify(model: nn.Module, opts: GroupOptions, refusals: list[str] | None = None
              ) -> tuple[list[AttentionSite], dict[int, tuple[str, str, str]]]:
    """The model's attention sites (layouts confirmed) and, with ``whole_circuit``, its score-/value-only
    Parameters (:mod:`validation.score_params`). On a DDP/FSDP/FSDP2-wrapped model nothing is probed: the
    split and the whole-circuit result of the call on the plain model are read back."""
    from validation.score_params import whole_circuit_params

    wrapped = _check_wrapper(model)
    if wrapped:
        _unsplit_fused_in_wrapper(model, opts.strict)
    verify = False if wrapped else opts.verify
    sites = resolve_sites(model, strict=opts.strict, example_inputs=opts.example_inputs, verify=verify,
                          refusals=refusals)
    extra: dict[int, tuple[str, str, str]] = {}
    if opts.whole_circuit:
        inputs = None if wrapped else (opts.example_inputs if opts.example_inputs is not None
                                       else default_inputs(model))
        extra = whole_circuit_params(model, sites, inputs, adapters=adapter_parameters, probe=not wrapped)
    return sites, extra


def plan_qk_ov(
        model: nn.Module, *, qk_bias: bool = True, embeddings: bool = False, whole_circuit: bool = False,
        strict: bool = True, example_inputs: Any = None, verify: bool | None = None,
        sites: list[AttentionSite] | None = None, extra: dict[int, tuple[str, str, str]] | None = None,
        refusals: list[str] | None = None) -> list[PlanRow]:
    """Which tensor (or which rows of a fused tensor) goes to which circuit; changes nothing.

    Rows for every parameter of ``model``: recognised W_Q/W_K (and, with ``qk_bias``, their
    biases) -> ``"qk"``; W_V, W_O and their biases -> ``"ov"``; with ``embeddings`` the input
    embedding -> ``"qk"`` (as the paper's HateXplain/SVA code does); with ``whole_circuit`` the
    module's other Parameters that act only on the scores -> ``"qk"`` and only on the values -> ``"ov"``
    (:mod:`validation.score_params`); everything else ``"other"``. A Parameter shared by several
    modules is one row. Raises :class:`~validation.attention_layouts.UnknownAttentionLayout` when no
    attention is found, or (``strict``) when an attention-like module is in no known layout, or a layout is
    contradicted by the module's forward (see :func:`resolve_sites` for ``example_inputs`` and
    ``verify``); with ``strict=False`` such modules, or all of a model without recognised
    attention, stay ``"other"`` (listed in ``refusals`` when a list is given).
    """
    names = _param_names(model)
    rows: list[PlanRow] = []
    done: set[str] = set()

    def take(new: list[PlanRow]) -> None:  # a tensor's rows once (a Parameter shared by two sites is one entry)
        fresh = {r.name for r in new if r.name not in done}
        rows.extend(r for r in new if r.name in fresh)
        done.update(fresh)

    mhas = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)]
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    for n, m in mhas:
        take([PlanRow(pname, r, shapes.get(pname, ()), c, n, "nn.MultiheadAttention", role)
              for pname, r, c, role in _mha_rows(model, n, m, qk_bias)])
    if sites is None:
        opts = GroupOptions(qk_bias, embeddings, whole_circuit, strict, example_inputs, verify)
        sites, extra = _classify(model, opts, refusals)
    _check_found(model, sites, bool(mhas), strict, refusals)
    for s in sites:
        for ft in s.fused:
            take(_fused_rows(s, ft, names, qk_bias))
        for wt in s.whole:
            for row in _whole_rows(s, wt, names, qk_bias):
                take([row])
    by_id = {id(p): p for p in model.parameters()}
    for pid, (c, site, why) in (extra or {}).items():
        if pid in by_id:
            take([PlanRow(names[pid], f"all ({why})", tuple(by_id[pid].shape), c, site, "whole circuit",
                          "scores only" if c == "qk" else "values only")])
    if embeddings:
        take(_embedding_rows(model, names))
    take([PlanRow(n, "all", tuple(p.shape), "other", "", "", "other") for n, p in model.named_parameters()])
    return rows


def _check_found(model: nn.Module, sites: list[AttentionSite], mha: bool, strict: bool,
                 refusals: list[str] | None) -> None:
    """No attention at all: refused (``strict``), else a warning (or nothing, when refusals are collected)."""
    if sites or mha:
        return
    if not strict:
        if refusals is None:
            warnings.warn(f"qkov: {type(model).__name__}: no recognised attention module; every parameter stays at "
                          "lr_other (strict=False)", stacklevel=4)
        return
    found = sorted({type(m).__name__ for m in model.modules()})
    raise UnknownAttentionLayout(
        f"{type(model).__name__}: no attention module found (module types present: {', '.join(found[:20])}"
        f"{', ...' if len(found) > 20 else ''}); known layouts: q_proj/k_proj/v_proj, query/key/value, "
        "q_lin/k_lin/v_lin, q/k/v/o, c_attn, query_key_value (GPT-NeoX), qkv_proj, Wqkv, nn.MultiheadAttention")


def _fused_circuit(attr: str, role: str, qk_bias: bool) -> str:
    return "other" if attr == "bias" and role in "qk" and not qk_bias else ("qk" if role in "qk" else "ov")


def _fused_rows(s: AttentionSite, ft: FusedTensor, names: dict[int, str], qk_bias: bool) -> list[PlanRow]:
    """The rows of a fused q/k/v tensor: one per split part, or one per role of a tensor not split yet."""
    fm = ft.module
    if parametrize.is_parametrized(fm, ft.attr):
        pl = _plist(fm, ft.attr)
        slicer = _slicer(pl)
        assert isinstance(slicer, FusedSlices)  # qkov splits fused tensors with FusedSlices only
        base = names[id(pl.original0)].rsplit(".", 1)[0]
        return [PlanRow(f"{base}.original{i}", f"{r} (split)", tuple(getattr(pl, f"original{i}").shape),
                        _fused_circuit(ft.attr, r, qk_bias), s.name, s.layout, f"{r.upper()} slice")
                for i, r in enumerate(slicer.roles)]
    p = getattr(fm, ft.attr)
    return [PlanRow(names[id(p)], _fmt_segments(ft, r), tuple(p.shape), _fused_circuit(ft.attr, r, qk_bias), s.name,
                    s.layout, f"{r.upper()} slice") for r in dict.fromkeys(ft.labels)]


def _whole_rows(s: AttentionSite, wt: WholeTensor, names: dict[int, str], qk_bias: bool) -> list[PlanRow]:
    """The row of a whole W_Q/W_K/W_V/W_O tensor and those of its adapters."""
    p = getattr(wt.module, wt.attr)
    c = "other" if wt.attr == "bias" and wt.circuit == "qk" and not qk_bias else wt.circuit
    out = []
    if names.get(id(p)) is not None:
        out.append(PlanRow(names[id(p)], f"all ({wt.role})" + (" frozen" if not p.requires_grad else ""),
                           tuple(p.shape), c, s.name, s.layout, wt.role.upper()))
    if wt.attr == "weight":
        out += [PlanRow(names[id(ap)], f"adapter {an} of W_{wt.role.upper()}", tuple(ap.shape), wt.circuit, s.name,
                        s.layout, f"adapter of {wt.role.upper()}")
                for an, ap in adapter_parameters(wt.module) if names.get(id(ap)) is not None]
    return out


def _embedding_rows(model: nn.Module, names: dict[int, str]) -> list[PlanRow]:
    """The input embedding in QK (``embeddings=True``), naming what is tied to it."""
    every: dict[int, list[str]] = {}
    for n, p in model.named_parameters(remove_duplicate=False):
        every.setdefault(id(p), []).append(n)
    out = []
    for p in _input_embeddings(model):
        tied = [n for n in every.get(id(p), []) if n != names[id(p)]]
        what = "all (input embedding" + (f"; tied to {', '.join(tied)}, which moves at the QK rate too)"
                                          if tied else ")")
        out.append(PlanRow(names[id(p)], what, tuple(p.shape), "qk", "", "embedding", "embedding"))
    return out


def circuit_rates(lr: float, ratio: float, lr_other: float | None = None) -> dict[str, float]:
    """``{"ov": lr, "qk": ratio * lr, "other": lr_other (default lr)}``: the rate of each circuit."""
    return {"ov": lr, "qk": ratio * lr, "other": lr if lr_other is None else lr_other}


def describe_param_groups(model: nn.Module, lr: float, ratio: float, lr_other: float | None = None, *,
                          qk_bias: bool = True, embeddings: bool = False, whole_circuit: bool = False,
                          strict: bool = True, example_inputs: Any = None, verify: bool | None = None) -> str:
    """Dry run of :func:`param_groups`: one line per tensor (or fused rows) with its rate.

    Changes nothing in ``model`` (a fused projection is not split; with ``whole_circuit`` the probe's result is
    remembered on each attention module). Columns: learning rate, circuit, parameter name, rows, shape,
    attention site and layout. ``qkov inspect`` prints the same plan from the command line.
    """
    check_model(model)
    check_rates(lr, ratio, lr_other)
    lrs = circuit_rates(lr, ratio, lr_other)
    plan = plan_qk_ov(model, qk_bias=qk_bias, embeddings=embeddings, whole_circuit=whole_circuit, strict=strict,
                      example_inputs=example_inputs, verify=verify)
    w = max(len(r.name) for r in plan)
    lines = [f"{'lr':>10}  {'circuit':7}  {'parameter':{w}}  rows / shape / site"]
    for r in plan:
        where = f"  [{r.site or '<root>'}: {r.layout}]" if r.layout else ""
        lines.append(f"{lrs[r.circuit]:10.3g}  {r.circuit:7}  {r.name:{w}}  {r.rows} {r.shape}{where}")
    counts = {c: sum(1 for r in plan if r.circuit == c) for c in ("qk", "ov", "other")}
    lines.append(f"{counts['qk']} qk, {counts['ov']} ov, {counts['other']} other tensor entries")
    return "\n".join(lines)


def qk_ov_parameters(model: nn.Module, *, qk_bias: bool = True, embeddings: bool = False,
                     whole_circuit: bool = False, strict: bool = True, example_inputs: Any = None,
                     verify: bool | None = None) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """The QK and OV Parameters of every recognised attention (splitting fused tensors in place).

    Fused q/k/v tensors (``nn.MultiheadAttention.in_proj_*``, ``c_attn``, ``query_key_value``,
    ``qkv_proj``, ``Wqkv``) are re-parametrized (:func:`split_mha_in_proj`, :class:`FusedSlices`)
    so that their q, k and v parts are separate Parameters. Build the optimizer afterwards.
    """
    opts = GroupOptions(qk_bias, embeddings, whole_circuit, strict, example_inputs, verify)
    sites, extra = _classify(model, opts)
    qk: list[nn.Parameter] = []
    ov: list[nn.Parameter] = []
    mhas = [m for m in model.modules() if isinstance(m, nn.MultiheadAttention)]
    plan_qk_ov(model, qk_bias=qk_bias, embeddings=embeddings, strict=strict, sites=sites, extra=extra)  # raises
    for m in mhas:
        a, b = _mha_circuits(m)
        if not qk_bias:
            a = [p for p in a if p.dim() == 2]  # W_Q, W_K only (biases and bias_k -> other)
        qk += a
        ov += b
    for s in sites:
        for wt in s.whole:
            if wt.circuit == "qk" and wt.attr == "bias" and not qk_bias:
                continue
            (qk if wt.circuit == "qk" else ov).append(getattr(wt.module, wt.attr))
            if wt.attr == "weight":  # LoRA A/B (and other adapters) take their projection's circuit
                (qk if wt.circuit == "qk" else ov).extend(p for _, p in adapter_parameters(wt.module))
        for ft in s.fused:
            for r, p in split_fused(ft).items():
                if r in "qk" and ft.attr == "bias" and not qk_bias:
                    continue
                (qk if r in "qk" else ov).append(p)
    by_id = {id(p): p for p in model.parameters()}
    for pid, (c, _, _) in extra.items():
        if pid in by_id:
            (qk if c == "qk" else ov).append(by_id[pid])
    if embeddings:
        qk += _input_embeddings(model)
    return _unique(qk), _unique(ov)


def param_groups(model: nn.Module, lr: float, ratio: float, lr_other: float | None = None, *,
                 qk_bias: bool = True, embeddings: bool = False, whole_circuit: bool = False,
                 strict: bool = True, example_inputs: Any = None, verify: bool | None = None,
                 **group_options: Any) -> list[dict[str, Any]]:
    r"""Optimizer parameter groups with :math:`\eta_{QK} = \text{ratio}\cdot\eta_{OV}` for any known layout.

    Returns up to three groups, the base rate first: ``{"name": "ov", "circuit": "ov", "lr": lr}`` (W_V, W_O and
    their biases), ``{"name": "qk", ..., "lr": ratio * lr}`` (W_Q, W_K; their biases unless ``qk_bias=False``;
    the input embedding if ``embeddings=True``; with ``whole_circuit=True`` also the attention modules' other
    Parameters that act only on the scores: q/k norms, sinks, positional q/k projections, q/k adapters) and
    ``{"name": "other", ..., "lr": lr_other}`` (default ``lr``). So ``scheduler.get_last_lr()[0]`` (what
    ``transformers.Trainer`` logs as ``learning_rate``) is the OV rate, and Lightning's ``LearningRateMonitor``
    names each group. Extra keyword arguments (e.g. ``weight_decay``) go into every group.

    Fused projections are split in place by a re-parametrization, so the rates hold for every optimizer (AdamW
    included: its update is elementwise, hence identical to the same model with separate q, k, v Parameters).
    Before a fused projection is split, its layout is confirmed against the module's forward on
    ``example_inputs`` (default: a Hugging Face model's ``dummy_inputs``; see :func:`resolve_sites`). On a model
    wrapped by DDP or FSDP (``use_orig_params=True``) or sharded by FSDP2's ``fully_shard`` it re-reads the
    split made on the plain model (nothing is probed). A Hugging Face model's ``config.qkov`` records the rates
    (saved with ``save_pretrained``). Every Parameter is recorded, so that an optimizer stepping W_Q/W_K and
    W_V/W_O in one group warns and one holding Parameters FSDP2 replaced is refused
    (:mod:`validation.step_checks`). See :func:`describe_param_groups` for a dry run. ::

        opt = torch.optim.AdamW(qkov.param_groups(model, lr=5e-5, ratio=30))
    """
    check_model(model)
    check_rates(lr, ratio, lr_other)
    from validation.distributed import fsdp1_root

    root = fsdp1_root(model)
    import contextlib

    ctx = root.summon_full_params(root, writeback=False) if root is not None else contextlib.nullcontext()
    with ctx:  # FSDP1: full (unsharded) views, so shapes are those of the plain model; collective
        qk, ov = qk_ov_parameters(model, qk_bias=qk_bias, embeddings=embeddings, whole_circuit=whole_circuit,
                                  strict=strict, example_inputs=example_inputs, verify=verify)
    if qk and not any(p.requires_grad for p in qk):
        warnings.warn(f"qkov: every W_Q/W_K found ({len(qk)} tensors) is frozen and no trainable adapter sits on "
                      "them: the QK rate moves nothing; unfreeze them or put adapters (e.g. LoRA) on the q and k "
                      "projections", stacklevel=2)
    ids = {id(p) for p in qk + ov}
    other = [p for p in model.parameters() if id(p) not in ids]
    groups = circuit_param_groups(qk, ov, other, lr_ov=lr, ratio=ratio, lr_other=lr_other, **group_options)
    record_groups(model, groups, ratio)
    _record_in_config(model, lr, ratio, lr_other, qk_bias=qk_bias, embeddings=embeddings,
                      whole_circuit=whole_circuit)
    return groups


def _record_in_config(model: nn.Module, lr: float, ratio: float, lr_other: float | None, **options: bool) -> None:
    """Write the rates into a Hugging Face model's ``config.qkov`` (saved in ``config.json``)."""
    from validation.distributed import unwrap

    config = getattr(unwrap(model), "config", None)
    if config is None or not callable(getattr(config, "to_dict", None)):
        return
    rates = circuit_rates(lr, ratio, lr_other)
    config.qkov = {"qk_ov_ratio": float(ratio), "lr_ov": rates["ov"], "lr_qk": rates["qk"],
                   "lr_other": rates["other"], **options,
                   "note": "eta_QK / eta_OV set by qkov.param_groups; learning_rate logs are the OV rate"}


def _check_wrapper(model: nn.Module) -> bool:
    """Whether ``model`` holds a DDP/FSDP wrapper or FSDP2-sharded modules; refuses FSDP that flattens.

    Per-group rates need each W_Q/W_K/W_V/W_O part to stay its own Parameter: DDP keeps them, FSDP does with
    ``use_orig_params=True`` only, FSDP2 replaces each by a sharded ``DTensor`` Parameter of the same name.
    """
    from validation.distributed import fsdp1_class, is_fsdp2

    fsdp = fsdp1_class()
    wrapped = is_fsdp2(model)
    for name, m in model.named_modules():
        if fsdp is not None and isinstance(m, fsdp):
            wrapped = True
            if not getattr(m, "_use_orig_params", True):
                raise InputError(f"{name or '<root>'} (FullyShardedDataParallel): use_orig_params=False flattens "
                                 "W_Q, W_K, W_V and W_O into one FlatParameter, which per-circuit rates cannot "
                                 "split; wrap with FullyShardedDataParallel(..., use_orig_params=True), or shard "
                                 "with fully_shard (FSDP2)")
        elif isinstance(m, nn.parallel.DistributedDataParallel):
            wrapped = True
    return wrapped


def _unsplit_fused_in_wrapper(model: nn.Module, strict: bool) -> None:
    """Refuse a fused q/k/v tensor not split before DDP/FSDP/fully_shard (one line, naming it)."""
    for s in find_attention_sites(model, strict=strict):
        for ft in s.fused:
            if not parametrize.is_parametrized(ft.module, ft.attr):
                raise InputError(f"model: {s.name} has a fused q/k/v projection not split before wrapping in "
                                 "DDP/FSDP or sharding with fully_shard; call qkov.param_groups(model, ...) on the "
                                 "plain model first, then wrap or shard it (see docs/tutorials/distributed.md)")


def qk_ov_param_groups(model: nn.Module, lr: float, ratio: float, lr_other: float | None = None,
                       **options: Any) -> list[dict[str, Any]]:
    """Deprecated name of :func:`param_groups` (``qkov.param_groups``), same arguments."""
    warnings.warn("qk_ov_param_groups is deprecated: use qkov.param_groups(model, lr, ratio, ...) (same arguments)",
                  DeprecationWarning, stacklevel=2)
    return param_groups(model, lr, ratio, lr_other, **options)


def qkov_param_groups(model: nn.Module, lr_ov: float, ratio: float, lr_other: float | None = None,
                      **options: Any) -> list[dict[str, Any]]:
    """Deprecated name of :func:`param_groups` (``lr_ov`` is its ``lr``)."""
    warnings.warn("qkov_param_groups is deprecated: use qkov.param_groups(model, lr, ratio, ...) (lr_ov is lr)",
                  DeprecationWarning, stacklevel=2)
    return param_groups(model, lr_ov, ratio, lr_other, **options)


def iter_attention(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """``(name, module)`` of every attention module :func:`param_groups` recognises."""
    sites = {s.name: s.module for s in find_attention_sites(model, strict=False)}
    for name, m in model.named_modules():
        if isinstance(m, nn.MultiheadAttention) or name in sites:
            yield name, m


def _unique(params: list[nn.Parameter]) -> list[nn.Parameter]:
    seen: set[int] = set()
    out = []
    for p in params:
        if id(p) not in seen:  # shared (tied) projections are listed once
            seen.add(id(p))
            out.append(p)
    return out
