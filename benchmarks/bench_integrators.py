"""Benchmark: qkov's reduced-flow integrator against PLAIN scipy ``solve_ivp`` and diffrax, at matched accuracy.

    python benchmarks/bench_integrators.py [--quick] [--param FAFO] [--json OUT.json]

Problem: ``B`` trajectories of one parametrization's reduced flow (default FAFO, 5 state coordinates; K = 10,
M = 19, eta_ov = 1, ratios eta_qk/eta_ov log-spaced over 1e-2..1e2, balanced starts u0 = v0 log-spaced over
1e-3..1) from t = 0 to a horizon ``t1``, every method in log time tau = log(1 + t) (dy/dtau = e^tau f(y)), the
final state only.

Methods:
* ``qkov``: :func:`simulation.reduced.integrate_states` as users call it. For a parametrization with a first
  integral (CACO, CAFO, FACO, FAFO: :func:`simulation.clockfree.clock_free_capable`) that is the clock-free path
  (:mod:`simulation.clockfree`: the level curve walked in u or w + Gauss-Legendre quadrature of t + Newton on log t;
  its accuracy is fixed, the rtol ladder does not change it); otherwise batches of <= 4 go to one scipy DOP853 call
  each (:mod:`simulation.scalar`) and larger ones to the vectorised DOP853 of :mod:`simulation.batch`.
* ``qkov-dop853`` (only where the clock-free path applies): the same call with ``simulation.reduced.CLOCK_FREE``
  off, i.e. qkov's time-stepping integrator on the same problem.
* ``scipy-LSODA``, ``scipy-DOP853``, ``scipy-RK45``: one plain ``solve_ivp(fun, (0, tau1), y0, method=...)`` call
  per trajectory, ``fun`` the generated right-hand side (a tuple of numpy scalars; no wrapper, no Jacobian).
  Above ``--scipy-cap`` trajectories the loop times the first ``cap`` and scales linearly (marked ``~``).
* ``diffrax-Tsit5``, ``diffrax-Dopri8`` (optional: ``pip install "qkov[bench]"``; the table says when absent):
  ``jax.jit(jax.vmap(diffeqsolve))`` in float64 with a PID controller, compile time excluded (a warm-up call on
  the same shapes) and printed separately.

Matched accuracy: for each method and horizon the loosest ``rtol`` of a ladder (atol = rtol / 100) whose
99th-percentile final-state error is <= 2e-11, measured in this process on a calibration set of trajectories
against scipy DOP853 at rtol 3e-14, atol 3e-16 (:data:`REFERENCE_RTOL`; at 1e-13 the reference's own error reached
3e-11 on CACO at t = 1e40, more than the target), or with ``--reference radau`` against Radau at rtol 1e-13 with the
generated Jacobian (about 1 s a trajectory: for factorized QK at long horizons, where DOP853's ``(a, b, c)`` drifts
along the conserved directions by more than the target: FACO at 1e40, p99 4e-11 from Radau). Error of one
trajectory: max over coordinates of ``|y - y_ref| / max(1, |y_ref|)``. A method that reaches no rung is reported as
such and not timed. Times: best of ``--repeats`` (1 at 10,000 trajectories), wall clock, ``time.perf_counter``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from theory.parametrization import FULLY_FACTORIZED

TARGET = 2e-11
REFERENCE_RTOL = 3e-14
LADDER = (1e-8, 3e-9, 1e-9, 3e-10, 1e-10, 3e-11, 1e-11, 3e-12, 1e-12, 3e-13, 1e-13)


def problem(param: str, B: int):
    """Initial states ``(n, B)`` and parameters ``(4, B)`` (K, M, eta_qk, eta_ov) of a deterministic grid."""
    from simulation.reduced import initial_states

    rng = np.random.default_rng(B)
    ratios = 10.0 ** rng.uniform(-2, 2, B)
    starts = 10.0 ** rng.uniform(-3, 0, B)
    y0 = initial_states(param, starts, starts, 10.0)
    pars = np.stack([np.full(B, 10.0), np.full(B, 19.0), ratios, np.ones(B)])
    return y0, pars


def scipy_final(rhs, y0, pars, tau1, method, rtol, atol):
    """One plain solve_ivp per column; final states ``(n, B)``."""
    from scipy.integrate import solve_ivp

    out = np.empty_like(y0)
    for b in range(y0.shape[1]):
        def fun(s, y, p=tuple(pars[:, b])):
            return np.exp(s) * np.array(rhs(*y, *p))
        sol = solve_ivp(fun, (0.0, tau1), y0[:, b], method=method, rtol=rtol, atol=atol)
        out[:, b] = sol.y[:, -1] if sol.success else np.nan
    return out


def radau_reference(param, y0, pars, tau1):
    """Final states ``(n, B)``: :func:`simulation.reduced.reference_states` with Radau at rtol 1e-13, atol 1e-16 (the
    registered ``Radau`` integrator, which takes the generated Jacobian), one call per trajectory."""
    from simulation.reduced import reference_states

    t1 = np.array([float(np.expm1(tau1))])
    return np.stack([reference_states(param, y0[:, b], *pars[:, b], t1, rtol=1e-13, atol=1e-16, method="Radau")[:, -1]
                     for b in range(y0.shape[1])], axis=1)


def qkov_final(param, y0, pars, t1, rtol, atol):
    from simulation.reduced import integrate_states

    states, _ = integrate_states(param, y0, *pars, [t1], rtol=rtol, atol=atol)
    return states[:, -1, :]


def diffrax_runner(param: str, solver_name: str):
    """A ``run(y0, pars, tau1, rtol, atol) -> final states`` built on diffrax, or None when it is not installed."""
    try:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import diffrax
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    import inspect

    from simulation import generated
    from theory.parametrization import Parametrization

    src = inspect.getsource(generated.RHS[Parametrization(param)])
    ns: dict = {}
    exec(compile(src.replace("numpy.", "jnp.").replace("scipy.special.", "jax.scipy.special."), "<rhs>", "exec"),
         {"jnp": jnp, "jax": jax}, ns)
    rhs = next(iter(v for k, v in ns.items() if k.startswith("rhs_")))
    solver = getattr(diffrax, solver_name)()
    cache: dict = {}

    def one(y0, p, tau1, rtol, atol):
        term = diffrax.ODETerm(lambda s, y, a: jnp.exp(s) * jnp.stack(rhs(*y, *a)))
        sol = diffrax.diffeqsolve(term, solver, 0.0, tau1, None, y0=y0, args=tuple(p),
                                  stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
                                  saveat=diffrax.SaveAt(t1=True), max_steps=100_000)
        return sol.ys[-1]

    batched = jax.jit(jax.vmap(one, in_axes=(1, 1, None, None, None), out_axes=1))   # tolerances traced: one compile

    def run(y0, pars, tau1, rtol, atol):
        first = y0.shape not in cache
        cache[y0.shape] = True
        start = time.perf_counter()
        out = np.asarray(batched(jnp.asarray(y0), jnp.asarray(pars), tau1, rtol, atol))
        run.compile_s = time.perf_counter() - start if first else 0.0
        return out

    run.compile_s = 0.0
    return run


def _methods(param: str) -> dict:
    """qkov's rows (and qkov-dop853 where the clock-free path applies) and the scipy methods."""
    from simulation.clockfree import clock_free_capable
    from theory.parametrization import Parametrization

    qkov: dict = {"qkov": None, "qkov-dop853": None} if clock_free_capable(Parametrization(param)) else {"qkov": None}
    return {**qkov, "scipy-LSODA": "LSODA", "scipy-DOP853": "DOP853", "scipy-RK45": "RK45"}


