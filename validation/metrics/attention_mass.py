r"""Attention mass on the relevant tokens of each instance.

For instance :math:`i` with attention weights :math:`a_{i\ell}` over positions
:math:`\ell`, a relevant-token mask :math:`R_{i\ell}` and a validity (non-padding) mask
:math:`V_{i\ell}`:

.. math::
    \text{mass}_i = \sum_{\ell} a_{i\ell}\, R_{i\ell}\, V_{i\ell}.

The attention rows are used as given (not renormalised over valid positions): a model
that puts weight on padding has that weight counted as *not* on the relevant tokens.
Higher is better.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import as_2d, same_shape

LOWER_IS_BETTER = False


def relevant_mass(attn: Any, relevant: Any, valid: Any = None) -> np.ndarray:
    r"""Attention mass on relevant, valid positions, per instance.

    .. math:: \text{mass}_i = \sum_\ell a_{i\ell} R_{i\ell} V_{i\ell}

    Args:
        attn: attention weights ``(N, L)`` (numpy or torch), rows normally summing to 1.
        relevant: boolean ``(N, L)``, True at relevant tokens (e.g. the answer span,
            a rationale, the class's distinct tokens).
        valid: optional boolean ``(N, L)`` padding mask, True at real tokens.

    Returns:
        ``np.ndarray`` of shape ``(N,)``, float64.
    """
    a = as_2d(attn, name="attn", dtype=np.float64)
    r = as_2d(relevant, name="relevant", dtype=bool)
    same_shape(("attn", a), ("relevant", r))
    if valid is not None:
        v = as_2d(valid, name="valid", dtype=bool)
        same_shape(("attn", a), ("valid", v))
        r = r & v
    if not np.all(np.isfinite(a)):
        raise ValueError("attn: contains NaN or infinite values")
    return np.where(r, a, 0.0).sum(axis=1)


relevant_mass.lower_is_better = LOWER_IS_BETTER  # type: ignore[attr-defined]


def attention_rollout(attn_layers: Any, residual: bool = True) -> np.ndarray:
    r"""Attention rollout (Abnar & Zuidema, 2020) through a stack of layers.

    With head-averaged, row-stochastic attention :math:`A_l` (rows = query positions) of
    layers :math:`l = 1..n`:

    .. math::
        \tilde A_l = \tfrac12 A_l + \tfrac12 I \ (\text{if residual}), \qquad
        R = \tilde A_n \tilde A_{n-1} \cdots \tilde A_1 ,

    so row :math:`i` of :math:`R` distributes output position :math:`i` over the input
    tokens (rows still sum to 1). Feed a row of :math:`R` to :func:`relevant_mass` for the
    rollout mass; the layer average is ``attn_layers.mean(0)`` and the max over layers
    ``relevant_mass`` of each layer, maximised.

    Args:
        attn_layers: ``(n_layers, B, L, L)`` (average the heads first).
        residual: add the identity for the residual stream (the usual rollout).

    Returns:
        ``(B, L, L)`` float64.
    """
    a = np.asarray(attn_layers.detach().cpu().numpy() if hasattr(attn_layers, "detach") else attn_layers,
                   dtype=np.float64)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attn_layers: expected shape (n_layers, B, L, L), got {a.shape}")
    eye = np.eye(a.shape[-1])
    out = np.broadcast_to(eye, a.shape[1:]).copy()
    for layer in a:
        step = 0.5 * layer + 0.5 * eye if residual else layer
        out = step @ out
    return out
