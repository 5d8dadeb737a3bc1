r"""Seeded ensembles of symmetric-start runs: where rounding decides one run, a probability decides the ensemble.

Adam (and any optimizer whose symmetric set is transversally unstable, :mod:`simulation.transverse`) leaves the
symmetric set from whatever breaks the symmetry first; from the exact symmetric start that is rounding, so one
float64 run's outcome depends on the BLAS code path and the thread count (issue 41). An **ensemble** replaces it:
``n`` members per ratio, member ``i`` started at the symmetric point ``(u0, v0)`` plus ``amplitude`` times the
start's RMS entry times i.i.d. standard normal entries on every factor (torch generator seeded ``seed + i``; the
same perturbation at every ratio: common random numbers, so "raising the ratio from the reference de-sharpens" is a
statement per start). The amplitude (:data:`AMPLITUDE`, 1e-6 relative) is ten decades above float64 rounding,
so the seed, not the BLAS, decides each member. All members of all ratios train at once
(:func:`validation.synthetic.grid_training.train_grid`, ``torch.func.vmap``), so the ensemble costs a small multiple
of one run (docs/synthetic-validation.md).

Per ratio and matched loss ``L`` (log-log interpolation at the first recorded loss below ``L``,
:func:`validation.synthetic.adam_compare.crossing`): every member's :math:`1-p`. A member *de-sharpens* at ``L``
when its :math:`1-p` exceeds the same member's at the reference ratio (the lowest) by more than ``resolution``
relative (:data:`theory.claims.THRESHOLDS` ``residual-resolution``); :math:`P(\text{de-sharpen})` is the fraction
of the members that reached ``L`` at both ratios, with its Wilson interval at :data:`CONFIDENCE`
(:func:`wilson`). At the end (loss below the lowest level, or after the step budget) each member's state is
classified by the classes and commons it keeps equal (:func:`simulation.set_membership.membership`).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulation.optimizer_maps import OptimizerSpec

ENSEMBLE_SIZE = 64
"""Default members per ratio: with none de-sharpening the 95% Wilson interval is [0, 0.057], below the 0.1 of
``desharpen-rare`` (:data:`theory.claims.THRESHOLDS`), so an all-sharpening ensemble can support the claim; 32
members would give [0, 0.107] and could not."""

AMPLITUDE = 1e-6
"""Default relative size of each member's start perturbation: far above float64 rounding (1e-16) so the seed
decides, far below the start (and below the 1e-3 of :data:`simulation.set_membership.SET_TOLERANCE`)."""

CONFIDENCE = 0.95
"""The one level of every interval of the ensembles (Wilson score interval of a binomial proportion)."""

RECORD_EVERY = 5
"""Default recording interval of the ensemble (steps): matched losses are interpolated between records."""


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    r"""Wilson score interval of ``k`` successes in ``n`` trials at ``confidence``
    (:meth:`scipy.stats.binomtest(...).proportion_ci <scipy.stats._result_classes.BinomTestResult.proportion_ci>`,
    ``method="wilson"``): :math:`\frac{\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2}}{1 + z^2/n}`.
    ``(nan, nan)`` for ``n = 0``."""
    if n == 0:
        return float("nan"), float("nan")
    from scipy.stats import binomtest

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def crossings(loss: np.ndarray, y: np.ndarray, levels: tuple[float, ...]) -> np.ndarray:
    """``(C, len(levels))``: per column of ``loss, y (T, C)``, ``y`` where the loss first falls to each level
    (:func:`validation.synthetic.adam_compare.crossing`), nan where never reached."""
    from validation.synthetic.adam_compare import crossing

    out = np.full((loss.shape[1], len(levels)), np.nan)
    for c in range(loss.shape[1]):
        for j, L in enumerate(levels):
            v = crossing(loss[:, c], y[:, c], L)
            out[c, j] = np.nan if v is None else v
    return out


def start_scale(param: str, K: int, M: int, u0: float, v0: float) -> float:
    """RMS entry of the symmetric start's factors (class-indexed OV basis): the unit of the relative amplitude."""
    from theory.parametrization import Parametrization
    from validation.synthetic.models import symmetric_model

    model = symmetric_model(Parametrization(param), K, M, u0, v0, ov_basis="class")
    sq = sum(float((w.detach() ** 2).sum()) for w in model.parameters())
    n = sum(w.numel() for w in model.parameters())
    return (sq / n) ** 0.5