def error_p99(y, ref):
    err = np.max(np.abs(y - ref) / np.maximum(1.0, np.abs(ref)), axis=0)
    err = np.where(np.isfinite(err), err, np.inf)
    return float(np.percentile(err, 99))


def best_time(fn, repeats, cpu=None):
    """Best wall time of ``repeats`` calls; its CPU time (process, all threads) goes to ``cpu`` (a list) if given."""
    best, best_cpu = np.inf, np.nan
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall = time.perf_counter() - start
        if wall < best:
            best, best_cpu = wall, time.process_time() - start_cpu
    if cpu is not None:
        cpu.append(best_cpu)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="batches 1, 10, 100, 1000; horizons 1e3, 1e12")
    ap.add_argument("--param", default=FULLY_FACTORIZED)
    ap.add_argument("--batches", default=None, help="comma-separated batch sizes (default 1,10,100,1000,10000)")
    ap.add_argument("--horizons", default=None, help="comma-separated horizons t1 (default 1e3,1e12,1e40)")
    ap.add_argument("--calib", type=int, default=64, help="trajectories in the accuracy calibration")
    ap.add_argument("--reference", choices=("dop853", "radau"), default="dop853",
                    help="the calibration reference: scipy DOP853 at rtol 3e-14 (default), or Radau at rtol 1e-13 with "
                         "the generated Jacobian (about 1 s a trajectory; for factorized QK at long horizons, where "
                         "DOP853 drifts along the conserved directions)")
    ap.add_argument("--scipy-cap", type=int, default=100, help="scipy loops time at most this many trajectories")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--methods", default=None, help="comma-separated subset of the methods (default all)")
    ap.add_argument("--table", default=None, help="only print the tables of a results file written by --json")
    args = ap.parse_args()
    if args.table:
        with open(args.table) as fh:
            print_table(json.load(fh))
        return
    from simulation import generated
    from theory.parametrization import Parametrization

    batches = [int(x) for x in (args.batches or ("1,10,100,1000" if args.quick else "1,10,100,1000,10000")).split(",")]
    horizons = [float(x) for x in (args.horizons or ("1e3,1e12" if args.quick else "1e3,1e12,1e40")).split(",")]
    rhs = generated.RHS[Parametrization(args.param)]
    methods = _methods(args.param)
    runners = {}
    for name in ("Tsit5", "Dopri8"):
        r = diffrax_runner(args.param, name)
        if r is not None:
            runners[f"diffrax-{name}"] = r
    if args.methods:
        keep = set(args.methods.split(","))
        methods = {k: v for k, v in methods.items() if k in keep}
        runners = {k: v for k, v in runners.items() if k in keep}
    if not runners:
        print("diffrax: not installed (pip install 'qkov[bench]'); its columns are absent")
    record: dict = {"param": args.param, "target_p99": TARGET, "machine": platform.platform(),
                    "load_avg": os.getloadavg(), "horizons": {}, "diffrax": bool(runners),
                    "qkov_path": "clock-free" if "qkov-dop853" in methods else "dop853"}

    def final(name, y0, pars, t1, rtol):
        tau1 = float(np.log1p(t1))
        atol = rtol / 100
        if name == "qkov":
            return qkov_final(args.param, y0, pars, t1, rtol, atol)
        if name == "qkov-dop853":
            import simulation.reduced as reduced

            reduced.CLOCK_FREE = False
            try:
                return qkov_final(args.param, y0, pars, t1, rtol, atol)
            finally:
                reduced.CLOCK_FREE = True
        if name in runners:
            return runners[name](y0, pars, tau1, rtol, atol)
        return scipy_final(rhs, y0, pars, tau1, methods[name], rtol, atol)

    for t1 in horizons:
        tau1 = float(np.log1p(t1))
        y0c, pc = problem(args.param, args.calib)
        ref = (radau_reference(args.param, y0c, pc, tau1) if args.reference == "radau"
               else scipy_final(rhs, y0c, pc, tau1, "DOP853", REFERENCE_RTOL, REFERENCE_RTOL / 100))
        chosen = {}
        for name in list(methods) + list(runners):
            for rtol in LADDER:
                err = error_p99(final(name, y0c, pc, t1, rtol), ref)
                if err <= TARGET:
                    chosen[name] = (rtol, err)
                    break
            else:
                chosen[name] = (None, err)
            print(f"t1={t1:g} {name}: rtol {chosen[name][0]} (p99 error {chosen[name][1]:.1e})", flush=True)
        rows = {B: time_row(final, runners, chosen, args, B, t1) for B in batches}
        record["horizons"][f"{t1:g}"] = {"reference": args.reference, "rtol": {k: v[0] for k, v in chosen.items()},
                                         "p99": {k: v[1] for k, v in chosen.items()}, "times": rows}
        record["load_avg_end"] = os.getloadavg()
        if args.json:                             # after every horizon, so a cut-short run keeps what it measured
            with open(args.json, "w") as fh:
                json.dump(record, fh, indent=1, default=float)
    print_table(record)


