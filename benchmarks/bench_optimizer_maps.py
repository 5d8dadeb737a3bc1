"""Benchmark: the batched reduced optimizer maps (simulation.optimizer_batch) against the per-configuration loop.

    python benchmarks/bench_optimizer_maps.py [--C 200] [--steps 200] [--param CACO,FAFO]

``C`` Adam configurations (ratios eta_qk/eta_ov in 1e-1..1e1, lr dt in 1e-3..1e-1, beta1 in 0.5..0.95, beta2 in
0.9..0.9999, eps in 1e-8..1e-6, starts u0 = v0 in 1e-2..1) of one parametrization, K = 5, M = 4, ``steps`` steps,
every step recorded: one call of :func:`simulation.optimizer_batch.run_orbit_maps` against ``C`` calls of
:func:`simulation.optimizer_maps.run_orbit_map`. Best of 2 alternating repeats; prints the ratio and the largest
difference of the observables (u, v, p, loss) between the two.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--C", type=int, default=200)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--param", default="CACO,FAFO")
    args = ap.parse_args()
    from simulation.optimizer_batch import run_orbit_maps
    from simulation.optimizer_maps import OptimizerSpec, run_orbit_map

    rng = np.random.default_rng(0)
    C = args.C
    g = dict(eta_qk=10.0 ** rng.uniform(-1, 1, C), eta_ov=1.0, dt=10.0 ** rng.uniform(-3, -1, C),
             beta1=rng.uniform(0.5, 0.95, C), beta2=rng.uniform(0.9, 0.9999, C), eps=10.0 ** rng.uniform(-8, -6, C),
             u0=10.0 ** rng.uniform(-2, 0, C), v0=10.0 ** rng.uniform(-2, 0, C))
    for param in args.param.split(","):
        def batch(param=param):
            return run_orbit_maps(param, "adam", K=5, M=4, steps=args.steps, **g)

        def loop(param=param):
            return [run_orbit_map(param, OptimizerSpec("adam", g["beta1"][c], g["beta2"][c], g["eps"][c]), K=5, M=4,
                                  eta_qk=g["eta_qk"][c], eta_ov=1.0, dt=g["dt"][c], steps=args.steps,
                                  u0=g["u0"][c], v0=g["v0"][c]) for c in range(C)]
        tb = tl = np.inf
        for _ in range(2):
            s = time.perf_counter(); b = batch(); tb = min(tb, time.perf_counter() - s)
            s = time.perf_counter(); runs = loop(); tl = min(tl, time.perf_counter() - s)
        diff = max(float(np.max(np.abs(getattr(b, k)[:, c] - getattr(r, k)))) for c, r in enumerate(runs)
                   for k in ("u", "v", "p", "loss"))
        print(f"{param}: {C} Adam configurations x {args.steps} steps: batched {tb:.3f} s, loop {tl:.3f} s, "
              f"ratio {tl / tb:.1f}x, largest observable difference {diff:.1e}")


if __name__ == "__main__":
    main()
