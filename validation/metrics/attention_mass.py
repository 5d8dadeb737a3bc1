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
