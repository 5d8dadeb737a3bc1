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

A module whose class name says attention (``Attention``, ``Attn``, ``SelfAttention``) but
that matches no layout, and is neither inside nor around a recognised site, is *unknown*:
:func:`find_attention_sites` raises :class:`UnknownAttentionLayout` listing each one with
its child modules and parameters, so the user sees what was found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import torch
from torch import nn

OUT_NAMES = ("o_proj", "out_proj", "dense", "c_proj", "out_lin", "o", "Wo")
"""Child names taken as the output projection W_O, in order of preference."""

SEPARATE_LAYOUTS: tuple[tuple[str, tuple[str, str, str], tuple[str, ...]], ...] = (
    ("hf-q_proj", ("q_proj", "k_proj", "v_proj"), ("o_proj", "out_proj", "dense")),
    ("bert-query", ("query", "key", "value"), ()),
    ("distilbert-q_lin", ("q_lin", "k_lin", "v_lin"), ("out_lin",)),
    ("t5-q", ("q", "k", "v"), ("o",)),
)
"""``(layout name, (q, k, v) child names, output child names)``; BERT's output is the parent's ``output.dense``."""

FUSED_NAMES = ("c_attn", "query_key_value", "qkv_proj", "Wqkv")


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
    """

    module: nn.Module
    attr: str
    dim: int
    labels: tuple[str, ...]

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


def _is_projection(m: object) -> bool:
    return isinstance(m, nn.Module) and isinstance(getattr(m, "weight", None), torch.Tensor)


def _params_of(m: nn.Module, circuit: str, role: str) -> list[WholeTensor]:
    return [WholeTensor(m, a, circuit, role) for a in ("weight", "bias")
            if isinstance(getattr(m, a, None), torch.Tensor)]


def _first_child(m: nn.Module, names: Iterable[str]) -> nn.Module | None:
    for n in names:
        c = getattr(m, n, None)
        if _is_projection(c):
            return c
    return None


def _int_attr(m: nn.Module, *names: str) -> int | None:
    cfg = getattr(m, "config", None)
    for n in names:
        for src in (m, cfg):
            v = getattr(src, n, None) if src is not None else None
            if isinstance(v, int) and v > 0:
                return v
    return None


def _block_labels(n: int, m: nn.Module, parts: tuple[str, ...] = ("q", "k", "v")) -> tuple[str, ...]:
    """Contiguous blocks: sizes ``H d, H_kv d, H_kv d`` when the module says so, else equal."""
    heads = _int_attr(m, "num_heads", "num_attention_heads", "n_heads")
    kv = _int_attr(m, "num_key_value_heads", "kv_n_heads", "num_kv_heads")
    hd = _int_attr(m, "head_dim", "head_size")
    if len(parts) == 3 and heads and kv and hd and (heads + 2 * kv) * hd == n:
        sizes = (heads * hd, kv * hd, kv * hd)
    elif n % len(parts) == 0:
        sizes = (n // len(parts),) * len(parts)
    else:
        raise UnknownAttentionLayout(f"fused projection of size {n} cannot be split into {'/'.join(parts)}")
    return tuple(lab for lab, s in zip(parts, sizes) for _ in range(s))


def neox_labels(n: int, head_size: int) -> tuple[str, ...]:
    """GPT-NeoX ``query_key_value`` rows: per head ``[q (d); k (d); v (d)]``, ``n = 3 H d``."""
    if head_size <= 0 or n % (3 * head_size):
        raise UnknownAttentionLayout(f"query_key_value of size {n} is not 3 x heads x head_size={head_size}")
    return tuple(lab for _ in range(n // (3 * head_size)) for lab in ("q", "k", "v") for _ in range(head_size))


def _fused_site(name: str, m: nn.Module, attr: str) -> AttentionSite | None:
    proj = getattr(m, attr)
    is_conv1d = type(proj).__name__ == "Conv1D"  # GPT-2's transposed linear: weight (in, out)
    wdim = 1 if is_conv1d else 0
    n = proj.weight.shape[wdim]
    if attr == "query_key_value":
        if not type(m).__name__.startswith("GPTNeoX"):
            return None  # Falcon & co. use other orders for the same name: refuse rather than guess
        hs = _int_attr(m, "head_size", "head_dim")
        labels = neox_labels(n, hs or 0)
        layout = "neox-query_key_value (per-head interleaved q,k,v)"
    elif attr == "c_attn" and _is_projection(getattr(m, "q_attn", None)):
        labels = _block_labels(n, m, ("k", "v"))
        layout = "gpt2-cross c_attn (k,v) + q_attn"
    else:
        labels = _block_labels(n, m)
        layout = f"fused-{attr}" + (" (Conv1D, fused axis 1)" if is_conv1d else "")
    out = _first_child(m, OUT_NAMES)
    site = AttentionSite(name, m, layout)
    site.fused.append(FusedTensor(proj, "weight", wdim, labels))
    if isinstance(getattr(proj, "bias", None), torch.Tensor):
        site.fused.append(FusedTensor(proj, "bias", 0, labels))
    if _is_projection(getattr(m, "q_attn", None)) and attr == "c_attn":
        site.whole += _params_of(m.q_attn, "qk", "q")
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
    for layout, (qn, kn, vn), outs in SEPARATE_LAYOUTS:
        q, k, v = (getattr(m, n, None) for n in (qn, kn, vn))
        if not all(_is_projection(p) for p in (q, k, v)):
            continue
        out = _first_child(m, outs) if outs else _bert_output(model, name)
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


def _looks_like_attention(m: nn.Module) -> bool:
    cls = type(m).__name__.lower()
    return ("attention" in cls or "attn" in cls) and any(True for _ in m.parameters(recurse=True))


def _describe(name: str, m: nn.Module) -> str:
    kids = ", ".join(f"{n}:{type(c).__name__}" for n, c in m.named_children()) or "no children"
    own = ", ".join(f"{n}{tuple(p.shape)}" for n, p in m.named_parameters(recurse=False)) or "no own parameters"
    return f"{name or '<root>'} ({type(m).__name__}: {kids}; {own})"


def find_attention_sites(model: nn.Module, *, strict: bool = True) -> list[AttentionSite]:
    """Every attention module of ``model`` in a known layout, in ``named_modules`` order.

    With ``strict`` (default), an attention-like module that no layout fits and that is not
    nested in (or around) a recognised site raises :class:`UnknownAttentionLayout`.
    ``nn.MultiheadAttention`` instances are not returned (see :mod:`validation.user_models`).
    """
    sites: list[AttentionSite] = []
    for name, m in model.named_modules():
        if any(name.startswith(s.name + ".") for s in sites if s.name):
            continue
        site = match_site(model, name, m)
        if site is not None:
            sites.append(site)
    if strict:
        known = [s.name for s in sites] + [n for n, m in model.named_modules()
                                           if isinstance(m, nn.MultiheadAttention)]
        mha_inside = {n for n, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)}

        def related(n: str) -> bool:
            return any(n == k or n.startswith(k + ".") or k.startswith(n + ".") or n == "" for k in known) \
                or any(k.startswith(n + ".") for k in mha_inside)

        unknown = [(n, m) for n, m in model.named_modules()
                   if _looks_like_attention(m) and not isinstance(m, nn.MultiheadAttention) and not related(n)]
        if unknown:
            listing = "; ".join(_describe(n, m) for n, m in unknown[:8])
            more = f" (+{len(unknown) - 8} more)" if len(unknown) > 8 else ""
            raise UnknownAttentionLayout(
                f"{type(model).__name__}: {len(unknown)} attention module(s) in no known layout: {listing}{more}. "
                "Known: q_proj/k_proj/v_proj(+o_proj|out_proj|dense), query/key/value(+parent output.dense), "
                "q_lin/k_lin/v_lin/out_lin, q/k/v/o, c_attn, GPT-NeoX query_key_value, qkv_proj, Wqkv, "
                "nn.MultiheadAttention; pass strict=False to leave them at lr_other")
    return sites
