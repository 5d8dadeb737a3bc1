r"""Label-free sharpness of attention rows: entropy, normalised entropy, max weight, mass span.

An attention row :math:`a \in \Delta^{n-1}` over the :math:`n` keys a query may see (its
*support*: the valid, unmasked keys) is sharp when little of it carries most of the weight.
No relevant-token labels are needed:

* :func:`attention_entropy` :math:`H(a) = -\sum_j a_j \log a_j` (nats; :math:`0 \log 0 = 0`);
* :func:`normalized_entropy` :math:`H(a)/\log n`, in :math:`[0, 1]` (1 = uniform over the
  support, 0 = one key); undefined (NaN) for :math:`n = 1`;
* :func:`max_weight` :math:`\max_j a_j`;
* :func:`mass_span` the smallest number of keys whose weights sum to at least ``mass``
  (e.g. 0.9): sort the row in decreasing order, count until the cumulative sum reaches it.

Every function takes an array ``(..., L_k)`` of rows and an optional boolean ``valid`` mask
broadcastable to it (the support; default: every key), and returns
``(...)``. :func:`sharpness_summary` averages them over queries and instances for a read-out
``(n_layers, B, H, L_q, L_k)`` (:func:`validation.user_attention.read_attention`), per layer
and head.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

DEFAULT_MASS = 0.9


def _rows(attn: Any, valid: Any = None) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(attn.detach().cpu().numpy() if hasattr(attn, "detach") else attn, dtype=np.float64)
    if valid is None:
        v = np.ones(a.shape, dtype=bool)
    else:
        v = np.broadcast_to(np.asarray(valid.cpu().numpy() if hasattr(valid, "cpu") else valid, dtype=bool), a.shape)
    return np.where(v, a, 0.0), v


def attention_entropy(attn: Any, valid: Any = None) -> np.ndarray:
    r""":math:`-\sum_j a_j \log a_j` over each row's support (nats), shape ``attn.shape[:-1]``."""
    a, _ = _rows(attn, valid)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0)
    return -terms.sum(axis=-1)


def support_size(attn: Any, valid: Any = None) -> np.ndarray:
    """Number of keys in each row's support, shape ``attn.shape[:-1]``."""
    _, v = _rows(attn, valid)
    return v.sum(axis=-1)


def normalized_entropy(attn: Any, valid: Any = None) -> np.ndarray:
    r""":math:`H(a) / \log n` with :math:`n` the row's support size; NaN where :math:`n \le 1`."""
    n = support_size(attn, valid).astype(np.float64)
    h = attention_entropy(attn, valid)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 1, h / np.log(np.maximum(n, 2.0)), np.nan)


def max_weight(attn: Any, valid: Any = None) -> np.ndarray:
    r""":math:`\max_j a_j` over each row's support."""
    a, _ = _rows(attn, valid)
    return a.max(axis=-1)


def mass_span(attn: Any, mass: float = DEFAULT_MASS, valid: Any = None) -> np.ndarray:
    """Smallest number of keys holding at least ``mass`` of each row's weight (an int array).

    Rows are normalised over their support first, so ``mass`` is a fraction of what the row
    has (``0 < mass <= 1``); a tolerance of 1e-12 absorbs rounding in the cumulative sum.
    """
    if not 0 < mass <= 1:
        raise ValueError(f"mass: {mass!r}: must be in (0, 1]")
    a, v = _rows(attn, valid)
    total = a.sum(axis=-1, keepdims=True)
    p = np.divide(a, total, out=np.zeros_like(a), where=total > 0)
    c = np.cumsum(-np.sort(-p, axis=-1), axis=-1)
    span = (c < mass - 1e-12).sum(axis=-1) + 1
    return np.minimum(span, v.sum(axis=-1)).astype(np.int64)


def sharpness_summary(attn: Any, valid: Any = None, *, mass: float = DEFAULT_MASS,
                      queries: Any = None, causal: bool | None = None) -> dict[str, np.ndarray]:
    """Per layer and head ``(n_layers, H)``: the means over instances and query rows of each measure.

    ``attn`` ``(n_layers, B, H, L_q, L_k)``; ``valid`` a boolean ``(B, L_k)`` key mask (padding
    off) or anything broadcastable to ``attn``; ``causal`` restricts query ``i`` to keys
    ``j <= i`` (default: when no weight lies above the diagonal); ``queries`` an optional boolean ``(B, L_q)`` mask of the query
    rows to average (default: all rows with a nonempty support). Keys: ``entropy``,
    ``normalized_entropy`` (NaN rows, support 1, skipped), ``max_weight``, ``mass_span``
    (mean number of keys holding ``mass``), ``support`` (mean support size).
    """
    a = np.asarray(attn.detach().cpu().numpy() if hasattr(attn, "detach") else attn, dtype=np.float64)
    if a.ndim != 5:
        raise ValueError(f"attn: expected (n_layers, B, H, L_q, L_k), got shape {a.shape}")
    v = np.ones(a.shape, dtype=bool)
    if valid is not None:
        vv = np.asarray(valid.cpu().numpy() if hasattr(valid, "cpu") else valid, dtype=bool)
        v = np.broadcast_to(vv[None, :, None, None, :] if vv.ndim == 2 else vv, a.shape)
    lq, lk = a.shape[-2:]
    if causal is None:
        causal = lq == lk and lq > 1 and not bool(np.triu(np.ones((lq, lk), dtype=bool), 1)[None, None, None]
                                                  .__and__(a != 0).any())
    if causal:
        v = v & np.tril(np.ones((lq, lk), dtype=bool))
    n = support_size(a, v)
    rows = n > 0
    if queries is not None:
        q = np.asarray(queries.cpu().numpy() if hasattr(queries, "cpu") else queries, dtype=bool)
        rows = rows & np.broadcast_to(q[None, :, None, :], rows.shape)

    def mean(x: np.ndarray) -> np.ndarray:
        x = np.where(rows, x.astype(np.float64), np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a head with no defined row: NaN
            return np.nanmean(x.transpose(0, 2, 1, 3).reshape(a.shape[0], a.shape[2], -1), axis=-1)

    return {"entropy": mean(attention_entropy(a, v)), "normalized_entropy": mean(normalized_entropy(a, v)),
            "max_weight": mean(max_weight(a, v)), "mass_span": mean(mass_span(a, mass, v)),
            "support": mean(n)}