def time_row(final, runners, chosen, args, B, t1) -> dict:
    """Times of every calibrated method on ``B`` trajectories to ``t1``."""
    from functools import partial

    y0, pars = problem(args.param, B)
    reps = 1 if B >= 10_000 else args.repeats
    row: dict = {}
    for name, (rtol, _err) in chosen.items():
        if rtol is None:
            row[name] = None
            continue
        if name.startswith("scipy") and B > args.scipy_cap:
            cap = args.scipy_cap
            cpu: list = []
            sec = best_time(partial(final, name, y0[:, :cap], pars[:, :cap], t1, rtol), 1, cpu) * B / cap
            row[name] = {"s": sec, "cpu_s": cpu[0] * B / cap, "extrapolated": True}
        else:
            if name in runners:
                final(name, y0, pars, t1, rtol)                  # compile outside the timing
                compile_s = runners[name].compile_s
            cpu = []
            row[name] = {"s": best_time(partial(final, name, y0, pars, t1, rtol), reps, cpu), "cpu_s": cpu[0],
                         "extrapolated": False}
            if name in runners:
                row[name]["compile_s"] = compile_s
        print(f"  t1={t1:g} B={B} {name}: {row[name]['s']:.4f} s wall, {row[name]['cpu_s']:.4f} CPU-s", flush=True)
    return row