@dataclass(frozen=True)
class RatioStats:
    """One (ratio, level) of an ensemble. ``k``/``n``: members that de-sharpen / members compared (both ratios
    reached the level); ``p``, ``lo``, ``hi``: the fraction and its Wilson interval (None for the reference ratio
    or ``n = 0``); ``median``, ``q10``, ``q90``: quantiles of 1 - p over the members that reached the level
    (``reached`` of them); ``distance``: the members' median distance from the symmetric set there."""

    ratio: float
    level: float
    reached: int
    median: float | None
    q10: float | None
    q90: float | None
    distance: float | None = None
    k: int | None = None
    n: int | None = None
    p: float | None = None
    lo: float | None = None
    hi: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "level": self.level, "reached": self.reached,
                "one_minus_p_median": self.median, "one_minus_p_q10": self.q10, "one_minus_p_q90": self.q90,
                "distance_median": self.distance,
                "desharpen_k": self.k, "desharpen_n": self.n, "p_desharpen": self.p, "p_desharpen_lo": self.lo,
                "p_desharpen_hi": self.hi}


def _rows(x: np.ndarray) -> list[list[float | None]]:
    return [[float(v) if np.isfinite(v) else None for v in row] for row in x]


def _q(x: np.ndarray, q: float) -> float | None:
    x = x[np.isfinite(x)]
    return float(np.quantile(x, q)) if x.size else None


