r"""Full-matrix training under Adam / momentum against the optimizer's exact reduced map, as one run.

:class:`OptimizerMapConfig` is one ``(optimizer, betas, eps)`` over parametrizations and ratios, trained from
MODEL.md's symmetric start (:func:`validation.synthetic.adam_compare.optimizer_matched_loss`: measured
:math:`1-p` and distance from the symmetric set at matched losses, the reduced map
(:mod:`simulation.optimizer_maps`) and gradient flow at the same losses, the transverse prediction of whether the
run leaves the set). :func:`optimizer_map_figure` is the per-optimizer theory-vs-training figure: measured
:math:`1-p` (solid) against the loss, the reduced map of the same optimizer (dashed) and gradient flow (dotted),
with the measured set distance beneath.
"""

from __future__ import annotations

from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from annotated_types import MinLen
from pydantic import AfterValidator

from simulation.optimizer_maps import check_map
from theory.parametrization import BASELINE, FULLY_FACTORIZED, OrbitParamName
from theory.spec import Ge, Gt, Le, Lt, NonNegativeFinite, PositiveFinite, Spec
from validation.synthetic.ensemble import AMPLITUDE, ENSEMBLE_SIZE


@dataclass(frozen=True, kw_only=True)
class OptimizerMapConfig(Spec):
    """One optimizer's symmetric-start runs (module docstring). ``betas``: Adam's (beta1, beta2); momentum uses
    beta1 as its momentum.
    ``u0, v0``: the symmetric start. ``levels``: the matched losses (empty: ``n_levels`` chosen inside every run's
    range); each run stops at its first logged loss below ``stop_loss`` (default: the lowest level) or after
    ``steps``. ``predict``: also run the broken-set predictor (:mod:`simulation.broken_set_predictor`)."""

    optimizer: Literal["adam", "momentum"] = "adam"
    betas: tuple[Annotated[float, Ge(0), Lt(1)], Annotated[float, Ge(0), Lt(1)]] = ADAM_BETAS
    eps: PositiveFinite = ADAM_EPS
    weight_decay: NonNegativeFinite = 0.0
    params: Annotated[tuple[Annotated[OrbitParamName, AfterValidator(check_map)], ...], MinLen(1)] = (
        BASELINE, FULLY_FACTORIZED)  # refused when planned: no optimizer orbits, or orbits but no generated maps
    ratios: Annotated[tuple[PositiveFinite, ...], MinLen(2)] = (1.0, 4.0)
    K: Annotated[int, Ge(2), Le(100)] = 4
    M: Annotated[int, Ge(1), Le(100)] = 8
    dt: PositiveFinite = 0.01
    steps: Annotated[int, Ge(1), Le(1_000_000)] = 1000
    n_levels: Annotated[int, Ge(1), Le(50)] = 5
    seed: Annotated[int, Ge(0)] = 0
    u0: PositiveFinite = 0.5
    v0: PositiveFinite = 0.5
    levels: tuple[Annotated[float, Gt(0), Lt(100)], ...] = ()
    stop_loss: Annotated[float, Gt(0), Lt(100)] | None = None
    predict: bool = True
    ensemble: Annotated[int, Ge(0), Le(4096)] = ENSEMBLE_SIZE
    amplitude: Annotated[float, Gt(0), Lt(1e-2)] = AMPLITUDE

    def label(self) -> str:
        if self.optimizer == "momentum":
            return f"momentum {self.betas[0]:g}"
        wd = f", weight decay {self.weight_decay:g}" if self.weight_decay else ""
        return f"Adam({self.betas[0]:g}, {self.betas[1]:g}, eps={self.eps:g}{wd})"

    def data(self, curves: bool = True) -> list[dict[str, Any]]:
        """One :func:`~validation.synthetic.adam_compare.optimizer_matched_loss` result per parametrization."""
        from validation.synthetic.adam_compare import optimizer_matched_loss

        return [optimizer_matched_loss(p, tuple(self.ratios), optimizer=self.optimizer, betas=(self.betas[0], self.betas[1]),
                                       eps=self.eps, weight_decay=self.weight_decay, K=self.K, M=self.M, dt=self.dt, steps=self.steps,
                                       n_levels=self.n_levels, curves=curves, u0=self.u0, v0=self.v0,
                                       levels=tuple(self.levels) or None, stop_loss=self.stop_loss,
                                       predict=self.predict, ensemble=self.ensemble, amplitude=self.amplitude,
                                       seed=self.seed) for p in self.params]


