r"""Before training: does a larger :math:`\eta_{QK}/\eta_{OV}` sharpen or de-sharpen attention under Adam, and 1 - p.

The predictor runs the exact optimizer map on the fixed-point set of the subgroup that singles out one class
(:data:`theory.subgroup_orbits.SUBGROUPS` ``"one-class"``, :mod:`simulation.subgroup_maps`), seeded off the
symmetric set along the class-bias mode of the OV circuit's common-token columns at rounding amplitude
(:data:`simulation.transverse.ROUNDING` relative). Why that set: on the symmetric set those entries' gradient is
exactly 0, Adam's step there has gain :math:`\ell/\varepsilon` per step (:mod:`simulation.transverse`), so
rounding grows to an :math:`O(\ell)` step within tens of steps; what happens next is nonlinear, and on the
measured runs the state goes to this set (one class's distinct-token score falls while its OV row takes a large
bias on the common tokens; the other classes stay equal). The map on the set *is* the full training restricted
to it, so the prediction is as good as the full run's closeness to that set; it is a reduced map of a larger
invariant set (13 orbit values for CACO, 19 for FAFO), not a closed form. It is insensitive to the seed's size
(1e-16 and 1e-12 give the same 1 - p to 2 digits on the case of docs/synthetic-validation.md), because rounding
inside the set seeds the same mode.

Calls (:func:`calls`): at each matched loss a ratio *de-sharpens* when its 1 - p is above the reference ratio's
(the lowest, normally 1) and *sharpens* when below; separately, a ratio's 1 - p *rises* at a level when it is
above its value at the previous (higher) level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.optimizer_maps import OptimizerSpec
from simulation.subgroup_maps import SetRun, layout, run_set_map, seeded_start
from simulation.transverse import ROUNDING
from theory.subgroup_orbits import subgroup as make_subgroup

PREDICTOR_SUBGROUP = "one-class"
"""The invariant set the predictor runs on (module doc)."""


def first_below(loss: np.ndarray, y: np.ndarray, level: float) -> float | None:
    """``y`` where ``loss`` first falls to ``level``, log-log interpolated between the two recorded points (the
    same rule as :func:`validation.synthetic.adam_compare.crossing`); None when never reached."""
    loss, y = np.asarray(loss, float), np.asarray(y, float)
    hit = np.flatnonzero(loss <= level)
    if not hit.size:
        return None
    i = hit[0]
    if i == 0:
        return float(y[0]) if loss[0] == level else None
    x0, x1 = np.log(loss[i - 1]), np.log(loss[i])
    f = (np.log(level) - x0) / (x1 - x0) if x1 != x0 else 1.0
    if y[i - 1] > 0 and y[i] > 0:
        return float(np.exp(np.log(y[i - 1]) + f * (np.log(y[i]) - np.log(y[i - 1]))))
    return float(y[i - 1] + f * (y[i] - y[i - 1]))


@dataclass(frozen=True)
class Prediction:
    """Per ratio (order of ``ratios``): predicted 1 - p and set distance at each of ``levels`` (None: the map does
    not reach the level within its steps); ``runs`` the set-map runs; ``calls`` (:func:`calls`)."""

    param: str
    subgroup: str
    ratios: tuple[float, ...]
    levels: tuple[float, ...]
    one_minus_p: dict[float, list[float | None]]
    distance: dict[float, list[float | None]]
    calls: dict[float, list[str | None]]
    rises: dict[float, list[bool | None]]
    runs: dict[float, SetRun]

    def as_json(self) -> dict:
        return {"param": self.param, "subgroup": self.subgroup, "levels": list(self.levels),
                "ratios": list(self.ratios),
                "per_ratio": [{"ratio": r, "predicted_one_minus_p": self.one_minus_p[r],
                               "predicted_distance": self.distance[r], "call": self.calls[r],
                               "rises": self.rises[r]} for r in self.ratios]}


def _call(v: float | None, ref: float | None) -> str | None:
    if v is None or ref is None:
        return None
    return "de-sharpens" if v > ref else "sharpens" if v < ref else "same"


def _rise(v: float | None, prev: float | None) -> bool | None:
    return None if v is None or prev is None else bool(v > prev)


def calls(values: dict[float, list[float | None]]) -> tuple[dict[float, list[str | None]], dict[float, list[bool | None]]]:
    """From 1 - p per ratio per level: ``call[r][i]`` = ``"de-sharpens"`` when above the lowest ratio's at level
    ``i``, ``"sharpens"`` when below, ``"same"`` when equal (the lowest ratio itself, or a tie: no call), None where
    either is missing; ``rises[r][i]``: above the same ratio's value at level ``i - 1`` (None at ``i = 0`` or where
    missing)."""
    ref = values[min(values)]
    out = {r: [_call(v, ref[i]) for i, v in enumerate(vals)] for r, vals in values.items()}
    up = {r: [None if i == 0 else _rise(v, vals[i - 1]) for i, v in enumerate(vals)] for r, vals in values.items()}
    return out, up


def predict(param: str, spec: OptimizerSpec, *, K: int, M: int, u0: float, v0: float, eta_ov: float, dt: float,
            ratios: tuple[float, ...], levels: tuple[float, ...], steps: int, subgroup: str = PREDICTOR_SUBGROUP,
            amplitude: float = ROUNDING, record_every: int = 5) -> Prediction:
    """The broken-set prediction (module doc) at ``eta_QK = ratio * eta_ov`` for each ratio; each map runs until
    its loss is below the lowest level or ``steps`` steps."""
    sub = make_subgroup(subgroup, K, M)
    lay = layout(param, sub, K, M)
    w0 = seeded_start(lay, u0, v0, amplitude)
    stop = min(levels) if levels else None
    runs, res, dist = {}, {}, {}
    for r in ratios:
        run = run_set_map(param, sub, spec, K=K, M=M, eta_qk=r * eta_ov, eta_ov=eta_ov, dt=dt, steps=steps, w0=w0,
                          record_every=record_every, stop_loss=stop)
        runs[r] = run
        res[r] = [first_below(run.loss, run.residual, L) for L in levels]
        dist[r] = [first_below(run.loss, run.distance, L) for L in levels]
    c, up = calls(res)
    return Prediction(param, subgroup, tuple(ratios), tuple(levels), res, dist, c, up, runs)


def by_symmetry_type(param: str, spec: OptimizerSpec, *, K: int, M: int, u0: float, v0: float, eta_ov: float,
                     dt: float, ratios: tuple[float, ...], levels: tuple[float, ...], steps: int,
                     amplitude: float = ROUNDING) -> dict[str, Prediction]:
    """:func:`predict` on every registered subgroup set (:data:`theory.subgroup_orbits.SUBGROUPS`), each seeded at
    ``amplitude`` off the symmetric set inside it: per symmetry type of perturbation (which classes / commons it
    distinguishes), how far the run leaves the symmetric set and what that does to 1 - p at each level, followed over
    the whole run. ``symmetric`` is the symmetric-set map (no perturbation survives its averaging)."""
    from theory.subgroup_orbits import SUBGROUPS

    return {name: predict(param, spec, K=K, M=M, u0=u0, v0=v0, eta_ov=eta_ov, dt=dt, ratios=ratios, levels=levels,
                          steps=steps, subgroup=name, amplitude=amplitude) for name in SUBGROUPS}


__all__ = ["PREDICTOR_SUBGROUP", "Prediction", "by_symmetry_type", "calls", "first_below", "predict"]