@dataclass(frozen=True)
class Ensemble:
    """Per ratio: ``one_minus_p[r] (n, L)`` and ``distance[r] (n, L)`` (from the symmetric set,
    :func:`validation.synthetic.grid_training.grid_observables`) at the matched ``levels`` (nan: not reached),
    ``curves[r]``: the recorded ``loss``, ``residual`` and ``distance`` ``(T, n)`` (for figures, not serialised), ``final_loss[r] (n,)``,
    ``final_set[r]`` (the set each member ends on, :func:`simulation.set_membership.membership`'s name) and
    ``final_distance[r] (n,)`` (relative distance from the symmetric set at the end: the largest transposition
    move); the settings; ``steps`` run and the training's ``wall_s`` and ``cpu_s``."""

    param: str
    optimizer: dict
    K: int
    M: int
    u0: float
    v0: float
    dt: float
    eta_ov: float
    ratios: tuple[float, ...]
    levels: tuple[float, ...]
    size: int
    amplitude: float
    seed: int
    one_minus_p: dict[float, np.ndarray]
    distance: dict[float, np.ndarray]
    curves: dict[float, dict[str, np.ndarray]]
    final_loss: dict[float, np.ndarray]
    final_set: dict[float, list[str]]
    final_distance: dict[float, np.ndarray]
    steps: int
    wall_s: float
    cpu_s: float
    resolution: float = 1e-3
    confidence: float = CONFIDENCE
    stats: list[RatioStats] = field(default_factory=list)

    def reference(self) -> float:
        return min(self.ratios)

    def desharpens(self, ratio: float) -> np.ndarray:
        """``(n, L)`` float: 1 where member ``i`` de-sharpens at level ``j`` against the reference ratio, 0 where it
        does not, nan where either ratio did not reach the level."""
        x, ref = self.one_minus_p[ratio], self.one_minus_p[self.reference()]
        out = (x > ref * (1 + self.resolution)).astype(float)
        out[~(np.isfinite(x) & np.isfinite(ref))] = np.nan
        return out

    def summary(self) -> list[RatioStats]:
        """:class:`RatioStats` per ratio and level (ratios ascending, levels as given)."""
        out = []
        for r in sorted(self.ratios):
            x = self.one_minus_p[r]
            for j, L in enumerate(self.levels):
                col = x[:, j]
                base = RatioStats(r, L, int(np.isfinite(col).sum()), _q(col, 0.5), _q(col, 0.1), _q(col, 0.9),
                                  _q(self.distance[r][:, j], 0.5))
                if r == self.reference():
                    out.append(base)
                    continue
                d = self.desharpens(r)[:, j]
                n = int(np.isfinite(d).sum())
                k = int(np.nansum(d))
                lo, hi = wilson(k, n, self.confidence)
                out.append(dataclasses.replace(base, k=k, n=n, p=k / n if n else None, lo=lo if n else None,
                                               hi=hi if n else None))
        return out

    def set_counts(self, ratio: float) -> dict[str, int]:
        """How many members end on each set (most frequent first)."""
        return dict(Counter(self.final_set[ratio]).most_common())

    def as_json(self) -> dict[str, Any]:
        """The ensemble's record: settings, per-ratio-level statistics, per-member 1 - p and end sets."""
        return {"param": self.param, "optimizer": self.optimizer, "K": self.K, "M": self.M, "u0": self.u0,
                "v0": self.v0, "dt": self.dt, "eta_ov": self.eta_ov, "ratios": list(self.ratios),
                "levels": list(self.levels), "size": self.size, "amplitude": self.amplitude, "seed": self.seed,
                "resolution": self.resolution, "confidence": self.confidence, "steps": self.steps,
                "wall_s": self.wall_s, "cpu_s": self.cpu_s,
                "stats": [s.as_json() for s in self.summary()],
                "members": {f"{r:g}": {"one_minus_p": _rows(self.one_minus_p[r]),
                                       "distance": _rows(self.distance[r]),
                                       "final_loss": [float(v) for v in self.final_loss[r]],
                                       "final_set": list(self.final_set[r]),
                                       "final_distance": [float(v) for v in self.final_distance[r]],
                                       "set_counts": self.set_counts(r)} for r in self.ratios}}


def train_ensemble(param: str, spec: OptimizerSpec, *, K: int, M: int, u0: float, v0: float, dt: float,
                   ratios: tuple[float, ...], levels: tuple[float, ...], steps: int, eta_ov: float = 1.0,
                   size: int = ENSEMBLE_SIZE, amplitude: float = AMPLITUDE, seed: int = 0,
                   record_every: int = RECORD_EVERY, resolution: float | None = None,
                   confidence: float = CONFIDENCE, stop_loss: float | None = None) -> Ensemble:
    """Train ``size`` perturbed members per ratio at once (module doc) until every member's loss is below
    ``stop_loss`` (default the lowest level) or ``steps`` steps; ``eta_QK = ratio * eta_ov``, lr ``eta dt``."""
    (ens,) = train_ensembles(param, spec, K=K, M=M, starts=((u0, v0),), dt=dt, ratios=ratios, levels=levels,
                             steps=steps, eta_ov=eta_ov, size=size, amplitude=amplitude, seed=seed,
                             record_every=record_every, resolution=resolution, confidence=confidence,
                             stop_loss=stop_loss)
    return ens


