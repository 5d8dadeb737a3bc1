"""The body of ``qkov simulate`` as library calls: integrate, tabulate the laws, write the run.

:func:`simulate` is what the command runs. Without ``save_to`` it integrates every parametrization with
:func:`simulation.solve` (or an optimizer's reduced map) here and writes nothing. With ``save_to`` the run
``OUT/runs/simulate-<key>/`` is planned and executed through the study engine
(:func:`qkov.study.command_run.run_command`: the results directory's lock is taken *before* computing, so a
busy directory is refused at once; a complete run of the same config is reused; in this process by
default, on Dask when asked) by the stage code :func:`execute`, and the trajectories printed are the ones
read back from the run. It returns a :class:`SimulationResult`.
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
    with ``cfg.optimizer`` other than ``flow``, that optimizer's exact reduced map (:func:`run_optimizer_map`, also
    through :func:`simulation.solve`)."""
    if cfg.optimizer != "flow":
        return run_optimizer_map(cfg)
    from simulation import solve

    options: dict[str, Any] = {} if cfg.method == "reduced" else {"dt": cfg.dt}
    if cfg.full:
        options.update(init=cfg.init, scale=cfg.scale, seed=cfg.seed)
    return [solve(Parametrization(p), K=cfg.K, M=cfg.M, eta_qk=cfg.eta_qk, eta_ov=cfg.eta_ov, u0=cfg.u0, v0=cfg.v0, t=cfg.t,
                  method=cfg.method, **options) for p in cfg.params]


def run_optimizer_map(cfg: SimulateConfig) -> list:
    """The exact reduced map of ``cfg.optimizer``: :func:`simulation.solve` with method ``map-<optimizer>``
    (:func:`simulation.optimizer_maps.simulate_optimizer`)."""
    from simulation import solve

    return [solve(Parametrization(p), K=cfg.K, M=cfg.M, eta_qk=cfg.eta_qk, eta_ov=cfg.eta_ov, u0=cfg.u0, v0=cfg.v0,
                  t=cfg.t, method=f"map-{cfg.optimizer}", dt=cfg.dt, beta1=cfg.beta1, beta2=cfg.beta2, eps=cfg.eps,
                  weight_decay=cfg.weight_decay) for p in cfg.params]


def law_table_for(cfg: SimulateConfig, param: str) -> dict:
    """:func:`simulation.closed_forms.law_table` of one parametrization of ``cfg`` (arrays over ``cfg.t``)."""
    from simulation.closed_forms import law_table

    return law_table(Parametrization(param), cfg.K, cfg.M, cfg.eta_qk, cfg.eta_ov, cfg.u0, cfg.v0, cfg.t)


KIND = "simulate"
"""Run kind of ``qkov simulate --save`` (declared by the simulate stage in :data:`qkov.study.stages.REGISTRY`)."""
ARRAYS = ("t", "u", "v", "p", "residual", "loss")
"""Per parametrization, the arrays ``trajectories.npz`` holds (as ``<param>_<name>``)."""


def run_config(cfg: SimulateConfig, plots: bool) -> dict[str, Any]:
    """The JSON config of the run of ``cfg``: its fields, and ``plots: true`` when figures are drawn (so a run
    without figures is not reused for one asked with them; without, the key is the config's alone)."""
    return {**cfg.to_json_dict(), **({"plots": True} if plots else {})}


def execute(kind: str, config: dict, run_dir: Path, ctx: Any = None) -> None:
    """The stage code of a ``simulate`` run: integrate :func:`run_config`'s config and write the run into
    ``run_dir`` (:func:`write_simulation`). A time the integrator cannot reach is a one-line ``ConfigError``."""
    from qkov.core.simulate_config import parse_simulate_config

    if kind != KIND:
        raise ValueError(f"qkov.study.simulate_command: unknown run kind {kind!r}")
    values = dict(config)
    plots = bool(values.pop("plots", False))
    cfg = parse_simulate_config(**values)
    runs, _ = _compute(cfg, False)
    write_simulation(cfg, runs, run_dir, plots=plots, config=config)


@dataclasses.dataclass(frozen=True)
class SavedTrajectory:
    """One parametrization's trajectory read back from a ``simulate`` run (arrays ``(T,)``): what the
    command prints; ``as_json`` is the record of ``runs.json``."""

    param: str
    t: Any
    u: Any
    v: Any
    p: Any
    residual: Any
    loss: Any

    def as_json(self) -> dict:
        """MODEL.md's observables as plain lists (the CLI's ``--json`` record)."""
        return {"param": self.param, **{k: getattr(self, k).tolist() for k in ("t", "u", "v", "p", "loss")}}


def read_simulation(run_dir: Path, params) -> list[SavedTrajectory]:
    """The trajectories of the complete ``simulate`` run ``run_dir``, one per ``params`` (``trajectories.npz``)."""
    from qkov.core.runstore import load_run

    arrays = load_run(run_dir).arrays["trajectories.npz"]
    return [SavedTrajectory(p, *(arrays[f"{p}_{k}"] for k in ARRAYS)) for p in params]