def _cell(c) -> str:
    if c is None:
        return "n/a"
    return f"{'~' if c['extrapolated'] else ''}{c['cpu_s']:.3g} ({c['s']:.3g})"


def _rung(record, h, n) -> str:
    if n == "qkov" and record.get("qkov_path") == "clock-free":
        return f"qkov clock-free (no rtol; p99 {h['p99'][n]:.1e})"
    return f"{n} {h['rtol'][n]:g}" if h["rtol"][n] else f"{n} none"


def print_table(record) -> None:
    """Markdown: CPU-s (wall s) per method; ratios are the method's CPU time over qkov's (> 1: qkov faster)."""
    for t1, h in record["horizons"].items():
        names = list(h["rtol"])
        ref = f"; reference {h['reference']}" if h.get("reference", "dop853") != "dop853" else ""
        print(f"\nt1 = {t1}{ref}; matched rtol: " + ", ".join(_rung(record, h, n) for n in names))
        others = [n for n in names if n != "qkov"]
        print("| B | " + " | ".join(names) + " | " + " | ".join(f"{n} / qkov" for n in others) + " |")
        print("| ---: |" + " ---: |" * (len(names) + len(others)))
        for B, row in h["times"].items():
            q = row["qkov"]["cpu_s"] if row.get("qkov") else np.nan
            ratios = [f"{row[n]['cpu_s'] / q:.2g}x" if row.get(n) else "n/a" for n in others]
            print(f"| {B} | " + " | ".join(_cell(row.get(n)) for n in names) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main()
