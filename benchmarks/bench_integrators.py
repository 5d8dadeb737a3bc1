"""Benchmark: qkov's reduced-flow integrator against PLAIN scipy ``solve_ivp`` and diffrax, at matched accuracy.

    python benchmarks/bench_integrators.py [--quick] [--param FAFO] [--json OUT.json]

Problem (``--problem admissible``, the default): ``B`` trajectories of one parametrization's reduced flow (default
FAFO, 5 state coordinates) drawn over the whole admissible range, seeded by ``B``: balanced starts with ``u0`` and
``v0`` each log-uniform in 1e-12..3, ``K`` log-uniform in 2..1e4, ``M`` uniform in 1..99, ratios eta_qk/eta_ov
log-uniform in 1e-3..1e3, eta_ov = 1 (``--problem narrow``: the earlier grid, K = 10, M = 19, ratios 1e-2..1e2,
starts u0 = v0 in 1e-3..1); from t = 0 to a horizon ``t1``, every time-stepper in log time tau = log(1 + t)
(dy/dtau = e^tau f(y)), the final state only.

Methods:
* ``qkov``: :func:`simulation.reduced.integrate_states` as users call it. For a parametrization with a first
  integral (CACO, CAFO, FACO, FAFO: :func:`simulation.clockfree.clock_free_capable`) that is the clock-free path
  (:mod:`simulation.clockfree`: the level curve walked in u or w + Gauss-Legendre quadrature of t with panel error
  control + Newton on log t; its accuracy is fixed, the rtol ladder does not change it); otherwise batches of <= 4
  go to one scipy DOP853 call each (:mod:`simulation.scalar`) and larger ones to the vectorised DOP853 of
  :mod:`simulation.batch`.
* ``qkov-dop853`` (only where the clock-free path applies): the same call with ``simulation.reduced.CLOCK_FREE``
  off, i.e. qkov's time-stepping integrator on the same problem.
* ``scipy-LSODA``, ``scipy-DOP853``, ``scipy-RK45``: one plain ``solve_ivp(fun, (0, tau1), y0, method=...)`` call
  per trajectory, ``fun`` the generated right-hand side (a tuple of numpy scalars; no wrapper, no Jacobian).
  Above ``--scipy-cap`` trajectories the loop times the first ``cap`` and scales linearly (marked ``~``).
* ``diffrax-Tsit5``, ``diffrax-Dopri8`` (optional: ``pip install "qkov[bench]"``; the table says when absent):
  ``jax.jit(jax.vmap(diffeqsolve))`` in float64 with a PID controller, compile time excluded (a warm-up call on
  the same shapes) and printed separately.

Accuracy is relative per coordinate (:func:`simulation.accuracy.relative_error`: ``|y - y_ref| / |y_ref|``, no
floor), the error of a trajectory the largest over its coordinates, measured in this process on a calibration set
of ``--calib`` trajectories (drawn like the problem) against Radau at rtol 1e-13 with the generated Jacobian and
per-coordinate relative error control (:func:`simulation.accuracy.reference_states`). Every time-stepper gets the
same per-coordinate ``atol`` (1e-3 rtol times the coordinate's start: relative control, the best a plain call can
do for coordinates of 1e-12). **Matched accuracy, not lenient to the baselines**: qkov's 99th-percentile error is
measured first; every other method is timed at the loosest rung of the ladder (3e-8 .. 3e-14) whose p99 is at most
``max(qkov's p99, 1e-13)`` (1e-13: the reference's own level); a method that reaches no such rung is timed at its
most accurate rung and marked ``*`` with its p99 (it is then timed less accurate than qkov). Times: CPU seconds
(user + system of this process, all threads) and wall per call, best of ``--repeats`` blocks of at least
:data:`MIN_BLOCK_S` (1 call at 10,000 trajectories), every block's CPU time kept in the record (``cpu_blocks``);
the load average is recorded at the start and end of every horizon.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from theory.parametrization import FULLY_FACTORIZED

MATCH_FLOOR = 1e-13
"""The loosest accuracy a baseline is matched at: the reference's own level (Radau at rtol 1e-13)."""
LADDER = (3e-8, 1e-8, 3e-9, 1e-9, 3e-10, 1e-10, 3e-11, 1e-11, 3e-12, 1e-12, 3e-13, 1e-13, 3e-14)


