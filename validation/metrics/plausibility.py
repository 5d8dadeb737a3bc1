r"""Plausibility: agreement of attention with human rationales, as ERASER's scorer computes it.

All functions take per-instance token masks or scores ``(N, L)`` (numpy or torch, a 1-D
input is one instance) and mirror ``rationale_benchmark/metrics.py`` of ERASER
(DeYoung et al., 2020), with one instance per row (ERASER's (annotation, document) key).

**Token F1** (``score_hard_rationale_predictions``, ``instance_macro``): per instance
:math:`P_i = |G_i\cap H_i|/|H_i|`, :math:`R_i = |G_i\cap H_i|/|G_i|` (0 when the set is
empty), :math:`F_i = 2P_iR_i/(P_i+R_i)` (0 if either is 0), averaged over the instances
with a gold or a predicted token (rows where both are empty are skipped, as ERASER
never sees them).

**IOU-F1** (``partial_match_score``): rationales are split into spans (maximal runs of
consecutive True tokens). A predicted span :math:`h` counts as a true positive when its
best IOU :math:`\max_g |h\cap g|/|h\cup g|` with a gold span of the same instance is at
least the threshold (0.5). Per instance :math:`P_i = TP_i/\#\text{pred spans}`,
:math:`R_i = TP_i/\#\text{gold spans}`; the macro score (default, the number ERASER's
paper reports) is :math:`F1(\bar P, \bar R)` with :math:`\bar P` averaged over instances
with predicted spans and :math:`\bar R` over instances with gold spans. ``average="micro"``
pools the counts.

**AUPRC** (soft scores): per instance, the area under the precision-recall curve of the
scores against the gold mask over the valid tokens, averaged over instances. Default:
scikit-learn's ``average_precision_score`` (step-wise AP), skipping instances whose gold
mask is all-True or all-False (AP is undefined or trivial there; ERASER's
``average_precision`` does the same). ``method="trapezoid"`` reproduces ERASER's ``auprc``
key (``auc(recall, precision)`` of ``precision_recall_curve``, every instance kept).

**Hard rationales from attention**: :func:`hard_rationale` keeps the top-:math:`k`
valid tokens of each row; :func:`mean_rationale_length` gives the documented default
:math:`k` = the mean number of gold tokens per instance with a rationale, rounded,
at least 1 (one :math:`k` for the whole data set, as ERASER fixes k per data set).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import as_2d, same_shape

LOWER_IS_BETTER = {"token_f1": False, "iou_f1": False, "auprc": False}


def _f1(p: float, r: float) -> float:
    return 0.0 if p == 0 or r == 0 else 2 * p * r / (p + r)


def _masks(pred: Any, gold: Any) -> tuple[np.ndarray, np.ndarray]:
    h = as_2d(pred, name="pred_mask", dtype=bool)
    g = as_2d(gold, name="gold_mask", dtype=bool)
    same_shape(("pred_mask", h), ("gold_mask", g))
    return h, g


def mask_to_spans(mask: Any) -> list[tuple[int, int]]:
    """Maximal runs of True in a 1-D mask as ``(start, end)`` pairs, start inclusive, end exclusive."""
    m = np.asarray(mask, dtype=bool).reshape(-1).astype(np.int8)
    d = np.diff(np.concatenate([[0], m, [0]]))
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return [(int(s), int(e)) for s, e in zip(starts, ends)]


def token_prf(pred_mask: Any, gold_mask: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Per-instance token precision, recall, F1 and a flag of the rows ERASER scores, each ``(N,)``.

    .. math:: P_i = \frac{|G_i\cap H_i|}{|H_i|},\ R_i = \frac{|G_i\cap H_i|}{|G_i|},\ F_i = \frac{2P_iR_i}{P_i+R_i}
    """
    h, g = _masks(pred_mask, gold_mask)
    tp = (h & g).sum(1).astype(np.float64)
    nh, ng = h.sum(1), g.sum(1)
    p = np.divide(tp, nh, out=np.zeros_like(tp), where=nh > 0)
    r = np.divide(tp, ng, out=np.zeros_like(tp), where=ng > 0)
    f = np.array([_f1(a, b) for a, b in zip(p, r)], dtype=np.float64)
    return p, r, f, (nh > 0) | (ng > 0)


