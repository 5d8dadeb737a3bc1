"""Benchmark: full-matrix training of a grid of Adam configurations at once (torch.func.vmap) against the loop.

    nice -n 10 python benchmarks/bench_grid_training.py [--C 200] [--steps 100] [--record-every 10] [--param CACO,FAFO]

``C`` Adam configurations (ratios eta_qk/eta_ov in 1e-1..1e1, lr dt in 1e-3..1e-1, beta1 in 0.5..0.95, beta2 in
0.9..0.9999, eps in 1e-8..1e-6, starts u0, v0 in 1e-2..1, perturbed by ``--noise``; the grid of
benchmarks/bench_optimizer_maps.py) of one parametrization, K = 5, M = 4, float64, one torch thread:
:func:`validation.synthetic.grid_training.train_grid` against
:func:`~validation.synthetic.grid_training.train_grid_loop` (each configuration with ``torch.optim.Adam``), both
observing u, v, p, residual, loss every ``--record-every`` steps. Best of ``--repeats`` alternating runs in this
process, after a warm-up of each; prints both times, their ratio, the largest observable difference and the load
average.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch


def grid(C: int, noise: float, seed: int = 0) -> dict:
    """The benchmark's configurations (as bench_optimizer_maps.py) and the start's perturbation."""
    rng = np.random.default_rng(seed)
    return dict(eta_qk=10.0 ** rng.uniform(-1, 1, C), eta_ov=1.0, dt=10.0 ** rng.uniform(-3, -1, C),
                beta1=rng.uniform(0.5, 0.95, C), beta2=rng.uniform(0.9, 0.9999, C), eps=10.0 ** rng.uniform(-8, -6, C),
                u0=10.0 ** rng.uniform(-2, 0, C), v0=10.0 ** rng.uniform(-2, 0, C), noise=noise)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--C", type=int, default=200)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--record-every", type=int, default=10)
    ap.add_argument("--param", default="CACO,FAFO")
    ap.add_argument("--noise", type=float, default=1e-3, help="start perturbation (0: the exact symmetric start)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    from validation.synthetic.grid_training import GRID_OBSERVABLES, train_grid, train_grid_loop

    torch.set_num_threads(a.threads)
    g = grid(a.C, a.noise)
    kw = dict(K=5, M=4, steps=a.steps, record=range(0, a.steps + 1, a.record_every), **g)
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for param in a.param.split(","):
        small = {k: (v[:2] if isinstance(v, np.ndarray) else v) for k, v in kw.items()} | {"steps": 2}
        train_grid(param, **small), train_grid_loop(param, **small)          # warm-up (vmap, allocator)
        tg = tl = np.inf
        for _ in range(a.repeats):
            s = time.perf_counter(); b = train_grid(param, **kw); tg = min(tg, time.perf_counter() - s)
            s = time.perf_counter(); lo = train_grid_loop(param, **kw); tl = min(tl, time.perf_counter() - s)
        diff = max(float(np.max(np.abs(getattr(b, k) - getattr(lo, k)))) for k in GRID_OBSERVABLES)
        print(f"{param}: {a.C} Adam configurations x {a.steps} steps: grid {tg:.2f} s, loop {tl:.2f} s, "
              f"ratio {tl / tg:.1f}x, largest observable difference {diff:.1e}", flush=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
