"""Benchmark: training many small models at once (stacked, vmapped) against a per-model Python loop.

Full-batch GD on the MODEL.md population for every parametrization x ratio x seed; prints each
parametrization's loop time, stacked time and their ratio, then the total ratio.

    python benchmarks/bench_stacked_training.py [--steps 300] [--seeds 4] [--ratios 1,3,10]
"""

from __future__ import annotations

import argparse

import torch

from theory.parametrization import BASELINE
from validation.attention import PARAMETRIZATIONS
from validation.synthetic.stacked import train_loop, train_stacked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--ratios", default="1,3,10")
    ap.add_argument("-K", type=int, default=4)
    ap.add_argument("-M", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    ratios = [float(r) for r in a.ratios.split(",")]
    seeds = list(range(a.seeds))
    n = len(ratios) * len(seeds)
    train_stacked(BASELINE, a.K, a.M, ratios, seeds, 2)       # warm up vmap tracing
    tot_loop = tot_stack = 0.0
    for p in PARAMETRIZATIONS:
        s = train_stacked(p, a.K, a.M, ratios, seeds, a.steps)
        l_ = train_loop(p, a.K, a.M, ratios, seeds, a.steps)
        diff = max(float((s.params[k] - l_.params[k]).abs().max()) for k in s.params)
        tot_loop += l_.wall_s
        tot_stack += s.wall_s
        print(f"{p}: {n} models x {a.steps} steps  loop {l_.wall_s:.2f}s  stacked {s.wall_s:.2f}s  "
              f"speed-up {l_.wall_s / s.wall_s:.2f}x  max |diff| {diff:.1e}")
    print(f"total: loop {tot_loop:.2f}s, stacked {tot_stack:.2f}s, loop/stacked = {tot_loop / tot_stack:.2f}")


if __name__ == "__main__":
    main()
