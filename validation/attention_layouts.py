r"""Where W_Q, W_K, W_V and W_O live in users' attention modules (no ``transformers`` import).

:func:`find_attention_sites` walks a model and returns one :class:`AttentionSite` per
recognised attention module. A site names, for each circuit, whole tensors
(:class:`WholeTensor`) and, for fused projections, the rows of one tensor that belong to
q, k or v (:class:`FusedTensor`). Recognised layouts (:data:`SEPARATE_LAYOUTS`, fused ones
below):

separate projections, each a ``Linear``-like module with ``weight`` (and maybe ``bias``)
    ``q_proj/k_proj/v_proj`` + ``o_proj|out_proj|dense`` (Llama, Qwen2, Mistral, BART, OPT, Phi);
    ``query/key/value`` with the output projection at the parent's ``output.dense`` (BERT,
    RoBERTa, ELECTRA: ``BertAttention.self`` / ``BertAttention.output``);
    ``q_lin/k_lin/v_lin/out_lin`` (DistilBERT); ``q/k/v/o`` (T5, mT5).
fused projections, one weight whose output rows are q, k and v
    ``c_attn`` + ``c_proj`` (GPT-2): a ``Conv1D`` whose weight is ``(in, 3E)``, so the
    fused axis is **dim 1**: columns ``[0, E)`` q, ``[E, 2E)`` k, ``[2E, 3E)`` v (for GPT-2's
    cross-attention, ``q_attn`` is a separate q and ``c_attn`` holds k, v);
    ``query_key_value`` + ``dense`` of GPT-NeoX: a ``Linear`` ``(3E, in)`` whose rows are
    **interleaved per head**: head ``h`` owns rows ``[3dh, 3dh+d)`` q, ``[3dh+d, 3dh+2d)`` k,
    ``[3dh+2d, 3d(h+1))`` v (``d`` = ``head_size``; the model views the output as
    ``(..., H, 3d)`` and chunks the last axis);
    ``qkv_proj`` + ``o_proj`` (Phi-3) and ``Wqkv`` + ``Wo|out_proj`` (ModernBERT, MPT):
    contiguous blocks ``[q; k; v]`` of sizes ``H d, H_kv d, H_kv d`` (read from the module's
    ``num_heads``/``num_key_value_heads``/``head_dim`` when present, else equal thirds);
    ``nn.MultiheadAttention`` is handled in :mod:`validation.user_models` (its own split).

A fused name does not fix the row order (GPT-BigCode's ``c_attn`` is per-head interleaved
with ``multi_query=False``, CodeGen's ``qkv_proj`` is 4 groups of ``[q; v; k]``, Falcon and
BLOOM both say ``query_key_value``), so each fused tensor carries its *candidate* layouts
(:func:`fused_candidates`) and :func:`verify_sites` keeps the one that the module's own
forward confirms (:mod:`validation.layout_probe`), or refuses in one line. Custom modules
declare theirs with :func:`register_attention_layout` (:class:`AttentionLayout`).

A module whose class name says attention (``Attention``, ``Attn``, ``SelfAttention``) but
that matches no layout, and is neither inside nor around a recognised site, is *unknown*:
:func:`find_attention_sites` raises :class:`UnknownAttentionLayout` listing each one with
its child modules and parameters, so the user sees what was found.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from typing import Any, Iterable, TypeGuard

import torch
from torch import nn

from validation import layout_probe

OUT_NAMES = ("o_proj", "out_proj", "dense", "c_proj", "out_lin", "o", "Wo", "proj")
"""Child names taken as the output projection W_O, in order of preference."""

SEPARATE_LAYOUTS: tuple[tuple[str, tuple[str, str, str], tuple[str, ...]], ...] = (
    ("hf-q_proj", ("q_proj", "k_proj", "v_proj"), ("o_proj", "out_proj", "dense")),
    ("bert-query", ("query", "key", "value"), ()),
    ("distilbert-q_lin", ("q_lin", "k_lin", "v_lin"), ("out_lin",)),
    ("t5-q", ("q", "k", "v"), ("o",)),
    ("meta-wq", ("wq", "wk", "wv"), ("wo",)),
    ("diffusers-to_q", ("to_q", "to_k", "to_v"), ("to_out.0", "to_out")),
)
"""``(layout name, (q, k, v) child names, output child names)``; BERT's output is the parent's ``output.dense``."""

FUSED_NAMES = ("c_attn", "query_key_value", "qkv_proj", "Wqkv", "qkv")


class UnknownAttentionLayout(ValueError):
    """An attention-like module (or the whole model) whose W_Q/W_K could not be located."""


@dataclass(frozen=True)
class WholeTensor:
    """A whole parameter ``getattr(module, attr)`` in one circuit (``"qk"`` or ``"ov"``)."""

    module: nn.Module
    attr: str
    circuit: str
    role: str  # "q", "k", "v" or "o"


@dataclass(frozen=True)
class FusedTensor:
    """Parameter ``getattr(module, attr)`` whose entries along ``dim`` are labelled q, k or v.

    ``labels[i]`` is the role of index ``i`` along ``dim`` (length = ``shape[dim]``).
    ``candidates``: the known layouts ``(name, labels)`` this tensor may be in, in order of
    preference; :func:`verify_sites` keeps the one the module's forward confirms (``labels`` is
    the first until then; ``verified`` says whether a probe confirmed it).
    """

    module: nn.Module
    attr: str
    dim: int
    labels: tuple[str, ...]
    candidates: tuple[tuple[str, tuple[str, ...]], ...] = ()
    verified: bool = False
    declared: bool = False

    def segments(self) -> list[tuple[str, int, int]]:
        """Maximal runs ``(role, start, stop)`` of equal labels, in order along ``dim``."""
        out: list[tuple[str, int, int]] = []
        for i, lab in enumerate(self.labels):
            if out and out[-1][0] == lab and out[-1][2] == i:
                out[-1] = (lab, out[-1][1], i + 1)
            else:
                out.append((lab, i, i + 1))
        return out


@dataclass
class AttentionSite:
    """One recognised attention module: its layout and where its circuits' tensors are."""

    name: str
    module: nn.Module
    layout: str
    whole: list[WholeTensor] = field(default_factory=list)
    fused: list[FusedTensor] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def tensor_shape(m: nn.Module, attr: str) -> tuple[int, ...] | None:
    """The shape of tensor ``m.<attr>`` (``None`` if it has none), read without computing a split tensor.

    A tensor qkov split (a parametrization whose first member records the fused axis ``dim`` and the index
    ``order``) is the concatenation of its parts along ``dim``: its shape is read from the parts. Computing it
    outside a forward fails under FSDP2, whose parts are sharded DTensors (and costs a copy anyway).
    """
    plists = m.__dict__.get("_modules", {}).get("parametrizations")
    if plists is not None and attr in plists:
        pz = plists[attr][0]
        dim, order = getattr(pz, "dim", None), getattr(pz, "order", None)
        parts = [p for n, p in plists[attr].named_parameters(recurse=False) if n.startswith("original")]
        if isinstance(dim, int) and isinstance(order, torch.Tensor) and parts:
            shape = list(parts[0].shape)
            shape[dim] = len(order)
            return tuple(shape)
    t = getattr(m, attr, None)
    return tuple(t.shape) if isinstance(t, torch.Tensor) else None


