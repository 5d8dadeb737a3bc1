"""The body of ``qkov simulate`` as library calls: integrate, tabulate the laws, write the run.

:func:`simulate` is what the command runs: with ``save_to`` it takes that results directory's lock
*before* computing (a busy directory is refused at once), integrates every parametrization with
:func:`simulation.solve`, and writes ``OUT/runs/simulate-<key>/``. It returns a :class:`SimulationResult`.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from qkov.core.config import ConfigError
from qkov.core.simulate_config import SimulateConfig
from theory.parametrization import Parametrization, registered

LAW_KEYS = ("u", "u_leading", "u_next", "v", "v_leading", "v_next", "residual", "residual_leading", "residual_next")
"""Per time point with ``laws``: the solution and theory's leading and next-order law of u, v and 1 - p."""


def run_simulation(cfg: SimulateConfig) -> list:
    """The trajectories of one config (:func:`simulation.solve` per parametrization), one per ``cfg.params``;
    with ``cfg.optimizer`` other than ``flow``, that optimizer's exact reduced map (:func:`run_optimizer_map`)."""
    if cfg.optimizer != "flow":
        return run_optimizer_map(cfg)
    from simulation import solve

    options: dict[str, Any] = {} if cfg.method == "reduced" else {"dt": cfg.dt}
    if cfg.full:
        options.update(init=cfg.init, scale=cfg.scale, seed=cfg.seed)
    return [solve(p, K=cfg.K, M=cfg.M, eta_qk=cfg.eta_qk, eta_ov=cfg.eta_ov, u0=cfg.u0, v0=cfg.v0, t=cfg.t,
                  method=cfg.method, **options) for p in cfg.params]


def run_optimizer_map(cfg: SimulateConfig) -> list:
    """The exact reduced map of ``cfg.optimizer`` (:func:`simulation.optimizer_maps.simulate_optimizer`)."""
    from simulation.optimizer_maps import simulate_optimizer

    return [simulate_optimizer(p, K=cfg.K, M=cfg.M, eta_qk=cfg.eta_qk, eta_ov=cfg.eta_ov, u0=cfg.u0, v0=cfg.v0,
                               t=cfg.t, dt=cfg.dt, optimizer=cfg.optimizer, beta1=cfg.beta1, beta2=cfg.beta2,
                               eps=cfg.eps, weight_decay=cfg.weight_decay) for p in cfg.params]


def law_table_for(cfg: SimulateConfig, param: str) -> dict:
    """:func:`simulation.closed_forms.law_table` of one parametrization of ``cfg`` (arrays over ``cfg.t``)."""
    from simulation.closed_forms import law_table

    return law_table(param, cfg.K, cfg.M, cfg.eta_qk, cfg.eta_ov, cfg.u0, cfg.v0, cfg.t)


def write_simulation(cfg: SimulateConfig, runs, out: Path, *, plots: bool) -> Path:
    """Write the run ``OUT/runs/simulate-<key>/``: ``runs.json``, ``trajectories.npz`` and, with ``plots``, figures."""
    import numpy as np

    from qkov.core.runstore import RunWriter, run_dir_for

    config = cfg.to_json_dict()
    run_dir = run_dir_for(out, "simulate", config)
    with RunWriter(run_dir, kind="simulate", config=config, seed=cfg.seed) as run:
        run.write_json("runs.json", {"runs": [r.as_json() for r in runs]})
        run.write_arrays("trajectories.npz", **{f"{r.param}_{k}": getattr(r, k) for r in runs
                                                 for k in ("t", "u", "v", "p", "residual", "loss")})
        if plots:
            from simulation.figures import phase_portrait_figure, sharpness_figures, trajectories_figure

            u0 = cfg.u0 if cfg.u0 > 0 else 0.05
            v0 = cfg.v0 if cfg.v0 > 0 else 0.05
            trajectories_figure(run, cfg.params, cfg.K, cfg.M, cfg.eta_qk, cfg.eta_ov,
                                cfg.u0 if not any(Parametrization(p).ov.zero_is_fixed_point for p in cfg.params) else u0,
                                cfg.v0 if not any(Parametrization(p).qk.zero_is_fixed_point for p in cfg.params) else v0,
                                t_max=max(1e12, cfg.t[-1]), full_runs=())
            pp = phase_portrait_figure(run, cfg.params, cfg.K, cfg.M, cfg.eta_ov, u0, v0)
            sh = sharpness_figures(run, cfg.K, cfg.M, cfg.eta_ov, np.logspace(-2, 2, 9), np.logspace(-3, 0, 7),
                                   ref_scale=max(u0, v0))
            run.write_json("plot_summary.json", {"phase_portrait_max_abs_v_minus_level_curve":
                                                 pp["max_abs_v_minus_level_curve"],
                                                 "residual_at_loss_1e-4_by_ratio": {
                                                     k: v.tolist() for k, v in sh["at_ref"].items()},
                                                 "ratios": sh["ratios"].tolist()})
    return run_dir


@dataclasses.dataclass(frozen=True)
class SimulationResult:
    """What :func:`simulate` computed: the trajectories (one per parametrization), the law tables (with
    ``laws``, else ``None``), the run directory written (with ``save_to``, else ``None``), seconds taken."""

    config: SimulateConfig
    runs: list
    laws: list[dict] | None
    run_dir: Path | None
    seconds: float


def _compute(cfg: SimulateConfig, laws: bool) -> tuple[list, list[dict] | None]:
    try:
        runs = run_simulation(cfg)
        tables = [law_table_for(cfg, p) for p in cfg.params] if laws else None
    except RuntimeError as exc:  # the integrator's step cap: a stiff corner inside the bounds
        raise ConfigError(f"t: {cfg.t[-1]:g}: not reached ({exc}); lower eta_QK/eta_OV or the time") from None
    return runs, tables


def simulate(cfg: SimulateConfig, *, laws: bool = False, save_to: Path | None = None,
             plots: bool = False) -> SimulationResult:
    """Integrate ``cfg`` (and, with ``laws``, tabulate theory's laws); with ``save_to``, write the run there.

    The lock of ``save_to`` is taken before computing, so a busy results directory is refused
    (:class:`qkov.core.lock.ResultsLocked`) before any work. A time the integrator cannot reach inside the
    bounds is a :class:`ConfigError` (one line).
    """
    from qkov.core.config import field_error

    if laws and cfg.optimizer != "flow":
        raise field_error("laws", "on", "the laws are gradient flow's: drop --optimizer")
    if laws and cfg.method != "reduced":
        raise field_error("laws", cfg.method, "the laws are compared with the reduced flow: use --method reduced")
    if laws and not all(Parametrization(p).line_theory for p in cfg.params):
        raise field_error("laws", ",".join(cfg.params), "theory derives the laws for "
                          f"{', '.join(p for p in registered() if Parametrization(p).line_theory)} only")
    start = time.perf_counter()
    if save_to is None:
        runs, tables = _compute(cfg, laws)
        return SimulationResult(cfg, runs, tables, None, time.perf_counter() - start)
    from qkov.core.lock import results_lock

    with results_lock(save_to, "qkov simulate"):  # one writer per results directory, taken before computing
        runs, tables = _compute(cfg, laws)
        seconds = time.perf_counter() - start
        run_dir = write_simulation(cfg, runs, save_to, plots=plots)
    return SimulationResult(cfg, runs, tables, run_dir, seconds)


__all__ = ["simulate", "SimulationResult", "run_simulation", "run_optimizer_map", "law_table_for", "write_simulation", "LAW_KEYS"]