def problem(param: str, B: int, kind: str = "admissible"):
    """Initial states ``(n, B)`` and parameters ``(4, B)`` (K, M, eta_qk, eta_ov), seeded by ``B`` (module
    docstring: ``admissible`` draws over the whole range, ``narrow`` is the earlier grid)."""
    from simulation.reduced import initial_states

    rng = np.random.default_rng(B)
    if kind == "narrow":
        ratios = 10.0 ** rng.uniform(-2, 2, B)
        starts = 10.0 ** rng.uniform(-3, 0, B)
        y0 = initial_states(param, starts, starts, 10.0)
        return y0, np.stack([np.full(B, 10.0), np.full(B, 19.0), ratios, np.ones(B)])
    u0, v0 = 10.0 ** rng.uniform(-12, np.log10(3), (2, B))
    K = np.maximum(2.0, np.round(10.0 ** rng.uniform(np.log10(2), 4, B)))
    M = rng.integers(1, 100, B).astype(float)
    ratios = 10.0 ** rng.uniform(-3, 3, B)
    return initial_states(param, u0, v0, K), np.stack([K, M, ratios, np.ones(B)])


def atols(y0, rtol):
    """Per-coordinate ``atol`` ``(n, B)``: relative error control for every method (module docstring)."""
    from simulation.accuracy import reference_atol

    return np.stack([reference_atol(y0[:, b], rtol) for b in range(y0.shape[1])], axis=1)


def scipy_final(rhs, y0, pars, tau1, method, rtol, atol):
    """One plain solve_ivp per column (``atol (n, B)``); final states ``(n, B)``."""
    from scipy.integrate import solve_ivp

    out = np.empty_like(y0)
    for b in range(y0.shape[1]):
        def fun(s, y, p=tuple(pars[:, b])):
            return np.exp(s) * np.array(rhs(*y, *p))
        sol = solve_ivp(fun, (0.0, tau1), y0[:, b], method=method, rtol=rtol, atol=atol[:, b])
        out[:, b] = sol.y[:, -1] if sol.success else np.nan
    return out


def radau_reference(param, y0, pars, tau1):
    """Final states ``(n, B)``: :func:`simulation.accuracy.reference_states` (Radau at rtol 1e-13, generated
    Jacobian, per-coordinate relative control), one call per trajectory."""
    from simulation.accuracy import reference_states

    t1 = np.array([float(np.expm1(tau1))])
    return np.stack([reference_states(param, y0[:, b], *pars[:, b], t1)[:, -1] for b in range(y0.shape[1])], axis=1)


def qkov_final(param, y0, pars, t1, rtol, atol):
    """``atol (n, B)``: qkov's DOP853 takes one scalar ``atol`` (its error control is per coordinate against
    ``atol + rtol |y|``), so it gets the smallest; the clock-free path has none."""
    from simulation.reduced import integrate_states

    states, _ = integrate_states(param, y0, *pars, [t1], rtol=rtol, atol=float(np.min(atol)))
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

    def one(y0, p, tau1, rtol, atol):                   # atol (n,): per coordinate
        term = diffrax.ODETerm(lambda s, y, a: jnp.exp(s) * jnp.stack(rhs(*y, *a)))
        sol = diffrax.diffeqsolve(term, solver, 0.0, tau1, None, y0=y0, args=tuple(p),
                                  stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
                                  saveat=diffrax.SaveAt(t1=True), max_steps=100_000)
        return sol.ys[-1]

    batched = jax.jit(jax.vmap(one, in_axes=(1, 1, None, None, 1), out_axes=1))   # tolerances traced: one compile

    def run(y0, pars, tau1, rtol, atol):
        first = y0.shape not in cache
        cache[y0.shape] = True
        start = time.perf_counter()
        out = np.asarray(batched(jnp.asarray(y0), jnp.asarray(pars), tau1, rtol, jnp.asarray(atol)))
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
    """99th percentile over trajectories of the largest relative error of any coordinate."""
    from simulation.accuracy import max_relative_error

    return float(np.percentile(max_relative_error(y, ref, axis=0), 99))


