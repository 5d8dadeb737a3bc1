"""Benchmark: a seeded Adam ensemble (issue 41) against the one run a user would train instead, and the predictor.

    nice -n 10 python benchmarks/bench_ensemble.py [--size 64] [--steps 2000]

Issue 41's case (CACO, K = 4, M = 3, u0 = v0 = 0.1, Adam(0.9, 0.999, 1e-8), lr 1e-3, ratio 4), float64, one torch
thread, ``--steps`` steps each, in this process after a warm-up: one run of
:func:`validation.synthetic.adam_compare.train_symmetric` (torch.optim.Adam, the plain call; logged every 10 steps)
against :func:`validation.synthetic.ensemble.train_ensemble` with ``--size`` members (one vmap batch, recorded every
5 steps), and the sign-pattern predictor (:func:`simulation.desharpen_predictor.predict_probability`, its 3 branch
maps at this ratio and ratio 1) over the same steps. Prints CPU seconds, the ensemble's cost in units of one run and
per member, and the load average.
"""

from __future__ import annotations

import argparse
import os
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=2000)
    a = ap.parse_args()
    from simulation.desharpen_predictor import predict_probability
    from simulation.optimizer_maps import OptimizerSpec
    from theory.parametrization import BASELINE
    from validation.synthetic.adam_compare import train_symmetric
    from validation.synthetic.ensemble import train_ensemble

    torch.set_num_threads(1)
    spec = OptimizerSpec("adam", 0.9, 0.999, 1e-8)
    kw = dict(K=4, M=3, u0=0.1, v0=0.1, dt=1e-3)

    def one(steps):
        return train_symmetric(BASELINE, 4.0, optimizer="adam", betas=(0.9, 0.999), steps=steps, log_every=10, **kw)

    def ens(steps):
        return train_ensemble(BASELINE, spec, ratios=(4.0,), levels=(1e-9,), steps=steps, size=a.size, **kw)

    def pred(steps):
        return predict_probability(BASELINE, spec, eta_ov=1.0, ratios=(1.0, 4.0), levels=(1e-9,), steps=steps, **kw)

    for f in (one, ens, pred):
        f(20)                                                   # warm-up
    t = {}
    for name, f in (("one run", one), ("ensemble", ens), ("predictor", pred)):
        t0 = time.process_time()
        f(a.steps)
        t[name] = time.process_time() - t0
    print(f"{a.steps} steps, CPU s: one run {t['one run']:.2f}, ensemble of {a.size} {t['ensemble']:.2f} "
          f"({t['ensemble'] / t['one run']:.1f}x one run, {t['ensemble'] / t['one run'] / a.size:.3f}x per member), "
          f"predictor (ratios 1 and 4) {t['predictor']:.2f}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
