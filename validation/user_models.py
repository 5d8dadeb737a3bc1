r"""Apply the QK/OV learning-rate ratio to your own torch models.

qkov's intervention is :math:`\eta_{QK} = \text{ratio}\cdot\eta_{OV}`: query and key
projections learn ``ratio`` times faster than value and output projections. For a model
built from

(a) HF-style attention modules with ``q_proj``, ``k_proj``, ``v_proj`` and ``o_proj`` (or
    ``out_proj``) submodules: QK = ``q_proj``, ``k_proj`` parameters (weights and biases),
    OV = ``v_proj``, ``o_proj`` parameters;
(b) :class:`torch.nn.MultiheadAttention` (also inside :class:`~torch.nn.TransformerEncoderLayer`,
    :class:`~torch.nn.TransformerEncoder`, decoder layers, ...): QK = the q and k slices of
    ``in_proj_weight``/``in_proj_bias`` (and ``bias_k``), OV = the v slice (and ``bias_v``)
    and ``out_proj``;

:func:`qkov_param_groups` returns optimizer parameter groups; everything else is at
``lr_other``.

Why the split: ``nn.MultiheadAttention`` stores :math:`W_Q, W_K, W_V` stacked in one
``in_proj_weight`` Parameter :math:`(3E, E)`, and an optimizer's learning rate is per
Parameter. Scaling the gradient of the q/k rows would give the right rates under SGD
but does nothing under Adam/AdamW, whose update :math:`m/\sqrt{v}` is invariant to a
constant gradient scale. :func:`split_mha_in_proj` therefore re-parametrizes
``in_proj_weight`` with :mod:`torch.nn.utils.parametrize` as the concatenation of three
Parameters ``original0`` (q), ``original1`` (k), ``original2`` (v): the module computes
exactly the same function, and each slice can get its own learning rate with any optimizer.

State dict: after the split, ``in_proj_weight`` is stored as
``<mha>.parametrizations.in_proj_weight.original0/1/2`` (likewise ``in_proj_bias``); such a
state dict loads into a model split the same way. :func:`merge_mha_in_proj` (or
:func:`merge_all`) folds the slices back into plain ``in_proj_weight``/``in_proj_bias``
Parameters, giving the standard state dict of the unmodified module.
"""

from __future__ import annotations

from typing import Any, Iterator

import torch
from torch import nn
from torch.nn.utils import parametrize

from validation.param_groups import circuit_param_groups


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


def is_split(mha: nn.MultiheadAttention) -> bool:
    """Whether :func:`split_mha_in_proj` has been applied to ``mha``."""
    return any(parametrize.is_parametrized(mha, n) and isinstance(mha.parametrizations[n][0], ConcatSlices)
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
            if isinstance(mha.parametrizations[name][0], ConcatSlices):
                continue
            raise ValueError(f"{name} already carries another parametrization; cannot split it")
        parametrize.register_parametrization(mha, name, ConcatSlices(), unsafe=True)
    return mha


def merge_mha_in_proj(mha: nn.MultiheadAttention) -> nn.MultiheadAttention:
    """Undo :func:`split_mha_in_proj`: plain ``in_proj_weight``/``in_proj_bias`` with the current values."""
    for name in ("in_proj_weight", "in_proj_bias"):
        if parametrize.is_parametrized(mha, name) and isinstance(mha.parametrizations[name][0], ConcatSlices):
            parametrize.remove_parametrizations(mha, name, leave_parametrized=True)
    return mha


def merge_all(model: nn.Module) -> nn.Module:
    """:func:`merge_mha_in_proj` on every ``nn.MultiheadAttention`` in ``model``."""
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention):
            merge_mha_in_proj(m)
    return model


def _slices(mha: nn.MultiheadAttention, name: str) -> list[nn.Parameter]:
    if getattr(mha, name, None) is None:
        return []
    orig = mha.parametrizations[name].original0, mha.parametrizations[name].original1, \
        mha.parametrizations[name].original2
    return list(orig)


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
    if mha.bias_k is not None:
        qk.append(mha.bias_k)
    if mha.bias_v is not None:
        ov.append(mha.bias_v)
    ov += list(mha.out_proj.parameters())
    return qk, ov


def _hf_out(module: nn.Module) -> nn.Module | None:
    for name in ("o_proj", "out_proj"):
        sub = getattr(module, name, None)
        if isinstance(sub, nn.Module):
            return sub
    return None


def _is_hf_attention(module: nn.Module) -> bool:
    return (not isinstance(module, nn.MultiheadAttention)
            and all(isinstance(getattr(module, n, None), nn.Module) for n in ("q_proj", "k_proj", "v_proj"))
            and _hf_out(module) is not None)


def _unique(params: list[nn.Parameter]) -> list[nn.Parameter]:
    seen: set[int] = set()
    out = []
    for p in params:
        if id(p) not in seen:  # shared (tied) projections are listed once
            seen.add(id(p))
            out.append(p)
    return out


def iter_attention(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """``(name, module)`` of every attention module :func:`qkov_param_groups` recognises."""
    for name, m in model.named_modules():
        if isinstance(m, nn.MultiheadAttention) or _is_hf_attention(m):
            yield name, m


def qk_ov_parameters(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """The QK and OV parameters of every recognised attention module (splitting MHAs in place)."""
    qk: list[nn.Parameter] = []
    ov: list[nn.Parameter] = []
    found = False
    for _, m in iter_attention(model):
        found = True
        if isinstance(m, nn.MultiheadAttention):
            a, b = _mha_circuits(m)
        else:
            a = list(m.q_proj.parameters()) + list(m.k_proj.parameters())
            b = list(m.v_proj.parameters()) + list(_hf_out(m).parameters())  # type: ignore[union-attr]
        qk += a
        ov += b
    qk, ov = _unique(qk), _unique(ov)
    if not found:
        raise ValueError(f"{type(model).__name__}: no attention module found (nn.MultiheadAttention or a "
                         "module with q_proj, k_proj, v_proj and o_proj/out_proj)")
    return qk, ov


def qkov_param_groups(model: nn.Module, lr_ov: float, ratio: float, lr_other: float | None = None,
                      **group_options: Any) -> list[dict[str, Any]]:
    r"""Optimizer parameter groups with :math:`\eta_{QK} = \text{ratio}\cdot\eta_{OV}` for any supported model.

    Splits every ``nn.MultiheadAttention`` in ``model`` in place (:func:`split_mha_in_proj`),
    then builds the groups with :func:`validation.param_groups.circuit_param_groups`:
    ``"qk"`` at ``ratio * lr_ov``, ``"ov"`` at ``lr_ov``, ``"other"`` (embeddings, feed-forward,
    norms, heads) at ``lr_other`` (default ``lr_ov``). Extra keyword arguments (e.g.
    ``weight_decay``) go into every group. Create the optimizer from the returned groups::

        opt = torch.optim.AdamW(qkov_param_groups(model, lr_ov=5e-5, ratio=30))
    """
    qk, ov = qk_ov_parameters(model)
    ids = {id(p) for p in qk + ov}
    other = [p for p in model.parameters() if id(p) not in ids]
    return circuit_param_groups(qk, ov, other, lr_ov=lr_ov, ratio=ratio, lr_other=lr_other, **group_options)