def _is_projection(m: object) -> TypeGuard[nn.Module]:
    return isinstance(m, nn.Module) and tensor_shape(m, "weight") is not None


def _weight_shape(m: nn.Module) -> tuple[int, ...]:
    """The shape of ``m.weight`` of a projection (:func:`_is_projection`)."""
    shape = tensor_shape(m, "weight")
    if shape is None:
        raise UnknownAttentionLayout(f"{type(m).__name__}: no weight tensor")
    return shape


def _params_of(m: nn.Module, circuit: str, role: str) -> list[WholeTensor]:
    return [WholeTensor(m, a, circuit, role) for a in ("weight", "bias") if tensor_shape(m, a) is not None]


def _first_child(m: nn.Module, names: Iterable[str]) -> nn.Module | None:
    """The first of ``names`` (dotted paths allowed, e.g. diffusers' ``to_out.0``) that is a projection."""
    for n in names:
        try:
            c = m.get_submodule(n) if "." in n else getattr(m, n, None)
        except AttributeError:
            c = None
        if _is_projection(c):
            return c
    return None


def transposed_weight(proj: nn.Module) -> bool:
    """Whether ``proj.weight`` is stored ``(in, out)`` (GPT-2's ``Conv1D``) rather than ``(out, in)``.

    Decided by structure, not by the class name (a split ``Conv1D`` becomes ``ParametrizedConv1D``):
    an ``nn.Linear`` is ``(out, in)``; a module that records ``nf`` (its output size, as
    ``transformers``' ``Conv1D`` does) with ``weight.shape[-1] == nf`` is ``(in, out)``; otherwise a
    class named ``Conv1D`` anywhere in its MRO.
    """
    if isinstance(proj, nn.Linear):
        return False
    base = getattr(proj, "base_layer", None)  # a PEFT adapter layer wraps the projection
    if isinstance(base, nn.Module) and base is not proj:
        return transposed_weight(base)
    w = tensor_shape(proj, "weight")
    nf, nx = getattr(proj, "nf", None), getattr(proj, "nx", None)
    if isinstance(nf, int) and w is not None and len(w) == 2:
        return w == (nx, nf) if isinstance(nx, int) else w[1] == nf
    return any(c.__name__ == "Conv1D" for c in type(proj).__mro__)