def without_curves(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON part of :meth:`OptimizerMapConfig.data`: every pair without its ``curves`` arrays."""
    return [{**r, "pairs": [{k: v for k, v in p.items() if k != "curves"} for p in r["pairs"]]} for r in runs]


def curve_arrays(runs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The ``curves`` of every pair as named arrays ``<param>_r<ratio>_<column>`` (for ``trajectories.npz``)."""
    return {f"{p['param']}_r{p['ratio']:g}_{k}": np.asarray(v, dtype=np.float64)
            for r in runs for p in r["pairs"] for k, v in p.get("curves", {}).items()}


def optimizer_map_figure(runs: list[dict[str, Any]], label: str):
    """Theory vs training for one optimizer: per parametrization (columns), measured 1-p against the loss
    (solid), the reduced map (dashed) and gradient flow (dotted), one colour per ratio; beneath, the measured
    relative distance from the symmetric set (the reduced map applies while it is small). A matplotlib Figure."""
    from matplotlib.figure import Figure

    from validation.synthetic.report import RATIO_COLORS

    fig = Figure(figsize=(4.6 * len(runs), 6.2))
    axes = fig.subplots(2, len(runs), squeeze=False, sharex="col", gridspec_kw={"height_ratios": [2.2, 1]})
    for j, run in enumerate(runs):
        top, bottom = axes[0, j], axes[1, j]
        for i, p in enumerate(run["pairs"]):
            col, c = RATIO_COLORS[i % len(RATIO_COLORS)], p["curves"]
            loss, res = np.asarray(c["train_loss"]), np.asarray(c["train_residual"])
            many = loss.ndim == 2                      # an ensemble's members (T, n): thin, translucent
            what = f"{loss.shape[1]} seeded starts" if many else "training"
            top.loglog(loss, res, color=col, lw=0.6 if many else 2, alpha=0.35 if many else 0.75)
            top.plot([], [], color=col, lw=2, label=f"{what}, ratio {p['ratio']:g}")
            top.loglog(c["reduced_loss"], c["reduced_residual"], color=col, ls="--", lw=1.1,
                       label=f"reduced map, ratio {p['ratio']:g}")
            keep = np.asarray(c["flow_loss"]) >= np.min(loss)
            top.loglog(np.asarray(c["flow_loss"])[keep], np.asarray(c["flow_residual"])[keep], color=col, ls=":",
                       lw=1.1, label=f"gradient flow, ratio {p['ratio']:g}")
            if "train_set_distance" in c:
                dist = np.maximum(np.asarray(c["train_set_distance"], dtype=float), 1e-18)
                bottom.loglog(loss, dist, color=col, lw=0.6 if many else 1.5, alpha=0.35 if many else 1.0)
        for lev in run["levels"]:
            top.axvline(lev, color="0.85", lw=0.6, zorder=0)
        top.set_title(f"{run['pairs'][0]['param']}: {label}", fontsize=9)
        top.invert_xaxis()  # shared with the distance panel beneath
        top.grid(True, which="both", alpha=0.25)
        bottom.grid(True, which="both", alpha=0.25)
        bottom.set_xlabel("population loss L (falls to the right)")
        if j == 0:
            top.set_ylabel("attention residual 1 - p (measured)")
            bottom.set_ylabel("distance from the\nsymmetric set (relative)")
            top.legend(fontsize=7)
    fig.suptitle(f"{label}, symmetric start: training (solid) vs the exact reduced map (dashed) and gradient "
                 "flow (dotted); grey: matched losses", fontsize=9)
    fig.tight_layout()
    return fig


__all__ = ["OptimizerMapConfig", "optimizer_map_figure", "without_curves", "curve_arrays"]