def calibrate(final, names, y0, pars, t1, ref) -> tuple[dict, float]:
    """qkov's p99 first, then for every other method the loosest rung with p99 <= max(qkov's, MATCH_FLOOR), else
    its most accurate rung: ``{name: (rtol, p99, reached)}`` and the level matched."""
    chosen: dict = {}
    qkov_p99 = error_p99(final("qkov", y0, pars, t1, 1e-10), ref) if "qkov" in names else MATCH_FLOOR
    match = max(qkov_p99, MATCH_FLOOR)
    if "qkov" in names:
        chosen["qkov"] = (1e-10, qkov_p99, True)
        print(f"t1={t1:g} qkov: p99 error {qkov_p99:.1e}; the others are matched at p99 <= {match:.1e}", flush=True)
    for name in names:
        if name == "qkov":
            continue
        best = (None, np.inf, False)
        for rtol in LADDER:
            err = error_p99(final(name, y0, pars, t1, rtol), ref)
            if err <= match:
                best = (rtol, err, True)
                break
            if err < best[1]:
                best = (rtol, err, False)
        chosen[name] = best
        print(f"t1={t1:g} {name}: rtol {best[0]} (p99 error {best[1]:.1e}{'' if best[2] else ', does not reach'})",
              flush=True)
    return chosen, match


MIN_BLOCK_S = 0.2
"""Shortest timed block: a call shorter than this (1 to 100 trajectories take milliseconds) is repeated within one
block until the block lasts this long, and the block's time divided by its calls is one measurement (``timeit``'s
autorange, here with CPU time beside wall time): one call of a few milliseconds is too short to time reliably."""


def time_blocks(fn, repeats) -> dict:
    """``repeats`` blocks of calls of ``fn`` (each at least :data:`MIN_BLOCK_S`, the call count fixed by the first
    call): ``s``/``cpu_s`` the best block's wall/CPU seconds per call, ``cpu_blocks`` every block's CPU seconds per
    call (their spread is the measurement's), ``calls`` per block."""
    start, start_cpu = time.perf_counter(), time.process_time()
    fn()
    first = time.perf_counter() - start
    calls = max(1, int(np.ceil(MIN_BLOCK_S / max(first, 1e-6)))) if first < MIN_BLOCK_S else 1
    walls, cpus = [first], [time.process_time() - start_cpu]
    if calls > 1 or repeats > 1:
        walls, cpus = [], []
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(calls):
                fn()
            walls.append((time.perf_counter() - start) / calls)
            cpus.append((time.process_time() - start_cpu) / calls)
    return {"s": min(walls), "cpu_s": min(cpus), "cpu_blocks": cpus, "calls": calls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="batches 1, 10, 100, 1000; horizons 1e3, 1e12")
    ap.add_argument("--param", default=FULLY_FACTORIZED)
    ap.add_argument("--batches", default=None, help="comma-separated batch sizes (default 1,10,100,1000,10000)")
    ap.add_argument("--horizons", default=None, help="comma-separated horizons t1 (default 1e3,1e12,1e40)")
    ap.add_argument("--calib", type=int, default=64, help="trajectories in the accuracy calibration")
    ap.add_argument("--problem", choices=("admissible", "narrow"), default="admissible",
                    help="admissible: starts, sizes and ratios over the whole range (default); narrow: the earlier grid")
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
    import subprocess
    import sys

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    record: dict = {"param": args.param, "problem": args.problem, "match_floor": MATCH_FLOOR,
                    "command": "python benchmarks/bench_integrators.py " + " ".join(sys.argv[1:]),
                    "commit": commit or None, "started_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                    "machine": platform.platform(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
                    "horizons": {}, "diffrax": bool(runners), "reference": "radau",
                    "qkov_path": "clock-free" if "qkov-dop853" in methods else "dop853"}

    def final(name, y0, pars, t1, rtol):
        tau1 = float(np.log1p(t1))
        atol = atols(y0, rtol)
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
        load_start = os.getloadavg()
        y0c, pc = problem(args.param, args.calib, args.problem)
        ref = radau_reference(args.param, y0c, pc, tau1)
        chosen, match = calibrate(final, list(methods) + list(runners), y0c, pc, t1, ref)
        rows = {B: time_row(final, runners, chosen, args, B, t1) for B in batches}
        record["horizons"][f"{t1:g}"] = {"reference": "radau", "match": match,
                                         "rtol": {k: v[0] for k, v in chosen.items()},
                                         "p99": {k: v[1] for k, v in chosen.items()},
                                         "reached": {k: v[2] for k, v in chosen.items()}, "times": rows,
                                         "load_avg_start": load_start, "load_avg_end": os.getloadavg()}
        record["load_avg_end"] = os.getloadavg()
        if args.json:                             # after every horizon, so a cut-short run keeps what it measured
            with open(args.json, "w") as fh:
                json.dump(record, fh, indent=1, default=float)
    print_table(record)