def split_labels(proj: nn.Module, attr: str) -> tuple[int, tuple[str, ...]] | None:
    """``(fused axis, labels)`` of a tensor qkov already split (a ``FusedSlices`` parametrization), else ``None``.

    Read back from the parametrization itself, so a second call neither guesses nor probes again
    (the split tensor is recomputed on each access and has no gradient of its own).
    """
    plist = getattr(proj, "parametrizations", None)
    if plist is None or attr not in plist:
        return None
    pz = plist[attr][0]
    order, sizes, roles = getattr(pz, "order", None), getattr(pz, "sizes", None), getattr(pz, "roles", None)
    if order is None or sizes is None or roles is None:
        return None
    cat_roles = [r for r, n in zip(roles, sizes) for _ in range(n)]
    labels = [""] * len(cat_roles)
    for j, i in enumerate(order.tolist()):
        labels[i] = cat_roles[j]
    return int(pz.dim), tuple(labels)


def _int_attr(m: nn.Module, *names: str) -> int | None:
    cfg = getattr(m, "config", None)
    for n in names:
        for src in (m, cfg):
            v = getattr(src, n, None) if src is not None else None
            if isinstance(v, int) and v > 0:
                return v
    return None


def _blocks(parts: tuple[str, ...], sizes: tuple[int, ...], groups: int = 1) -> tuple[str, ...]:
    """``groups`` repetitions of the blocks ``parts`` of ``sizes`` entries each."""
    return tuple(lab for _ in range(groups) for lab, n in zip(parts, sizes) for _ in range(n))


