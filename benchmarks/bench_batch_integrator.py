"""Benchmark: the vectorised batch integrator against one ``solve_ivp`` call per trajectory.

256 FAFO trajectories (16 ratios x 16 initial scales, K = 10, M = 19) from t = 0 to t = 1e12, both in
tau = log(1 + t) with DOP853 at the same tolerances (rtol 1e-10, atol 1e-12), so at equal accuracy
(the script prints the largest relative difference between the two). Then the wall time of
``qkov simulate --param all`` for one configuration (a fresh process, sympy derivation included).

    python benchmarks/bench_batch_integrator.py [--n 256]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256, help="number of trajectories (a square number)")
    ap.add_argument("--param", default="FAFO")
    args = ap.parse_args()
    from simulation.reduced import initial_states, integrate_many, reference_states
    from simulation.numeric import numeric_system

    numeric_system(args.param)                        # derivation outside the timings
    side = int(round(np.sqrt(args.n)))
    R, S = np.meshgrid(np.logspace(-2, 2, side), np.logspace(-3, 0, side))
    ratios, scales = R.ravel(), S.ravel()
    t = np.array([0.0, 1.0, 1e2, 1e4, 1e6, 1e8, 1e10, 1e12])
    start = time.perf_counter()
    batch = integrate_many(args.param, 10, 19, ratios, 1.0, scales, scales, t, rtol=1e-10, atol=1e-12)
    t_batch = time.perf_counter() - start
    start = time.perf_counter()
    worst = 0.0
    for b in range(ratios.size):
        y0 = initial_states(args.param, scales[b], scales[b], 10)[:, 0]
        ref = reference_states(args.param, y0, 10, 19, ratios[b], 1.0, t, rtol=1e-10, atol=1e-12)
        worst = max(worst, float(np.max(np.abs(ref - batch.state[:, :, b]) / np.maximum(np.abs(ref), 1e-6))))
    t_loop = time.perf_counter() - start
    print(f"{args.param}: {ratios.size} trajectories to t = 1e12")
    print(f"  batch integrator      {t_batch:8.3f} s")
    print(f"  solve_ivp per traj.   {t_loop:8.3f} s")
    print(f"  largest relative difference between them: {worst:.1e}")
    print(f"  speed-up ratio: {t_loop / t_batch:.1f}x (goal >= 50x on an idle machine)")
    cmd = [sys.executable, "-m", "qkov", "simulate", "--param", "all", "--K", "10", "--M", "19", "--eta-qk", "10",
           "--eta-ov", "1", "--u0", "0.1", "--v0", "0.1", "--t", "50,500,2500", "--json"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    print(f"  qkov simulate --param all (one configuration, fresh process): {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