def train_ensembles(param: str, spec: OptimizerSpec, *, K: int, M: int, starts: tuple[tuple[float, float], ...],
                    dt: float, ratios: tuple[float, ...], levels: tuple[float, ...], steps: int, eta_ov: float = 1.0,
                    size: int = ENSEMBLE_SIZE, amplitude: float = AMPLITUDE, seed: int = 0,
                    record_every: int = RECORD_EVERY, resolution: float | None = None,
                    confidence: float = CONFIDENCE, stop_loss: float | None = None) -> list[Ensemble]:
    """:func:`train_ensemble` for several symmetric starts ``(u0, v0)`` of one ``(param, K, M, dt)`` in **one**
    batched training (``len(starts) * len(ratios) * size`` configurations, :func:`train_grid`); one
    :class:`Ensemble` per start (the CPU time is shared: each carries the whole batch's, divided evenly)."""
    from simulation.set_membership import membership
    from theory.claims import THRESHOLDS
    from theory.parametrization import Parametrization
    from validation.synthetic.grid_training import train_grid

    import torch

    if not levels:
        raise ValueError("levels: an ensemble needs at least one matched loss")
    if size < 1:
        raise ValueError(f"size {size}: an ensemble needs at least one member")
    if not starts:
        raise ValueError("starts: at least one (u0, v0)")
    ratios = tuple(sorted(float(r) for r in ratios))
    S, R, n = len(starts), len(ratios), int(size)
    # configuration c = (start index * R + ratio index) * n + member
    eta_qk = np.tile(np.repeat(np.asarray(ratios) * eta_ov, n), S)
    seeds = np.tile(seed + np.arange(n), S * R)
    u0s = np.repeat([float(u) for u, _ in starts], R * n)
    v0s = np.repeat([float(v) for _, v in starts], R * n)
    noise = np.repeat([amplitude * start_scale(param, K, M, u, v) for u, v in starts], R * n)
    record = np.arange(0, steps + 1, max(1, int(record_every)))
    t0 = time.process_time()
    run = train_grid(param, spec.name, K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, dt=dt, steps=steps, u0=u0s, v0=v0s,
                     noise=noise, seeds=seeds, record=record,
                     stop_loss=min(levels) if stop_loss is None else stop_loss, beta1=spec.beta1,
                     beta2=spec.beta2, eps=spec.eps, weight_decay=spec.weight_decay)
    cpu = time.process_time() - t0
    p = Parametrization(param)
    qk = [torch.as_tensor(run.params[k]) for k in p.qk.factors]
    ov = [torch.as_tensor(run.params[k]) for k in p.ov.factors]
    wkq, wov = p.qk.effective(qk).numpy(), p.ov.effective(ov).numpy()
    members = [membership(wkq[c], wov[c], K, M) for c in range(S * R * n)]
    res = crossings(run.loss, run.residual, tuple(levels))
    dis = crossings(run.loss, run.distance, tuple(levels))
    res_bound = THRESHOLDS["residual-resolution"].bound if resolution is None else float(resolution)
    out = []
    for s_i, (u0, v0) in enumerate(starts):
        one, dd, cv, fl, fs, fd = {}, {}, {}, {}, {}, {}
        for i, r in enumerate(ratios):
            sl = slice((s_i * R + i) * n, (s_i * R + i + 1) * n)
            one[r] = res[sl]
            dd[r] = dis[sl]
            cv[r] = {"loss": run.loss[:, sl].copy(), "residual": run.residual[:, sl].copy(),
                     "distance": run.distance[:, sl].copy()}
            fl[r] = run.loss[-1, sl].copy()
            fs[r] = [m.name for m in members[sl]]
            fd[r] = np.array([max(float(m.class_distances.max()), float(m.common_distances.max(initial=0.0)))
                              for m in members[sl]])
        out.append(Ensemble(str(p), spec.as_json(), K, M, float(u0), float(v0), float(dt), float(eta_ov), ratios,
                            tuple(float(x) for x in levels), n, float(amplitude), int(seed), one, dd, cv, fl, fs, fd,
                            int(run.step[-1]), float(run.wall_s) / S, cpu / S, res_bound, confidence))
    return out


__all__ = ["AMPLITUDE", "CONFIDENCE", "ENSEMBLE_SIZE", "Ensemble", "RECORD_EVERY", "RatioStats", "crossings",
           "start_scale", "train_ensemble", "train_ensembles", "wilson"]
