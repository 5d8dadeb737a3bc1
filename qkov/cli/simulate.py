"""``qkov simulate``: integrate the derived flows (or the full matrices) and print, save or plot them."""

from __future__ import annotations

import json

import click

from qkov.cli.options import (ETA, Choice, IncreasingTimes, Number, json_option, out_option, param_option,
                              seed_option, size_options)
from qkov.cli.support import CONTEXT_SETTINGS
from qkov.core.simulate_config import SimulateConfig, parse_simulate_config
from qkov.study.engine import RunsFailed
from qkov.study.simulate_command import LAW_KEYS, simulate as run
from simulation import METHODS
from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS
from simulation.optimizer_maps import OPTIMIZERS

OPTIMIZER_CHOICES = ("flow", *OPTIMIZERS)
"""``flow`` (the reduced ODE) or an optimizer of :data:`simulation.optimizer_maps.OPTIMIZERS`."""


def optimizer_options(fn):
    """``--optimizer --beta1 --beta2 --eps --weight-decay --lr`` (issue 23: reduced optimizer maps)."""
    opts = [
        click.option("--optimizer", type=Choice(OPTIMIZER_CHOICES), default="flow", show_default=True,
                     help="flow (the reduced ODE) or the exact reduced map of an element-wise optimizer, steps of "
                          "eta * dt (gd, momentum, nesterov, adam, adamw, sign)."),
        click.option("--beta1", type=Number(0.0, 1.0), default=ADAM_BETAS[0], show_default=True,
                     help="Adam's beta1, or the momentum coefficient."),
        click.option("--beta2", type=Number(0.0, 1.0), default=ADAM_BETAS[1], show_default=True,
                     help="Adam's beta2."),
        click.option("--eps", type=Number(0.0, 1e3, lo_open=True), default=ADAM_EPS, show_default=True,
                     help="Adam's eps."),
        click.option("--weight-decay", type=Number(0.0, 1e3), default=0.0, show_default=True,
                     help="Weight decay (decoupled for adamw and sign, L2 otherwise)."),
        click.option("--lr", type=Number(0.0, 1e3, lo_open=True), default=None,
                     help="OV learning rate per step (QK: lr * eta_QK/eta_OV); sets dt = lr/eta_OV."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _table(cfg: SimulateConfig, runs) -> str:
    where = "reduced flow" if cfg.method == "reduced" else f"{cfg.method}, dt = {cfg.dt:g}"
    if cfg.optimizer != "flow":
        where = f"reduced {cfg.optimizer} map, dt = {cfg.dt:g}"
    lines = []
    for r in runs:
        lines.append(f"{r.param}  ({where})")
        lines.append(f"  {'t':>12} {'u':>12} {'v':>12} {'1 - p':>12} {'loss':>12}")
        for i in range(len(r.t)):
            lines.append(f"  {r.t[i]:12.6g} {r.u[i]:12.6g} {r.v[i]:12.6g} {r.residual[i]:12.6g} {r.loss[i]:12.6g}")
    return "\n".join(lines)


def _laws_table(cfg: SimulateConfig, tables) -> str:
    lines = []
    for param, tab in zip(cfg.params, tables):
        lines.append(f"{param}  (reduced flow; leading and next-order laws)")
        lines.append("  " + " ".join(f"{k:>16}" for k in ("t",) + LAW_KEYS))
        for i in range(len(tab["t"])):
            lines.append("  " + " ".join(f"{tab[k][i]:16.8g}" for k in ("t",) + LAW_KEYS))
    return "\n".join(lines)


@click.command("simulate", context_settings=CONTEXT_SETTINGS)
@param_option()
@size_options(K=10, M=19)
@click.option("--eta-qk", type=ETA, default=10.0, show_default=True, help="QK learning rate, in [1e-4, 1e4]; eta_QK/eta_OV in [1e-6, 1e6].")
@click.option("--eta-ov", type=ETA, default=1.0, show_default=True, help="OV learning rate, in [1e-4, 1e4].")
@click.option("--u0", type=Number(0.0, 100.0), default=0.1, show_default=True,
              help="Initial OV margin u (MODEL.md's symmetric/balanced start); > 0 for factorized OV.")
@click.option("--v0", type=Number(0.0, 100.0), default=0.1, show_default=True,
              help="Initial attention logit gap v; > 0 for factorized QK.")
@click.option("--t", "t", type=IncreasingTimes(), default="50,500,2500", show_default=True,
              help="Output times, strictly increasing, <= 1e15.")
@click.option("--method", type=Choice(tuple(METHODS)), default="reduced", show_default=True,
              help="reduced (derived ODE), full-gd / full-rk4 (full matrices, step --dt), paper-rk4 (the paper's "
                   "equations, CACO).")
@click.option("--dt", type=Number(0.0, 1e3, lo_open=True), default=0.05, show_default=True,
              help="Step of the full-matrix and paper methods (rates eta * dt).")
@click.option("--init", type=Choice(("balanced", "random")), default="balanced", show_default=True,
              help="Full-matrix start: balanced (from --u0/--v0) or random (Gaussian, --scale, --seed).")
@click.option("--scale", type=Number(0.0, 10.0, lo_open=True), default=0.05, show_default=True,
              help="Std of the random start.")
@seed_option()
@click.option("--laws", is_flag=True,
              help="Also print theory's asymptotic laws at each time: leading and next order for u, v and 1 - p "
                   "(reduced method only).")
@json_option()
@click.option("--save", is_flag=True, help="Write the run to OUT/runs/simulate-<key>/ (runs.json, trajectories.npz); a complete run of "
                   "the same options there is reused.")
@click.option("--plot", is_flag=True, help="Also write figures (PNG + SVG) into that run directory (implies --save).")
@out_option()
@optimizer_options
def simulate(params, K, M, eta_qk, eta_ov, u0, v0, t, method, dt, init, scale, seed, laws, as_json, save, plot, out,
             optimizer, beta1, beta2, eps, weight_decay, lr):
    """Integrate the derived flows (reduced ODE or full matrices) and print u, v, p, loss."""
    cfg = parse_simulate_config(params=params, K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, u0=u0, v0=v0, t=t,
                                method=method, dt=dt, init=init, scale=scale, seed=seed, optimizer=optimizer,
                                beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay, lr=lr)
    try:
        res = run(cfg, laws=laws, save_to=out if (save or plot) else None, plots=plot)
    except RunsFailed as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        records = [r.as_json() for r in res.runs]
        for rec, tab in zip(records, res.laws or ()):
            rec["laws"] = {k: [float(x) for x in v] for k, v in tab.items() if k != "t"}
        click.echo(json.dumps({"runs": records}))
    else:
        click.echo(_table(cfg, res.runs) if res.laws is None else _laws_table(cfg, res.laws))
        click.echo(f"({res.seconds:.2f} s)", err=True)
        if res.run_dir is not None:
            if res.reused:
                click.echo("(reused the complete run of this config)", err=True)
            click.echo(f"results: {res.run_dir.resolve()}")
            for fig in res.figures:
                click.echo(f"figure: {fig.resolve()}")


__all__ = ["simulate"]
