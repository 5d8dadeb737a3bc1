"""Issue 43: CPU time of the clock-free w walk (FACO, FAFO) with the generated walk rate against the composition it
replaced (OV + QK lift, full generated rhs, dv/dt / (alpha cosh w)), in one process on the same inputs.

The old rate is ``_WCurve.rate_composed`` (the replaced body, verbatim) patched in for ``_WCurve.rate``; old and new
alternate per repeat, best ``time.process_time`` of the repeats. Accuracy: p99 over the first 8 trajectories of the
B = 10,000 problem of the largest relative coordinate error against benchmarks.bench_integrators.radau_reference.

    PYTHONPATH=$PWD python benchmarks/wrate_compare.py [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from benchmarks.bench_integrators import atols, error_p99, problem, radau_reference
from simulation import clockfree
from simulation.reduced import integrate_states
from theory.parametrization import Parametrization, registered

T1, RTOL = 1e12, 1e-10
REPEATS = {1: 41, 10: 21, 10_000: 3}
WALKED_IN_W = tuple(str(p) for p in map(Parametrization, registered())
                    if clockfree.clock_free_capable(p) and p.qk.kind.name == "factorized")
"""The parametrizations whose level curve is walked in ``w`` (factorized QK): FACO, FAFO."""


def _run(param, y0, pars, atol):
    states, sol = integrate_states(param, y0, *pars, [T1], rtol=RTOL, atol=atol)
    return states[:, -1, :], sol.method


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ns = ap.parse_args()
    new_rate = clockfree._WCurve.rate
    old_rate = clockfree._WCurve.rate_composed
    out: dict = {"load_start": os.getloadavg(), "t1": T1, "rtol": RTOL, "rows": []}
    for param in WALKED_IN_W:
        for B, reps in REPEATS.items():
            y0, pars = problem(param, B)
            atol = float(np.min(atols(y0, RTOL)))
            best = {"old": np.inf, "new": np.inf}
            finals = {}
            for _ in range(reps):
                for name, rate in (("old", old_rate), ("new", new_rate)):
                    clockfree._WCurve.rate = rate  # type: ignore[method-assign]
                    t0 = time.process_time()
                    finals[name], method = _run(param, y0, pars, atol)
                    best[name] = min(best[name], time.process_time() - t0)
            clockfree._WCurve.rate = new_rate  # type: ignore[method-assign]
            row = {"param": param, "B": B, "repeats": reps, "old_s": best["old"], "new_s": best["new"],
                   "old_over_new": best["old"] / best["new"], "method": method,
                   "max_rel_new_vs_old": float(np.max(np.abs(finals["new"] / finals["old"] - 1)))}
            if B == 10_000:
                n = 8
                tau1 = float(np.log1p(T1))
                ref = radau_reference(param, y0[:, :n], pars[:, :n], tau1)
                row["p99_old"] = error_p99(finals["old"][:, :n], ref)
                row["p99_new"] = error_p99(finals["new"][:, :n], ref)
            print(json.dumps(row), flush=True)
            out["rows"].append(row)
    out["load_end"] = os.getloadavg()
    print(json.dumps({"load_start": out["load_start"], "load_end": out["load_end"]}))
    if ns.out:
        with open(ns.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