def _block_labels(n: int, m: nn.Module, parts: tuple[str, ...] = ("q", "k", "v")) -> tuple[str, ...]:
    """Contiguous blocks: sizes ``H d, H_kv d, H_kv d`` when the module says so, else equal."""
    heads = _int_attr(m, "num_heads", "num_attention_heads", "n_heads", "n_head")
    kv = _int_attr(m, "num_key_value_heads", "kv_n_heads", "num_kv_heads", "kv_heads")
    hd = _int_attr(m, "head_dim", "head_size")
    sizes: tuple[int, ...]
    if len(parts) == 3 and heads and kv and hd and (heads + 2 * kv) * hd == n:
        sizes = (heads * hd, kv * hd, kv * hd)
    elif n % len(parts) == 0:
        sizes = (n // len(parts),) * len(parts)
    else:
        raise UnknownAttentionLayout(f"fused projection of size {n} cannot be split into {'/'.join(parts)}")
    return _blocks(parts, sizes)


def neox_labels(n: int, head_size: int) -> tuple[str, ...]:
    """GPT-NeoX ``query_key_value`` rows: per head ``[q (d); k (d); v (d)]``, ``n = 3 H d``."""
    if head_size <= 0 or n % (3 * head_size):
        raise UnknownAttentionLayout(f"query_key_value of size {n} is not 3 x heads x head_size={head_size}")
    return _blocks(("q", "k", "v"), (head_size,) * 3, n // (3 * head_size))


def fused_candidates(n: int, m: nn.Module, attr: str, in_features: int | None) -> list[tuple[str, tuple[str, ...]]]:
    """The known layouts of a fused q/k/v projection with ``n`` outputs in module ``m``.

    * contiguous ``[q; k; v]`` with sizes ``(H d, H_kv d, H_kv d)``, equal thirds, or
      ``(E, (n-E)/2, (n-E)/2)`` for multi-query (GPT-2, Phi-3, ModernBERT, MPT, GPT-BigCode
      ``multi_query=True``, Falcon multi-query);
    * per head ``[q_h; k_h; v_h]`` (GPT-NeoX, GPT-BigCode ``multi_query=False``, BLOOM);
    * CodeGen: ``mp_num`` groups of ``[q; v; k]``.

    Preferred first: per head for ``query_key_value``, contiguous otherwise.
    """
    heads = _int_attr(m, "num_heads", "num_attention_heads", "n_heads", "n_head")
    hd = _int_attr(m, "head_dim", "head_size")
    if hd is None and heads and in_features and in_features % heads == 0:
        hd = in_features // heads
    contiguous: list[tuple[str, tuple[str, ...]]] = []
    try:
        contiguous.append(("contiguous [q; k; v]", _block_labels(n, m)))
    except UnknownAttentionLayout:
        pass
    if in_features and n > in_features and (n - in_features) % 2 == 0:
        kvd = (n - in_features) // 2
        contiguous.append((f"contiguous [q; k; v] (multi-query, k and v {kvd} each)",
                           _blocks(("q", "k", "v"), (in_features, kvd, kvd))))
    per_head = []
    if hd and n % (3 * hd) == 0:
        per_head.append((f"per head [q; k; v] ({n // (3 * hd)} heads of {hd})", neox_labels(n, hd)))
    kv = _int_attr(m, "num_key_value_heads", "kv_n_heads", "num_kv_heads", "kv_heads")
    if heads and kv and hd and heads % kv == 0 and (heads + 2 * kv) * hd == n:
        g = heads // kv  # Falcon new_decoder_architecture (GQA): per KV group, its g queries, then k, then v
        per_head.append((f"per KV group [q x {g}; k; v] ({kv} groups, head size {hd})",
                         _blocks(("q", "k", "v"), (g * hd, hd, hd), kv)))
    other = []
    mp = _int_attr(m, "mp_num")
    # CodeGen: mp_num groups of [q; v; k]; transformers 4.x keeps mp_num = 4 local to forward, so
    # a qkv_proj also gets the 4-group candidate (the probe keeps whichever the forward confirms)
    for groups in dict.fromkeys([g for g in (mp, 4 if attr == "qkv_proj" else None) if g]):
        if n % (3 * groups) == 0:
            other.append((f"CodeGen: {groups} groups of [q; v; k]",
                          _blocks(("q", "v", "k"), (n // (3 * groups),) * 3, groups)))
    cands = per_head + contiguous + other if attr == "query_key_value" else contiguous + per_head + other
    if mp:  # a module that says mp_num is CodeGen-style first
        cands = other + [c for c in cands if c not in other]
    seen: set[tuple[str, ...]] = set()
    out = []
    for name, labels in cands:
        if labels not in seen:
            seen.add(labels)
            out.append((name, labels))
    return out


def _fused_site(name: str, m: nn.Module, attr: str) -> AttentionSite | None:
    proj = getattr(m, attr)
    is_conv1d = transposed_weight(proj)  # GPT-2's transposed linear: weight (in, out)
    wdim = 1 if is_conv1d else 0
    shape = _weight_shape(proj)
    n = shape[wdim]
    in_features = shape[1 - wdim] if len(shape) == 2 else None
    if attr == "c_attn" and _is_projection(getattr(m, "q_attn", None)):
        cands = [("gpt2-cross c_attn (k,v) + q_attn", _block_labels(n, m, ("k", "v")))]
    else:
        cands = fused_candidates(n, m, attr, in_features)
    if not cands:
        return None
    layout = f"fused-{attr}" + (" (Conv1D, fused axis 1)" if is_conv1d else "")
    out = _first_child(m, OUT_NAMES)
    site = AttentionSite(name, m, f"{layout}: {cands[0][0]}")
    for a, dim in (("weight", wdim), ("bias", 0)):
        if tensor_shape(proj, a) is None:
            continue
        done = split_labels(proj, a)
        if done is not None:  # split by an earlier call: its confirmed labels, nothing to probe
            site.fused.append(FusedTensor(proj, a, done[0], done[1], ((f"split earlier ({cands[0][0]})", done[1]),),
                                          verified=True, declared=True))
        else:
            site.fused.append(FusedTensor(proj, a, dim, cands[0][1], tuple(cands)))
    q_attn = getattr(m, "q_attn", None)
    if _is_projection(q_attn) and attr == "c_attn":
        site.whole += _params_of(q_attn, "qk", "q")
    if out is None:
        site.notes.append("no output projection found; W_O stays at lr_other")
    else:
        site.whole += _params_of(out, "ov", "o")
    return site


def _bert_output(model: nn.Module, name: str) -> nn.Module | None:
    if "." not in name:
        return None
    parent = model.get_submodule(name.rsplit(".", 1)[0])
    out = getattr(parent, "output", None)
    dense = getattr(out, "dense", None) if isinstance(out, nn.Module) else None
    return dense if _is_projection(dense) else None


def match_site(model: nn.Module, name: str, m: nn.Module) -> AttentionSite | None:
    """The :class:`AttentionSite` of ``m`` (named ``name`` in ``model``) or ``None`` if no layout fits."""
    if isinstance(m, nn.MultiheadAttention):
        return None  # handled by validation.user_models' own split
    declared = declared_layout(m)
    if declared is not None:
        return declared.site(name, m, model)
    for layout, (qn, kn, vn), outs in SEPARATE_LAYOUTS:
        q, k, v = (getattr(m, n, None) for n in (qn, kn, vn))
        if not (_is_projection(q) and _is_projection(k) and _is_projection(v)):
            continue
        out = _first_child(m, outs) if outs else (_first_child(m, ("dense",)) or _bert_output(model, name))
        if outs and out is None:
            continue
        site = AttentionSite(name, m, layout)
        site.whole += _params_of(q, "qk", "q") + _params_of(k, "qk", "k") + _params_of(v, "ov", "v")
        if out is None:
            site.notes.append("no output projection found; W_O stays at lr_other")
        else:
            site.whole += _params_of(out, "ov", "o")
        return site
    for attr in FUSED_NAMES:
        if _is_projection(getattr(m, attr, None)):
            return _fused_site(name, m, attr)
    return None


def leave_at_other(msg: str, refusals: list[str] | None, stacklevel: int = 3) -> None:
    """``strict=False``: a refused module stays at ``lr_other``; say so (a warning), or add ``msg`` to ``refusals``
    when the caller collects them (``qkov inspect``)."""
    if refusals is not None:
        refusals.append(msg)
    else:
        warnings.warn(f"qkov: {msg}; left at lr_other (strict=False)", stacklevel=stacklevel + 1)


def _looks_like_attention(m: nn.Module) -> bool:
    cls = type(m).__name__.lower()
    return ("attention" in cls or "attn" in cls) and any(True for _ in m.parameters(recurse=True))


def _describe(name: str, m: nn.Module) -> str:
    kids = ", ".join(f"{n}:{type(c).__name__}" for n, c in m.named_children()) or "no children"
    own = ", ".join(f"{n}{tuple(p.shape)}" for n, p in m.named_parameters(recurse=False)) or "no own parameters"
    return f"{name or '<root>'} ({type(m).__name__}: {kids}; {own})"


def find_attention_sites(model: nn.Module, *, strict: bool = True,
                         refusals: list[str] | None = None) -> list[AttentionSite]:
    """Every attention module of ``model`` in a known layout, in ``named_modules`` order.

    With ``strict`` (default), an attention-like module that no layout fits and that is not
    nested in (or around) a recognised site raises :class:`UnknownAttentionLayout`; without it, such a
    module is listed in ``refusals`` when given. ``nn.MultiheadAttention`` instances are not returned
    (see :mod:`validation.user_models`).
    """
    sites: list[AttentionSite] = []
    for name, m in model.named_modules():
        if any(name.startswith(s.name + ".") for s in sites if s.name):
            continue
        site = match_site(model, name, m)
        if site is not None:
            sites.append(site)
    if strict or refusals is not None:
        known = [s.name for s in sites] + [n for n, m in model.named_modules()
                                           if isinstance(m, nn.MultiheadAttention)]
        mha_inside = {n for n, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)}

        def related(n: str) -> bool:
            return any(n == k or n.startswith(k + ".") or k.startswith(n + ".") or n == "" for k in known) \
                or any(k.startswith(n + ".") for k in mha_inside)

        unknown = [(n, m) for n, m in model.named_modules()
                   if _looks_like_attention(m) and not isinstance(m, nn.MultiheadAttention) and not related(n)]
        if unknown and not strict and refusals is not None:
            refusals += [f"{_describe(n, m)}: an attention-like module (by its class name) in no known layout"
                         for n, m in unknown]
        elif unknown:
            listing = "; ".join(_describe(n, m) for n, m in unknown[:8])
            more = f" (+{len(unknown) - 8} more)" if len(unknown) > 8 else ""
            raise UnknownAttentionLayout(
                f"{type(model).__name__}: {len(unknown)} attention module(s) in no known layout: {listing}{more}. "
                "Known: q_proj/k_proj/v_proj(+o_proj|out_proj|dense), query/key/value(+parent output.dense), "
                "q_lin/k_lin/v_lin/out_lin, q/k/v/o, c_attn, GPT-NeoX query_key_value, qkv_proj, Wqkv, "
                "nn.MultiheadAttention; declare yours with register_attention_layout, or pass strict=False "
                "to leave them at lr_other")
    return sites


@dataclass(frozen=True)
class AttentionLayout:
    """A declared layout for a custom attention module: where its projections are.

    ``q``, ``k``, ``v``, ``o``: separate ``Linear``-like modules (any may be ``None``), each a path from the
    attention module: a child (``"q_proj"``), a descendant (``"to_out.0"``), or, with each leading ``"../"``
    one level up, anywhere in the model (``o="../output.dense"``: DeBERTa's and BERT's W_O sits in the
    attention's sibling ``output``); a projection outside the module is not checked by the probe (it runs
    after the module's output);
    ``qkv``: a fused child whose ``weight`` rows (``fused_dim``, default 0; 1 for a GPT-2
    ``Conv1D``) are ``groups`` repetitions of the blocks named by ``order`` (equal sizes), e.g.
    ``order="qvk"`` for CodeGen-like ``[q; v; k]``, ``groups="num_heads"`` (an int or the name of
    an int attribute of the module) for per-head interleaving, ``order="kv"`` with a separate
    ``q``. Register it with :func:`register_attention_layout`.
    """

    q: str | None = None
    k: str | None = None
    v: str | None = None
    o: str | None = None
    qkv: str | None = None
    order: str = "qkv"
    groups: int | str = 1
    fused_dim: int = 0
    name: str = "declared"

    def site(self, name: str, m: nn.Module, model: nn.Module | None = None) -> AttentionSite:
        """The :class:`AttentionSite` of module ``m`` (named ``name`` in ``model``) under this layout (raises if
        a declared projection is missing)."""
        site = AttentionSite(name, m, f"{self.name} ({type(m).__name__})")
        for role, child in (("q", self.q), ("k", self.k), ("v", self.v), ("o", self.o)):
            if child is None:
                continue
            proj = _resolve(model, name, m, child)
            if not _is_projection(proj):
                raise UnknownAttentionLayout(f"{name} ({type(m).__name__}): declared {role}={child!r} is not a "
                                             "module with a weight" + (" (a path with '../' needs the model)"
                                                                       if child.startswith("../") and model is None
                                                                       else ""))
            site.whole += _params_of(proj, "qk" if role in "qk" else "ov", role)
        if self.qkv is not None:
            proj = getattr(m, self.qkv, None)
            if not _is_projection(proj):
                raise UnknownAttentionLayout(f"{name} ({type(m).__name__}): declared qkv={self.qkv!r} is not a "
                                             "child with a weight")
            groups = self.groups if isinstance(self.groups, int) else getattr(m, self.groups, None)
            n = _weight_shape(proj)[self.fused_dim]
            if not isinstance(groups, int) or groups <= 0 or set(self.order) - set("qkv") \
                    or n % (groups * len(self.order)):
                raise UnknownAttentionLayout(f"{name} ({type(m).__name__}): declared qkv={self.qkv!r} with "
                                             f"order={self.order!r}, groups={self.groups!r} does not divide its "
                                             f"{n} outputs")
            labels = _blocks(tuple(self.order), (n // (groups * len(self.order)),) * len(self.order), groups)
            cand = ((f"{self.name}: {groups} x [{'; '.join(self.order)}]", labels),)
            site.fused.append(FusedTensor(proj, "weight", self.fused_dim, labels, cand, declared=True))
            if tensor_shape(proj, "bias") is not None:
                site.fused.append(FusedTensor(proj, "bias", 0, labels, cand, declared=True))
        return site


def _resolve(model: nn.Module | None, name: str, m: nn.Module, path: str) -> nn.Module | None:
    """The module at ``path`` from ``m`` (named ``name`` in ``model``); each leading ``../`` climbs one level."""
    up = 0
    while path.startswith("../"):
        up, path = up + 1, path[3:]
    base: nn.Module | None = m
    if up:
        parts = name.split(".") if name else []
        if model is None or up > len(parts):
            return None
        base = model.get_submodule(".".join(parts[:len(parts) - up]))
    if not path:
        return base
    try:
        return base.get_submodule(path) if base is not None else None
    except AttributeError:
        return None


_DECLARED: dict[type, AttentionLayout] = {}


def register_attention_layout(module_type: type, layout: AttentionLayout | None) -> None:
    """Declare where ``module_type``'s (and its subclasses') projections are; ``None`` removes it.

    Declared layouts take precedence over the built-in ones. They are checked against the
    module's forward like any other when example inputs are available.
    """
    if layout is None:
        _DECLARED.pop(module_type, None)
    else:
        if not isinstance(layout, AttentionLayout):
            raise TypeError(f"layout: expected AttentionLayout, got {type(layout).__name__}")
        _DECLARED[module_type] = layout


def declared_layout(m: nn.Module) -> AttentionLayout | None:
    """The layout registered for ``type(m)`` or its nearest base class, if any."""
    for cls in type(m).__mro__:
        if cls in _DECLARED:
            return _DECLARED[cls]
    return None


def _inside(parent: nn.Module, child: nn.Module) -> bool:
    return any(c is child for c in parent.modules())


def _check_site(site: AttentionSite, rec: layout_probe.SiteRecord) -> tuple[AttentionSite, str | None]:
    """Match ``site`` against what its forward did; ``(site with confirmed labels, problem or None)``."""
    # a tensor split earlier is recomputed on each access (no gradient of its own); its labels are known
    weights = [ft for ft in site.fused if ft.attr != "bias" and not (ft.verified and ft.declared)]
    wholes = [wt for wt in site.whole if wt.attr == "weight" and _inside(site.module, wt.module)
              and getattr(wt.module, wt.attr).requires_grad]  # a frozen (e.g. PEFT base) weight cannot be probed
    tensors = [(getattr(ft.module, ft.attr), ft.dim) for ft in weights] + [(getattr(wt.module, wt.attr), 0)
                                                                             for wt in wholes]
    if not tensors:
        return site, None
    eff = layout_probe.row_effects(rec, tensors)
    if eff is None:
        if not weights and not any(ft.declared and not ft.verified for ft in site.fused):
            return site, None  # separate projections named as in a known layout: nothing contradicts them
        return site, "recorded no attention scores (no softmax or scaled_dot_product_attention ran in it)"
    chosen: dict[int, tuple[str, tuple[str, ...]]] = {}
    for ft, (score, out) in zip(weights, eff[:len(weights)]):
        value = out & ~score
        match = None
        for cname, labels in ft.candidates or (("given", ft.labels),):
            qk = torch.tensor([lab in "qk" for lab in labels])
            if len(labels) == len(score) and bool((qk == score).all()) and bool((~qk == value).all()):
                match = (cname, labels)
                break
        if match is None:
            names = "; ".join(c for c, _ in ft.candidates) or "none"
            inert = ~(score | out)
            child = next((n for n, c in site.module.named_modules() if c is ft.module), "")
            return site, (f"{child + '.' if child else ''}{ft.attr}: the forward puts rows {layout_probe.ranges(score)} of {len(score)} in the "
                          f"attention scores and {layout_probe.ranges(value)} only in the output"
                          + (f" ({layout_probe.ranges(inert)} in neither)" if bool(inert.any()) else "")
                          + f"; no known layout matches (tried: {names}); declare it with register_attention_layout")
        chosen[id(ft.module)] = match
    for wt, (score, out) in zip(wholes, eff[len(weights):]):
        child = next((n for n, c in site.module.named_modules() if c is wt.module), "?")
        if wt.circuit == "qk" and not bool(score.any()):
            return site, f"{child}: taken as W_{wt.role.upper()} but it does not move the attention scores"
        if wt.circuit == "ov" and (bool(score.any()) or not bool(out.any())):
            what = "moves the attention scores" if bool(score.any()) else "does not move the output"
            return site, f"{child}: taken as W_{wt.role.upper()} but it {what}"
    fused = []
    layout = site.layout
    for ft in site.fused:
        if id(ft.module) in chosen:
            cname, labels = chosen[id(ft.module)]
            ft = _replace(ft, labels=labels, verified=True)
            layout = f"{site.layout.split(':')[0]}: {cname}"
        fused.append(ft)
    return AttentionSite(site.name, site.module, layout, list(site.whole), fused, list(site.notes)), None


def verify_sites(model: nn.Module, sites: list[AttentionSite], inputs: Any, *,
                 strict: bool = True, refusals: list[str] | None = None) -> list[AttentionSite]:
    """Confirm each site's q/k/v/o assignment against one forward of ``model`` on ``inputs``.

    Fused tensors take the candidate layout whose QK rows are exactly the rows that move the
    attention scores (:mod:`validation.layout_probe`); whole q/k weights must move the scores,
    v/o weights (inside the module) must move only its output. A site that fails raises
    :class:`UnknownAttentionLayout` in one line naming the module and what the forward showed,
    or, with ``strict=False``, is dropped (its tensors stay at ``lr_other``) with a warning.
    """
    if not sites:
        return sites
    records = layout_probe.run_probe(model, {s.name: s.module for s in sites}, inputs)
    out = []
    for s in sites:
        if not records[s.name].done:
            problem = "did not run during the probe forward" if s.fused else None
        else:
            s, problem = _check_site(s, records[s.name])
        if problem is None:
            out.append(s)
            continue
        msg = f"{s.name or '<root>'} ({type(s.module).__name__}): {problem}"
        if strict:
            raise UnknownAttentionLayout(msg)
        leave_at_other(msg, refusals, stacklevel=3)
    return out
