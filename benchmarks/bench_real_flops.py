"""Achieved FLOP rate per real-data model, and a checkpoint's cost against an epoch's training.

For each configuration (dataset x model, the study's own defaults), the run is prepared exactly as
``qkov validate real`` prepares it (:func:`validation.real.run._prepare_classifier`: real data, vocabulary,
model, tracker), then in this process:

- FLOPs of one training step: forward + backward of one full batch under
  ``torch.utils.flop_counter.FlopCounterMode`` (matmuls, attention and convolutions: what the counter counts);
- seconds per training step: :func:`validation.real.training.train` on the first ``--steps`` batches of the
  training split (no checkpoints), best of ``--repeats`` alternating rounds;
- seconds per checkpoint: one call of the run's tracker (probe and validation losses, the test metrics without
  ERASER), best of the same rounds;
- the reference: a float32 512 x 512 matmul timed in the same process with the same thread count.

It prints per model GFLOP per step, achieved GFLOP/s, the fraction of the matmul rate, and the ratio of one
checkpoint to one epoch of training (a run checkpoints ``checkpoints_per_epoch`` times an epoch).

    nice -n 10 python benchmarks/bench_real_flops.py [--models hatexplain:small,hatexplain:paper,sva:small,sva:paper]
        [--steps 8] [--repeats 2] [--threads 1] [--json]

(``hatexplain:minilm`` needs the ``pretrained`` extra; SQuAD's decoder: ``benchmarks/bench_official_preset.py``.)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import time

import torch

from bench_stacked_real import matmul_rate


def measure(dataset: str, model: str, steps: int, repeats: int, data_dir: str) -> dict:
    from torch.utils.flop_counter import FlopCounterMode

    from validation.real.config import default_config
    from validation.real.run import _prepare_classifier
    from validation.real.training import classification_loss, train

    cfg = default_config(dataset, ratio=1.0, seed=0, quick=(model != "paper"), data_dir=data_dir, model=model)
    p = _prepare_classifier(cfg)
    batch = p.tr.take(torch.arange(min(cfg.batch_size, len(p.tr))))
    p.model.train()
    with FlopCounterMode(display=False) as fc:
        classification_loss(p.model, batch).backward()
    flops = int(fc.get_total_flops())
    p.model.zero_grad(set_to_none=True)
    n_steps = min(steps, math.ceil(len(p.tr) / cfg.batch_size))
    part = p.tr.take(torch.arange(min(n_steps * cfg.batch_size, len(p.tr))))
    timed = dataclasses.replace(cfg, epochs=1)
    t_step, t_ckpt = [], []
    for _ in range(repeats):
        hist = train(p.model, part, timed, classification_loss, progress=False)
        t_step.append(hist.seconds / n_steps)
        t = time.perf_counter()
        p.tracker(1, 1.0)
        t_ckpt.append(time.perf_counter() - t)
    per_epoch = math.ceil(len(p.tr) / cfg.batch_size)
    step_s, ckpt_s = min(t_step), min(t_ckpt)
    return {"dataset": dataset, "model": model, "parameters": sum(x.numel() for x in p.model.parameters()),
            "batch": cfg.batch_size, "train_items": len(p.tr), "test_items": len(p.te),
            "checkpoints_per_epoch": cfg.checkpoints_per_epoch, "gflop_per_step": flops / 1e9,
            "seconds_per_step": step_s, "achieved_gflops": flops / step_s / 1e9,
            "seconds_per_checkpoint": ckpt_s, "seconds_per_epoch_training": step_s * per_epoch,
            "checkpoint_time_per_epoch_over_training": ckpt_s * cfg.checkpoints_per_epoch / (step_s * per_epoch)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="hatexplain:small,hatexplain:paper,sva:small,sva:paper")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", default=os.environ.get("QKOV_DATA_DIR", "data"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    pairs = [tuple(x.split(":")) for x in a.models.split(",")]
    rows = [measure(d, m, a.steps, a.repeats, a.data_dir) for d, m in pairs]
    peak = matmul_rate() / 1e9
    for r in rows:
        r["matmul_gflops"] = peak
        r["fraction_of_matmul"] = r["achieved_gflops"] / peak
    out = {"threads": a.threads, "load_average": os.getloadavg(), "rows": rows}
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{a.threads} thread(s), load average {out['load_average'][0]:.1f}, matmul {peak:.1f} GFLOP/s")
    print("| model | params | GFLOP/step | s/step | GFLOP/s | of matmul | s/checkpoint | checkpoints/epoch time over training |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['dataset']} {r['model']} | {r['parameters']:,} | {r['gflop_per_step']:.3g} | "
              f"{r['seconds_per_step']:.3g} | {r['achieved_gflops']:.3g} | {100 * r['fraction_of_matmul']:.1f} % | "
              f"{r['seconds_per_checkpoint']:.3g} | {r['checkpoint_time_per_epoch_over_training']:.2f} |")


if __name__ == "__main__":
    main()
