"""Benchmark: training many small models at once (stacked) against a per-model Python loop.

Two comparisons, each in one process, one torch thread:

* ``--mode vmap``: full-batch GD on the MODEL.md population for every parametrization x ratio x seed with
  :func:`validation.synthetic.stacked.train_stacked` (``torch.func.vmap``) against
  :func:`~validation.synthetic.stacked.train_loop`; prints each parametrization's times and their ratio.
* ``--mode grid`` (default): what ``qkov validate synthetic`` and the study's synthetic stage train, the quick
  study's synthetic configs (:func:`qkov.study.synthetic_stage.study_runs`), by
  :func:`validation.synthetic.experiment.run_grid` stacked (the default) against ``stacked=False`` (the per-pair
  loop), alternating, best of ``--repeats``; prints each config's times, ratio and the largest relative
  difference of the logged columns (each column against its largest magnitude).

    nice -n 10 python benchmarks/bench_stacked_training.py [--mode grid|vmap] [--repeats 2]
    nice -n 10 python benchmarks/bench_stacked_training.py --mode vmap [--steps 300] [--seeds 4] [--ratios 1,3,10]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch


def vmap_mode(a: argparse.Namespace) -> None:
    from theory.parametrization import BASELINE
    from validation.attention import PARAMETRIZATIONS
    from validation.synthetic.stacked import train_loop, train_stacked

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


def grid_mode(a: argparse.Namespace) -> None:
    from qkov.core.config import parse_config
    from qkov.study.synthetic_stage import study_runs
    from validation.synthetic.experiment import SyntheticConfig, run_grid, stacks_to_rounding

    cfgs = [parse_config(SyntheticConfig, **c) for k, c in study_runs(True, None) if k == "synthetic"]
    run_grid(cfgs[0].replace(steps=2, log_every=1))           # warm-up
    tot_loop = tot_stack = 0.0
    for cfg in cfgs:
        tl = ts = np.inf
        for _ in range(a.repeats):
            s = time.perf_counter(); loop = run_grid(cfg, stacked=False); tl = min(tl, time.perf_counter() - s)
            s = time.perf_counter(); stack = run_grid(cfg); ts = min(ts, time.perf_counter() - s)
        diff = max(float(np.nanmax(np.abs(x.log[k] - y.log[k])) / max(np.nanmax(np.abs(x.log[k])), 1e-300))
                   for x, y in zip(loop, stack) for k in x.log if np.isfinite(x.log[k]).any()
                   and np.nanmax(np.abs(x.log[k])) > 1e-12)
        tot_loop += tl
        tot_stack += ts
        how = "stacked" if stacks_to_rounding(cfg) else "loop (AdamW from the symmetric start)"
        print(f"{cfg.optimizer} on {cfg.data}, {cfg.init} start, {len(cfg.params)}x{len(cfg.ratios)} pairs x "
              f"{cfg.steps} steps: loop {tl:.2f} s, run_grid [{how}] {ts:.2f} s, ratio {tl / ts:.2f}x, "
              f"largest relative difference {diff:.1e}", flush=True)
    print(f"total: loop {tot_loop:.2f} s, run_grid {tot_stack:.2f} s, ratio {tot_loop / tot_stack:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("grid", "vmap"), default="grid")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--ratios", default="1,3,10")
    ap.add_argument("-K", type=int, default=4)
    ap.add_argument("-M", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    (grid_mode if a.mode == "grid" else vmap_mode)(a)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