def token_f1(pred_mask: Any, gold_mask: Any, *, per_instance: bool = False) -> Any:
    r"""ERASER token F1: the mean over scored instances of the per-instance token F1.

    .. math:: \text{TokenF1} = \frac{1}{|S|}\sum_{i\in S} F_i,\quad S = \{i: G_i\cup H_i \ne \emptyset\}

    Returns a float (NaN when no instance has a gold or predicted token), or the ``(N,)``
    per-instance F1 when ``per_instance``. Higher is better.
    """
    _, _, f, scored = token_prf(pred_mask, gold_mask)
    if per_instance:
        return f
    return float(f[scored].mean()) if scored.any() else float("nan")


def _span_iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    return 0.0 if union == 0 else inter / union


def iou_counts(pred_masks: Any, gold_masks: Any, threshold: float = 0.5
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per instance: true-positive predicted spans (best IOU >= threshold), #predicted spans, #gold spans."""
    h, g = _masks(pred_masks, gold_masks)
    tps, n_pred, n_gold = [], [], []
    for hi, gi in zip(h, g):
        ps, gs = mask_to_spans(hi), mask_to_spans(gi)
        tps.append(sum(1 for p in ps if max((_span_iou(p, t) for t in gs), default=0.0) >= threshold))
        n_pred.append(len(ps))
        n_gold.append(len(gs))
    return np.array(tps, dtype=np.float64), np.array(n_pred), np.array(n_gold)


def iou_f1(pred_masks: Any, gold_masks: Any, threshold: float = 0.5, *, average: str = "macro") -> float:
    r"""ERASER IOU-F1 (partial match at IOU :math:`\ge` ``threshold``).

    .. math::
        \bar P = \operatorname{mean}_{i: n^H_i>0} \frac{TP_i}{n^H_i},\quad
        \bar R = \operatorname{mean}_{i: n^G_i>0} \frac{TP_i}{n^G_i},\quad
        \text{IOU-F1} = \frac{2\bar P\bar R}{\bar P+\bar R}

    (``average="macro"``, ERASER's reported number); ``"micro"`` uses pooled counts
    :math:`\sum TP/\sum n^H` and :math:`\sum TP/\sum n^G`. Higher is better.
    """
    tp, nh, ng = iou_counts(pred_masks, gold_masks, threshold)
    if average == "micro":
        p = tp.sum() / nh.sum() if nh.sum() > 0 else 0.0
        r = tp.sum() / ng.sum() if ng.sum() > 0 else 0.0
    elif average == "macro":
        p = float(np.mean(tp[nh > 0] / nh[nh > 0])) if (nh > 0).any() else 0.0
        r = float(np.mean(tp[ng > 0] / ng[ng > 0])) if (ng > 0).any() else 0.0
    else:
        raise ValueError(f"average={average!r}: must be 'macro' or 'micro'")
    return _f1(float(p), float(r))


def precision_recall_points(gold: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Precision and recall at every distinct score threshold of one instance, as scikit-learn's
    ``precision_recall_curve`` returns them (recall decreasing, ending at ``(P, R) = (1, 0)``).

    ``gold`` ``(L,)`` bool with at least one True, ``scores`` ``(L,)`` finite. Sorted by decreasing score,
    with :math:`k_j` the last index of the :math:`j`-th distinct score,
    :math:`TP_j = \sum_{n\le k_j} g_n`, :math:`FP_j = k_j + 1 - TP_j`, :math:`P_j = TP_j/(k_j+1)`,
    :math:`R_j = TP_j / TP_{\text{last}}`. Ties enter together, so the order within a tie does not matter.
    """
    order = np.argsort(scores, kind="mergesort")[::-1]
    s, g = scores[order], gold[order].astype(np.float64)
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]
    tps = np.cumsum(g)[last]
    precision, recall = tps / (last + 1.0), tps / tps[-1]
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0]


def auprc(scores: Any, gold_mask: Any, valid: Any = None, *, method: str = "average_precision",
          per_instance: bool = False) -> Any:
    r"""Mean over instances of the area under the precision-recall curve of ``scores`` vs ``gold_mask``.

    .. math:: \text{AP}_i = \sum_n (R_{i,n} - R_{i,n-1}) P_{i,n}

    ``method="average_precision"`` (default) skips instances whose valid gold tokens are
    all one class; ``"trapezoid"`` is ERASER's ``auprc`` (keeps them). Returns a float (NaN
    if no instance is scored), or per-instance values ``(N,)`` (NaN where skipped) when
    ``per_instance``. Higher is better. The curve is :func:`precision_recall_points` (scikit-learn's
    ``precision_recall_curve``; AP is its ``average_precision_score``, the trapezoid its ``auc``: equal
    to them to rounding, a test), computed in numpy because scikit-learn's input validation cost
    ~1 ms per instance and made checkpoints slower than training.
    """
    s = as_2d(scores, name="scores", dtype=np.float64)
    g = as_2d(gold_mask, name="gold_mask", dtype=bool)
    same_shape(("scores", s), ("gold_mask", g))
    v = np.ones_like(g) if valid is None else as_2d(valid, name="valid", dtype=bool)
    same_shape(("scores", s), ("valid", v))
    if method not in ("average_precision", "trapezoid"):
        raise ValueError(f"method={method!r}: must be 'average_precision' or 'trapezoid'")
    out = np.full(s.shape[0], np.nan)
    for i in range(s.shape[0]):
        yi, si = g[i][v[i]], s[i][v[i]]
        if yi.size == 0:
            continue
        if not np.all(np.isfinite(si)):
            raise ValueError(f"scores: instance {i} has NaN or infinite scores at valid positions")
        n_pos = int(yi.sum())
        if n_pos == 0 or (method == "average_precision" and n_pos == yi.size):
            continue  # AP: all one class; trapezoid: the curve needs a positive (ERASER would get NaN)
        precision, recall = precision_recall_points(yi, si)
        if method == "average_precision":
            out[i] = -float(np.sum(np.diff(recall) * precision[:-1]))
        else:
            out[i] = -float(np.trapezoid(precision, recall))  # recall decreases along the curve
    if per_instance:
        return out
    return float(np.nanmean(out)) if np.isfinite(out).any() else float("nan")


def mean_rationale_length(gold_masks: Any) -> int:
    """Default hard-rationale size: the mean gold tokens per instance that has any, rounded, at least 1."""
    g = as_2d(gold_masks, name="gold_masks", dtype=bool)
    n = g.sum(1)
    n = n[n > 0]
    return max(1, int(np.floor(n.mean() + 0.5))) if n.size else 1


def hard_rationale(scores: Any, valid: Any, n_tokens: Any) -> np.ndarray:
    """Top-``n_tokens`` valid positions of each row by score (ties: earlier first), ``(N, L)`` bool.

    ``n_tokens`` is one int or one per instance; it is capped at the row's valid count.
    """
    s = as_2d(scores, name="scores", dtype=np.float64)
    v = as_2d(valid, name="valid", dtype=bool) if valid is not None else np.ones(s.shape, dtype=bool)
    same_shape(("scores", s), ("valid", v))
    k = np.broadcast_to(np.asarray(n_tokens, dtype=np.int64), (s.shape[0],))
    if (k < 0).any():
        raise ValueError("n_tokens: must be >= 0")
    order = np.argsort(-np.where(v, s, -np.inf), axis=1, kind="stable")
    out = np.zeros(s.shape, dtype=bool)
    for i in range(s.shape[0]):
        out[i, order[i, :min(int(k[i]), int(v[i].sum()))]] = True
    return out


token_f1.lower_is_better = False  # type: ignore[attr-defined]
iou_f1.lower_is_better = False  # type: ignore[attr-defined]
auprc.lower_is_better = False  # type: ignore[attr-defined]