def time_row(final, runners, chosen, args, B, t1) -> dict:
    """Times of every calibrated method on ``B`` trajectories to ``t1``."""
    from functools import partial

    y0, pars = problem(args.param, B, args.problem)
    reps = 1 if B >= 10_000 else args.repeats
    row: dict = {}
    for name, (rtol, _err, _reached) in chosen.items():
        if rtol is None:
            row[name] = None
            continue
        if name.startswith("scipy") and B > args.scipy_cap:
            cap = args.scipy_cap
            timed = time_blocks(partial(final, name, y0[:, :cap], pars[:, :cap], t1, rtol), 1)
            row[name] = {"s": timed["s"] * B / cap, "cpu_s": timed["cpu_s"] * B / cap, "extrapolated": True}
        else:
            if name in runners:
                final(name, y0, pars, t1, rtol)                  # compile outside the timing
                compile_s = runners[name].compile_s
            row[name] = time_blocks(partial(final, name, y0, pars, t1, rtol), reps) | {"extrapolated": False}
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
    if not h["rtol"][n]:
        return f"{n} none"
    short = "" if h.get("reached", {}).get(n, True) else f"* (p99 {h['p99'][n]:.1e}: does not reach)"
    return f"{n} {h['rtol'][n]:g}{short}"


def print_table(record) -> None:
    """Markdown: CPU-s (wall s) per method; ratios are the method's CPU time over qkov's (> 1: qkov faster)."""
    for t1, h in record["horizons"].items():
        names = list(h["rtol"])
        ref = f"; reference {h.get('reference', 'dop853')}"
        match = f"; matched at p99 <= {h['match']:.1e}" if "match" in h else ""
        load = (f"; load {h['load_avg_start'][0]:.1f} -> {h['load_avg_end'][0]:.1f}" if "load_avg_start" in h else "")
        print(f"\nt1 = {t1}{ref}{match}{load}; rtol: " + ", ".join(_rung(record, h, n) for n in names))
        others = [n for n in names if n != "qkov"]
        print("| B | " + " | ".join(names) + " | " + " | ".join(f"{n} / qkov" for n in others) + " |")
        print("| ---: |" + " ---: |" * (len(names) + len(others)))
        for B, row in h["times"].items():
            q = row["qkov"]["cpu_s"] if row.get("qkov") else np.nan
            ratios = [f"{row[n]['cpu_s'] / q:.2g}x" if row.get(n) else "n/a" for n in others]
            print(f"| {B} | " + " | ".join(_cell(row.get(n)) for n in names) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main()
