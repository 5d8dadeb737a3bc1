"""``qkov simulate``: integrate the reduced flow (or run the full matrices) and print or plot it.

Register in the composed CLI as ``("qkov.cli.simulate", "simulate")``; ``python -m simulation`` runs it alone.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from qkov.cli.support import CONTEXT_SETTINGS
import numpy as np

from qkov.core.config import PARAMETRIZATIONS, ConfigError, as_choice_list, parse_float_list
from qkov.core.simulate_config import SimulateConfig, parse_simulate_config


def run_simulation(cfg: SimulateConfig) -> list:
    """The runs of one config: :class:`~simulation.reduced.Trajectory` or :class:`~simulation.full_matrix.FullTrajectory`."""
    t = np.asarray(cfg.t, dtype=float)
    runs = []
    for prm in cfg.params:
        if cfg.full:
            from simulation.full_matrix import balanced_state, random_state, simulate_full

            state = (random_state(prm, cfg.K, cfg.M, cfg.scale, cfg.seed) if cfg.init == "random"
                     else balanced_state(prm, cfg.K, cfg.M, cfg.u0, cfg.v0))
            runs.append(simulate_full(prm, cfg.K, cfg.M, cfg.eta_qk, cfg.eta_ov, t, cfg.dt, state=state,
                                      method=cfg.method))
        else:
            from simulation.reduced import integrate

            runs.append(integrate(prm, cfg.K, cfg.M, cfg.eta_qk, cfg.eta_ov, cfg.u0, cfg.v0, t))
    return runs


def _table(runs) -> str:
    lines = []
    for r in runs:
        lines.append(f"{r.param}" + (f"  (full matrices, dt = {r.dt:g}, {r.method})" if hasattr(r, "dt") else
                                     "  (reduced flow)"))
        lines.append(f"  {'t':>12} {'u':>12} {'v':>12} {'1 - p':>12} {'loss':>12}")
        for i in range(len(r.t)):
            lines.append(f"  {r.t[i]:12.6g} {r.u[i]:12.6g} {r.v[i]:12.6g} {1 - r.p[i]:12.6g} {r.loss[i]:12.6g}")
    return "\n".join(lines)


def write_plots(cfg: SimulateConfig, runs, out: Path) -> Path:
    """Figures of this configuration into the run directory ``out`` (RunWriter, PNG + SVG)."""
    from simulation.figures import phase_portrait_figure, sharpness_figures, trajectories_figure
    from qkov.core.runstore import RunWriter

    u0 = cfg.u0 if cfg.u0 > 0 else 0.05
    v0 = cfg.v0 if cfg.v0 > 0 else 0.05
    with RunWriter(out, kind="simulate", config=cfg.to_json_dict(), seed=cfg.seed) as run:
        run.write_json("runs.json", {"runs": [r.as_json() for r in runs]})
        full = runs if cfg.full else ()
        trajectories_figure(run, cfg.params, cfg.K, cfg.M, cfg.eta_qk, cfg.eta_ov,
                            cfg.u0 if all(p[2] == "C" for p in cfg.params) else u0,
                            cfg.v0 if all(p[0] == "C" for p in cfg.params) else v0,
                            t_max=max(1e12, cfg.t[-1]), full_runs=full)
        pp = phase_portrait_figure(run, cfg.params, cfg.K, cfg.M, cfg.eta_ov, u0, v0)
        sh = sharpness_figures(run, cfg.K, cfg.M, cfg.eta_ov, np.logspace(-2, 2, 9), np.logspace(-3, 0, 7),
                               ref_scale=max(u0, v0))
        run.write_json("plot_summary.json", {"phase_portrait_max_abs_v_minus_level_curve":
                                             pp["max_abs_v_minus_level_curve"],
                                             "residual_at_loss_1e-4_by_ratio": {
                                                 k: v.tolist() for k, v in sh["at_ref"].items()},
                                             "ratios": sh["ratios"].tolist()})
    return out


@click.command("simulate", context_settings=CONTEXT_SETTINGS)
@click.option("--param", "param", default="all", show_default=True,
              help="CACO, FACO, CAFO, FAFO, a comma-separated list of them, or all.")
@click.option("--K", "K", type=int, default=10, show_default=True, help="Number of classes (>= 2).")
@click.option("--M", "M", type=int, default=19, show_default=True, help="Number of common tokens (>= 1).")
@click.option("--eta-qk", type=float, default=10.0, show_default=True, help="QK learning rate.")
@click.option("--eta-ov", type=float, default=1.0, show_default=True, help="OV learning rate.")
@click.option("--u0", type=float, default=0.0, show_default=True,
              help="Initial OV margin u (symmetric/balanced start, MODEL.md); > 0 for factorized OV.")
@click.option("--v0", type=float, default=0.0, show_default=True,
              help="Initial attention logit gap v; > 0 for factorized QK.")
@click.option("--t", "t", default="50,500,2500", show_default=True, help="Output times, strictly increasing.")
@click.option("--full", is_flag=True, help="Run gradient descent on the full matrices instead of the reduced ODE.")
@click.option("--dt", type=float, default=0.05, show_default=True, help="Time step of --full (rates eta * dt).")
@click.option("--method", type=str, default="gd", show_default=True, help="--full scheme: gd (Euler) or rk4.")
@click.option("--init", "init", type=str, default="balanced", show_default=True,
              help="--full start: balanced (from --u0/--v0) or random (Gaussian, --scale, --seed).")
@click.option("--scale", type=float, default=0.05, show_default=True, help="Std of the random start.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random start.")
@click.option("--json", "as_json", is_flag=True, help='Print {"runs": [{param, t, u, v, p, loss}, ...]}.')
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write figures (PNG + SVG) and data to this run directory.")
def simulate(param, K, M, eta_qk, eta_ov, u0, v0, t, full, dt, method, init, scale, seed, as_json, plot_dir):
    """Integrate the reduced gradient flow of each parametrization (or the full matrices with --full)."""
    params = as_choice_list("param", param, PARAMETRIZATIONS)
    cfg = parse_simulate_config(params=params, K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, u0=u0, v0=v0,
                                t=parse_float_list("t", t), full=full, dt=dt, method=method, init=init,
                                scale=scale, seed=seed)
    start = time.perf_counter()
    try:
        runs = run_simulation(cfg)
    except ValueError as exc:           # a start the flow cannot leave, reported by theory/model_matrices
        raise ConfigError(str(exc)) from None
    if as_json:
        click.echo(json.dumps({"runs": [r.as_json() for r in runs]}))
    else:
        click.echo(_table(runs))
        click.echo(f"({time.perf_counter() - start:.2f} s)", err=True)
    if plot_dir is not None:
        from qkov.core.lock import results_lock

        with results_lock(plot_dir, "qkov simulate"):  # one writer per results directory
            write_plots(cfg, runs, plot_dir)
        if not as_json:
            click.echo(f"figures written to {plot_dir}")


def main(args: list[str] | None = None) -> None:
    """``python -m simulation``: this command alone, with ConfigError -> exit 2."""
    prog = "qkov simulate"
    try:
        simulate.main(args=args, prog_name=prog, standalone_mode=False)
    except ConfigError as exc:
        click.echo(f"{prog}: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(0)


__all__ = ["simulate", "run_simulation", "write_plots", "main"]
