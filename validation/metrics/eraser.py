r"""ERASER faithfulness: comprehensiveness, sufficiency and their AOPC (DeYoung et al., 2020).

For instance :math:`x` the model predicts class :math:`j = \arg\max_c p_c(x)` (or a given
target). Let :math:`r_k` be the top-:math:`k\%` valid tokens by the explanation scores
(here: attention). Then

.. math::
    \text{comp}_k(x) = p_j(x) - p_j(x \setminus r_k), \qquad
    \text{suff}_k(x) = p_j(x) - p_j(r_k),

where :math:`x \setminus r_k` removes the tokens of :math:`r_k` and :math:`r_k` alone keeps
only them. Higher comprehensiveness is better (removing the rationale hurts), lower
sufficiency is better (the rationale alone suffices). AOPC over the bins
:math:`B = \{1, 5, 10, 20, 50\}\%`:

.. math::
    \text{AOPC} = \frac{1}{|B|}\sum_{k\in B} \text{comp}_k \quad\text{(default, ERASER's scorer)},
    \qquad \frac{1}{|B|+1}\sum_{k\in \{0\}\cup B} \text{comp}_k \quad(\texttt{include\_zero=True}),

where the :math:`k=0` term is the unperturbed input and contributes 0, so the second form is
exactly :math:`\tfrac{5}{6}` of the first (likewise for sufficiency). ERASER's
``metrics.py`` averages the per-bin differences over instances and bins (``np.average``),
which is the default here.

**Rounding of k%.** An instance with :math:`n` valid tokens keeps
:math:`\lceil k\, n\rceil` tokens in :math:`r_k` (``math.ceil``), the convention of ERASER's
soft-score baselines; so :math:`r_k` has at least one token whenever :math:`n\ge1`, and
:math:`k\,n` that is an integer up to rounding error is not rounded up. Ties in the scores are
broken by position (earlier first).

**Removal** is delegated to the model: ``predict_proba(token_ids, keep)`` receives a boolean
``keep`` mask (False = removed: masked out of attention or replaced), so the functions here
are model-agnostic. Positions that are neither valid nor in ``always_keep`` (padding) are
passed with ``keep=False``; ``always_keep`` marks positions that are never candidates and
always kept (e.g. the query token a classifier reads from, special tokens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

from ._arrays import as_2d, same_shape

AOPC_FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.10, 0.20, 0.50)
"""The ERASER bins k of the AOPC, as fractions of the valid tokens."""

LOWER_IS_BETTER: dict[str, bool] = {
    "comprehensiveness": False,
    "sufficiency": True,
    "comprehensiveness_aopc": False,
    "sufficiency_aopc": True,
}
"""Metric -> whether lower is better."""

PredictProba = Callable[[torch.Tensor, torch.Tensor], Any]
"""``predict_proba(token_ids (B, L) long, keep (B, L) bool) -> probs (B, C)``."""


def n_top_tokens(n_valid: int, k_frac: float) -> int:
    r"""Number of tokens in the top-:math:`k` rationale: :math:`\lceil k\,n \rceil` (0 when :math:`k=0`).

    A product :math:`k n` within 1e-9 of an integer counts as that integer, so
    ``n_top_tokens(30, 0.1) == 3`` despite floating point.
    """
    if not 0.0 <= k_frac <= 1.0:
        raise ValueError(f"k_frac={k_frac!r}: must be in [0, 1]")
    if n_valid < 0:
        raise ValueError(f"n_valid={n_valid!r}: must be >= 0")
    return min(n_valid, max(0, math.ceil(k_frac * n_valid - 1e-9)))


def top_k_mask(scores: Any, valid: Any, k_frac: float) -> Any:
    r"""Boolean mask of the top-:math:`\lceil k n_i\rceil` valid positions of each row by score.

    Args:
        scores: explanation scores ``(B, L)`` (numpy or torch), higher = more important.
        valid: boolean ``(B, L)``, True at candidate positions.
        k_frac: fraction :math:`k \in [0, 1]`.

    Returns:
        ``(B, L)`` boolean mask of the same kind as ``scores`` (torch tensor on its device,
        or numpy array). Ties are broken by position, earlier first.
    """
    is_torch = isinstance(scores, torch.Tensor)
    s = as_2d(scores, name="scores", dtype=np.float64)
    v = as_2d(valid, name="valid", dtype=bool)
    same_shape(("scores", s), ("valid", v))
    if np.any(np.isnan(s[v])):
        raise ValueError("scores: NaN at a valid position")
    out = np.zeros_like(v)
    keyed = np.where(v, s, -np.inf)
    order = np.argsort(-keyed, axis=1, kind="stable")
    for i in range(s.shape[0]):
        n = n_top_tokens(int(v[i].sum()), k_frac)
        out[i, order[i, :n]] = True
    if is_torch:
        return torch.from_numpy(out).to(scores.device)
    return out


def _as_bool_tensor(x: Any, name: str, like: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(as_2d(x, name=name, dtype=bool)).to(like.device)
    if t.shape != like.shape:
        raise ValueError(f"{name}: shape {tuple(t.shape)} differs from token_ids shape {tuple(like.shape)}")
    return t


def _probs(predict_proba: PredictProba, token_ids: torch.Tensor, keep: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        p = predict_proba(token_ids, keep)
    p = p.detach().cpu().double().numpy() if isinstance(p, torch.Tensor) else np.asarray(p, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != token_ids.shape[0]:
        raise ValueError(f"predict_proba: expected probabilities (B={token_ids.shape[0]}, C), got shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("predict_proba: returned NaN or infinite probabilities")
    return p


@dataclass(frozen=True)
class FaithfulnessResult:
    """Model probabilities on the full input and on each perturbation.

    Attributes:
        fractions: the bins :math:`k` ``(K,)``.
        predicted: the class :math:`j` scored per instance ``(B,)``.
        probs: :math:`p(x)` ``(B, C)``.
        probs_without: :math:`p(x\\setminus r_k)` ``(K, B, C)`` (comprehensiveness inputs).
        probs_only: :math:`p(r_k)` ``(K, B, C)`` (sufficiency inputs).
        rationale_masks: :math:`r_k` ``(K, B, L)`` boolean.
    """

    fractions: np.ndarray
    predicted: np.ndarray
    probs: np.ndarray
    probs_without: np.ndarray
    probs_only: np.ndarray
    rationale_masks: np.ndarray

    def _p_j(self, p: np.ndarray) -> np.ndarray:
        return p[:, np.arange(len(self.predicted)), self.predicted].T  # (K, B, C) -> (B, K)

    @property
    def comprehensiveness_points(self) -> np.ndarray:
        r""":math:`p_j(x) - p_j(x\setminus r_k)` ``(B, K)``."""
        return self.probs[np.arange(len(self.predicted)), self.predicted][:, None] - self._p_j(self.probs_without)

    @property
    def sufficiency_points(self) -> np.ndarray:
        r""":math:`p_j(x) - p_j(r_k)` ``(B, K)``."""
        return self.probs[np.arange(len(self.predicted)), self.predicted][:, None] - self._p_j(self.probs_only)

    def comprehensiveness_aopc(self, include_zero: bool = False) -> np.ndarray:
        """Per-instance AOPC of comprehensiveness ``(B,)`` (see :func:`aopc`)."""
        return aopc(self.comprehensiveness_points, include_zero=include_zero)

    def sufficiency_aopc(self, include_zero: bool = False) -> np.ndarray:
        """Per-instance AOPC of sufficiency ``(B,)`` (see :func:`aopc`)."""
        return aopc(self.sufficiency_points, include_zero=include_zero)


def eraser_scores(predict_proba: PredictProba, token_ids: torch.Tensor, scores: Any, valid: Any,
                  fractions: Sequence[float] = AOPC_FRACTIONS, *, always_keep: Any = None,
                  target: Any = None) -> FaithfulnessResult:
    r"""Run the model on :math:`x`, :math:`x\setminus r_k` and :math:`r_k` for every bin :math:`k`.

    Args:
        predict_proba: ``(token_ids (B, L) long, keep (B, L) bool) -> probs (B, C)``.
        token_ids: ``(B, L)`` LongTensor.
        scores: explanation (attention) scores ``(B, L)``.
        valid: ``(B, L)`` boolean, True at tokens that may be ranked and removed.
        fractions: the bins :math:`k` (default :data:`AOPC_FRACTIONS`).
        always_keep: optional ``(B, L)`` boolean, positions kept in every perturbation.
        target: optional ``(B,)`` classes to score instead of the predicted ones.

    Calls ``predict_proba`` ``1 + 2K`` times, each on the whole batch, under ``no_grad``.
    """
    token_ids = torch.as_tensor(token_ids)
    if token_ids.ndim != 2:
        raise ValueError(f"token_ids: expected shape (B, L), got {tuple(token_ids.shape)}")
    v = _as_bool_tensor(valid, "valid", token_ids)
    ak = torch.zeros_like(v) if always_keep is None else _as_bool_tensor(always_keep, "always_keep", token_ids)
    v = v & ~ak
    s = scores.detach().cpu() if isinstance(scores, torch.Tensor) else scores
    s = as_2d(s, name="scores", dtype=np.float64)
    if s.shape != tuple(token_ids.shape):
        raise ValueError(f"scores: shape {s.shape} differs from token_ids shape {tuple(token_ids.shape)}")
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or fr.size == 0:
        raise ValueError(f"fractions: expected a non-empty list, got {fractions!r}")

    probs = _probs(predict_proba, token_ids, v | ak)
    if target is None:
        predicted = probs.argmax(axis=1)
    else:
        predicted = np.asarray(target.detach().cpu() if isinstance(target, torch.Tensor) else target,
                               dtype=np.int64).reshape(-1)
        if predicted.shape != (probs.shape[0],) or predicted.min() < 0 or predicted.max() >= probs.shape[1]:
            raise ValueError(f"target: expected {probs.shape[0]} class indices in [0, {probs.shape[1]})")
    without, only, masks = [], [], []
    v_np = v.cpu().numpy()
    for k in fr:
        r = torch.from_numpy(top_k_mask(s, v_np, float(k))).to(token_ids.device)
        masks.append(r.cpu().numpy())
        without.append(_probs(predict_proba, token_ids, (v & ~r) | ak))
        only.append(_probs(predict_proba, token_ids, r | ak))
    return FaithfulnessResult(fractions=fr, predicted=predicted, probs=probs, probs_without=np.stack(without),
                              probs_only=np.stack(only), rationale_masks=np.stack(masks))


def comprehensiveness(predict_proba: PredictProba, token_ids: torch.Tensor, scores: Any, valid: Any,
                      k_frac: float, *, always_keep: Any = None, target: Any = None) -> np.ndarray:
    r"""Per-instance comprehensiveness :math:`p_j(x) - p_j(x\setminus r_k)` ``(B,)``. Higher is better."""
    res = eraser_scores(predict_proba, token_ids, scores, valid, (k_frac,), always_keep=always_keep, target=target)
    return res.comprehensiveness_points[:, 0]


def sufficiency(predict_proba: PredictProba, token_ids: torch.Tensor, scores: Any, valid: Any,
                k_frac: float, *, always_keep: Any = None, target: Any = None) -> np.ndarray:
    r"""Per-instance sufficiency :math:`p_j(x) - p_j(r_k)` ``(B,)``. Lower is better."""
    res = eraser_scores(predict_proba, token_ids, scores, valid, (k_frac,), always_keep=always_keep, target=target)
    return res.sufficiency_points[:, 0]


def aopc(points: Any, include_zero: bool = False) -> np.ndarray:
    r"""Area over the perturbation curve per instance from per-bin differences ``(B, K)``.

    .. math::
        \text{AOPC}_i = \frac{1}{K}\sum_{k} d_{ik} \ \ (\text{default}), \qquad
        \frac{1}{K+1}\sum_{k} d_{ik}\ \ (\texttt{include\_zero}: \text{a } k=0 \text{ term } d_{i0}=0).

    Its mean over instances is ERASER's dataset AOPC (``np.average`` over all entries).
    """
    d = as_2d(points, name="points", dtype=np.float64)
    return d.sum(axis=1) / (d.shape[1] + (1 if include_zero else 0))


def comprehensiveness_aopc(predict_proba: PredictProba, token_ids: torch.Tensor, scores: Any, valid: Any,
                           fractions: Sequence[float] = AOPC_FRACTIONS, *, include_zero: bool = False,
                           always_keep: Any = None, target: Any = None) -> np.ndarray:
    """Per-instance AOPC of comprehensiveness ``(B,)`` over ``fractions``. Higher is better."""
    res = eraser_scores(predict_proba, token_ids, scores, valid, fractions, always_keep=always_keep, target=target)
    return res.comprehensiveness_aopc(include_zero)


def sufficiency_aopc(predict_proba: PredictProba, token_ids: torch.Tensor, scores: Any, valid: Any,
                     fractions: Sequence[float] = AOPC_FRACTIONS, *, include_zero: bool = False,
                     always_keep: Any = None, target: Any = None) -> np.ndarray:
    """Per-instance AOPC of sufficiency ``(B,)`` over ``fractions``. Lower is better."""
    res = eraser_scores(predict_proba, token_ids, scores, valid, fractions, always_keep=always_keep, target=target)
    return res.sufficiency_aopc(include_zero)


for _f, _name in ((comprehensiveness, "comprehensiveness"), (sufficiency, "sufficiency"),
                  (comprehensiveness_aopc, "comprehensiveness_aopc"), (sufficiency_aopc, "sufficiency_aopc")):
    setattr(_f, "lower_is_better", LOWER_IS_BETTER[_name])  # noqa: B010 - an attribute of a function object
