r"""Read attention out of users' models, per layer and head, and measure it with :mod:`validation.metrics`.

:func:`read_attention` returns a tensor ``A`` of shape ``(n_layers, B, H, L_q, L_k)`` with
:math:`A[l, b, h, i, j]` the weight that query position ``i`` of head ``h`` in layer ``l``
puts on key position ``j`` (rows sum to 1 over valid keys). Two ways to get it:

- models whose ``forward`` takes ``output_attentions`` (Hugging Face ``transformers``):
  the returned ``attentions`` (or ``encoder_attentions`` / ``decoder_attentions`` /
  ``cross_attentions``, chosen by ``stack``). Attention kernels that do not materialise the
  weights (``sdpa``, flash) return none, so the model is switched to ``"eager"`` for the
  call (``set_attn_implementation``) and switched back afterwards;
- models built from :class:`torch.nn.MultiheadAttention` (``nn.TransformerEncoder`` & co.):
  forward hooks that ask every MHA for unaveraged weights (``need_weights=True,
  average_attn_weights=False``). Grad mode stays on during the call so that torch's fused
  inference path (which bypasses the MHA module) is not taken.

:func:`attention_metrics` turns ``A`` into the paper's measures: the attention mass of a
query row on given token sets (:func:`validation.metrics.attention_mass.relevant_mass`) per
layer and head, attention confidence AC and ACMC (:mod:`validation.metrics.dtap`) per layer
and head, the DTAP heatmap, and the attention-rollout mass through all layers
(:func:`validation.metrics.attention_mass.attention_rollout`, heads averaged).
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from validation.metrics.attention_mass import attention_rollout, relevant_mass
from validation.metrics.dtap import (DEFAULT_KAPPA, DEFAULT_TAU, SQUAD_MASS_EDGES, acmc, attention_confidence,
                                     dtap_histogram)

STACKS = {"self": "attentions", "encoder": "encoder_attentions", "decoder": "decoder_attentions",
          "cross": "cross_attentions"}


def _call(model: nn.Module, inputs: Any, **extra: Any) -> Any:
    if isinstance(inputs, Mapping):
        return model(**inputs, **extra)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs, **extra)
    return model(inputs, **extra)


def _takes_output_attentions(model: nn.Module) -> bool:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return "output_attentions" in params or (any(p.kind is p.VAR_KEYWORD for p in params.values())
        and hasattr(getattr(model, "config", None), "output_attentions"))


def _hf_attention(model: nn.Module, inputs: Any, stack: str | None) -> list[torch.Tensor]:
    cfg = getattr(model, "config", None)
    impl = getattr(cfg, "_attn_implementation", None)
    set_impl = getattr(model, "set_attn_implementation", None)
    switch = impl not in (None, "eager") and callable(set_impl)
    if switch and callable(set_impl):
        set_impl("eager")
    try:
        out = _call(model, inputs, output_attentions=True)
    finally:
        if switch and callable(set_impl):
            set_impl(impl)
    if stack is None:
        stack = "self" if getattr(out, "attentions", None) is not None else "encoder"
    field = STACKS.get(stack)
    if field is None:
        raise ValueError(f"stack: {stack!r}: must be one of {', '.join(STACKS)}")
    att = getattr(out, field, None)
    if att is None or any(a is None for a in att):
        raise ValueError(f"{type(model).__name__}: output has no {field} (the attention kernel "
                         f"{impl!r} does not return weights; build the model with attn_implementation='eager')")
    return list(att)


def _mha_attention(model: nn.Module, inputs: Any) -> list[torch.Tensor]:
    mhas = [m for m in model.modules() if isinstance(m, nn.MultiheadAttention)]
    if not mhas:
        raise ValueError(f"{type(model).__name__}: neither takes output_attentions nor contains "
                         "nn.MultiheadAttention; no way to read its attention")
    got: list[torch.Tensor] = []

    def pre(_m: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        return args, {**kwargs, "need_weights": True, "average_attn_weights": False}

    def post(_m: nn.Module, _args: tuple, out: Any) -> None:
        got.append(out[1])

    handles = [h for m in mhas for h in (m.register_forward_pre_hook(pre, with_kwargs=True),
                                         m.register_forward_hook(post))]
    try:
        with torch.enable_grad():  # keeps TransformerEncoderLayer off its fused path (no MHA call there)
            _call(model, inputs)
    finally:
        for h in handles:
            h.remove()
    if not got:
        raise ValueError(f"{type(model).__name__}: no nn.MultiheadAttention ran during the forward pass")
    return [g.unsqueeze(1) if g.dim() == 3 else g for g in got]  # unbatched input -> B = 1


def read_attention(model: nn.Module, inputs: Any, *, stack: str | None = None,
                   layers: Sequence[int] | None = None, heads: Sequence[int] | None = None,
                   grad: bool = False) -> torch.Tensor:
    """Per-layer, per-head attention weights of ``model`` on ``inputs``: ``(n_layers, B, H, L_q, L_k)``.

    Args:
        model: a ``transformers`` model (anything whose forward takes ``output_attentions``)
            or a model containing ``nn.MultiheadAttention`` modules (read by hooks).
        inputs: keyword arguments (a mapping, e.g. a tokenizer's output), positional
            arguments (tuple/list) or one tensor.
        stack: for encoder-decoder models, ``"encoder"`` (default), ``"decoder"`` or
            ``"cross"``; ``"self"`` (default otherwise) for one-stack models.
        layers, heads: indices to keep (default all), applied in that order.
        grad: keep the autograd graph (default: detached float tensors).
    """
    if _takes_output_attentions(model):
        with torch.set_grad_enabled(grad):
            att = _hf_attention(model, inputs, stack)
    else:
        if stack not in (None, "self"):
            raise ValueError(f"stack: {stack!r}: hook read-out has one stack ('self')")
        att = _mha_attention(model, inputs)
    shapes = {tuple(a.shape[-2:]) for a in att}
    if len(shapes) != 1:
        raise ValueError(f"layers have different attention shapes {sorted(shapes)}; pass layers= to pick some")
    a = torch.stack([x if grad else x.detach() for x in att])
    if layers is not None:
        a = a[list(layers)]
    if heads is not None:
        a = a[:, :, list(heads)]
    return a


def _rows(attn: np.ndarray, query: Any) -> np.ndarray:
    """``attn (..., B, L_q, L_k)`` -> the query row of each instance ``(..., B, L_k)``."""
    b = attn.shape[-3]
    q = np.broadcast_to(np.asarray(query, dtype=np.int64), (b,))
    return attn[..., np.arange(b), q, :]


def attention_metrics(attn: Any, relevant: Any, *, query: Any = 0, valid: Any = None, p_true: Any = None,
                      tau: float = DEFAULT_TAU, kappa: float = DEFAULT_KAPPA,
                      mass_edges: Sequence[float] = SQUAD_MASS_EDGES) -> dict[str, Any]:
    r"""The attention measures of :mod:`validation.metrics` for a read-out ``(n_layers, B, H, L, L)``.

    ``query`` (an int, or one index per instance ``(B,)``) is the position whose attention row
    is measured (``[CLS]`` = 0 for BERT-style classifiers, the last token for GPT-style);
    ``relevant`` and ``valid`` are boolean ``(B, L)`` masks over key positions; ``p_true``
    ``(B,)`` the model's probability of the true label (for ACMC and DTAP).

    Returns a dict of numpy arrays:
      ``mass`` ``(n_layers, H, B)``: :math:`\sum_j A[l,b,h,q_b,j] R_{bj} V_{bj}`;
      ``attention_confidence`` ``(n_layers, H)``: AC at ``tau`` of each head's mass;
      ``rollout_mass`` ``(B,)``: the mass of row ``q_b`` of the rollout through all layers
      (heads averaged, residual identity added); ``rollout_attention_confidence`` (float);
      with ``p_true``: ``acmc`` ``(n_layers, H)``, ``rollout_acmc`` and ``rollout_dtap``
      (the DTAP heatmap of rollout mass vs ``p_true``, percent, rows = mass bins).
    """
    a = np.asarray(attn.detach().cpu().numpy() if hasattr(attn, "detach") else attn, dtype=np.float64)
    if a.ndim != 5:
        raise ValueError(f"attn: expected (n_layers, B, H, L_q, L_k), got shape {a.shape}")
    n_layers, b, h, _, _ = a.shape
    rows = _rows(a.transpose(0, 2, 1, 3, 4), query)  # (n_layers, H, B, L_k)
    mass = np.stack([np.stack([relevant_mass(rows[l, k], relevant, valid) for k in range(h)])
                     for l in range(n_layers)])
    out: dict[str, Any] = {
        "mass": mass,
        "attention_confidence": np.array([[attention_confidence(mass[l, k], tau) for k in range(h)]
                                          for l in range(n_layers)]),
    }
    if a.shape[-1] == a.shape[-2]:
        roll = attention_rollout(a.mean(axis=2))  # (B, L, L)
        out["rollout_mass"] = relevant_mass(_rows(roll, query), relevant, valid)
        out["rollout_attention_confidence"] = attention_confidence(out["rollout_mass"], tau)
    if p_true is not None:
        out["acmc"] = np.array([[acmc(mass[l, k], p_true, tau, kappa) for k in range(h)] for l in range(n_layers)])
        if "rollout_mass" in out:
            out["rollout_acmc"] = acmc(out["rollout_mass"], p_true, tau, kappa)
            out["rollout_dtap"] = dtap_histogram(out["rollout_mass"], p_true, mass_edges)
    return out