def write_simulation(cfg: SimulateConfig, runs, run_dir: Path, *, plots: bool, config: dict | None = None) -> Path:
    """Write the run into ``run_dir``: ``runs.json``, ``trajectories.npz`` and, with ``plots``, figures.
    ``config``: the config recorded (default ``cfg``'s fields, :func:`run_config`)."""
    import numpy as np

    from qkov.core.runstore import RunWriter

    config = run_config(cfg, plots) if config is None else config
    with RunWriter(run_dir, kind=KIND, config=config, seed=cfg.seed) as run:
        if plots:  # first: trajectories_figure writes its own trajectories.npz, which the run's replaces below
            from simulation.figures import phase_portrait_figure, sharpness_figures, trajectories_figure

            u0 = cfg.u0 if cfg.u0 > 0 else 0.05
            v0 = cfg.v0 if cfg.v0 > 0 else 0.05
            params = tuple(Parametrization(p) for p in cfg.params)
            trajectories_figure(run, params, cfg.K, cfg.M, cfg.eta_qk, cfg.eta_ov,
                                cfg.u0 if not any(p.ov.zero_is_fixed_point for p in params) else u0,
                                cfg.v0 if not any(p.qk.zero_is_fixed_point for p in params) else v0,
                                t_max=max(1e12, cfg.t[-1]), full_runs=())
            pp = phase_portrait_figure(run, params, cfg.K, cfg.M, cfg.eta_ov, u0, v0)
            sh = sharpness_figures(run, cfg.K, cfg.M, cfg.eta_ov, np.logspace(-2, 2, 9).tolist(), np.logspace(-3, 0, 7).tolist(),
                                   ref_scale=max(u0, v0))
            run.write_json("plot_summary.json", {"phase_portrait_max_abs_v_minus_level_curve":
                                                 pp["max_abs_v_minus_level_curve"],
                                                 "residual_at_loss_1e-4_by_ratio": {
                                                     k: v.tolist() for k, v in sh["at_ref"].items()},
                                                 "ratios": sh["ratios"].tolist()})
        run.write_json("runs.json", {"runs": [r.as_json() for r in runs]})
        run.write_arrays("trajectories.npz", **{f"{r.param}_{k}": getattr(r, k) for r in runs for k in ARRAYS})
    return run_dir


@dataclasses.dataclass(frozen=True)
class SimulationResult:
    """What :func:`simulate` computed: the trajectories (one per parametrization), the law tables (with
    ``laws``, else ``None``), the run directory (with ``save_to``, else ``None``), seconds taken, and whether a
    complete run of the same config was reused (nothing computed)."""

    config: SimulateConfig
    runs: list
    laws: list[dict] | None
    run_dir: Path | None
    seconds: float
    reused: bool = False
    figures: tuple[Path, ...] = ()
    """The figures the run holds (PNG and SVG, with ``plots``), in name order."""


def _compute(cfg: SimulateConfig, laws: bool, runs: bool = True) -> tuple[list, list[dict] | None]:
    """The trajectories (unless not ``runs``) and, with ``laws``, the law tables of ``cfg``."""
    try:
        trajectories = run_simulation(cfg) if runs else []
        tables = [law_table_for(cfg, p) for p in cfg.params] if laws else None
    except RuntimeError as exc:  # the integrator's step cap: a stiff corner inside the bounds
        raise ConfigError(f"t: {cfg.t[-1]:g}: not reached ({exc}); lower eta_QK/eta_OV or the time") from None
    return trajectories, tables


def simulate(cfg: SimulateConfig, *, laws: bool = False, save_to: Path | None = None, plots: bool = False,
             executor: Any = None, scheduler: str | None = None, workers: int | None = None) -> SimulationResult:
    """Integrate ``cfg`` (and, with ``laws``, tabulate theory's laws); with ``save_to``, through the study engine
    into the run ``save_to/runs/simulate-<key>/`` (a complete run of the same config, figures included, is
    reused; ``executor``/``scheduler``/``workers``: :func:`qkov.study.engine.open_executor`, in this process
    by default), the trajectories returned being the ones read back from it.

    The lock of ``save_to`` is taken before computing, so a busy results directory is refused
    (:class:`qkov.core.lock.ResultsLocked`) before any work. A time the integrator cannot reach inside the
    bounds is a :class:`ConfigError` (one line); a run that fails otherwise is
    :class:`qkov.study.engine.RunsFailed` (its incomplete directory removed).
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
    from qkov.study.command_run import run_command

    done = run_command(KIND, run_config(cfg, plots), Path(save_to), "qkov simulate", executor=executor,
                       scheduler=scheduler, workers=workers)
    saved = read_simulation(done.run_dir, cfg.params)
    tables = _compute(cfg, laws, runs=False)[1]  # the law tables only: the trajectories are the run's
    from qkov.core.runstore import load_run

    figures = tuple(done.run_dir / f for f in load_run(done.run_dir).files if f.endswith((".png", ".svg")))
    return SimulationResult(cfg, saved, tables, done.run_dir, time.perf_counter() - start, done.reused, figures)


__all__ = ["simulate", "SimulationResult", "run_simulation", "run_optimizer_map", "law_table_for", "write_simulation",
           "read_simulation", "run_config", "execute", "SavedTrajectory", "KIND", "ARRAYS", "LAW_KEYS"]
