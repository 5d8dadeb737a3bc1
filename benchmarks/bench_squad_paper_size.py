"""Where one paper-size SQuAD run's time goes (issue 34): training steps, a checkpoint, the final evaluation.

Builds the run exactly as ``qkov validate real --dataset squad`` (the paper decoder at qkov's sized preset,
full splits) trains it (:func:`validation.real.squad_run.prepare_squad`), then times on one torch thread:
``--steps`` training steps (:func:`validation.real.training.train`, no checkpoints), one checkpoint (the
tracker: test-set forward with the attention read-out, probe and validation losses), one training-state
write (:mod:`validation.real.resume`), and the final evaluation's decoding on ``--decode-items`` test
questions (one ``full=True`` evaluation as the fixed-epoch metrics run it; the run decodes the test set
three times more: best-validation, uniform baseline; scaled linearly to the whole test set). Extrapolates
CPU seconds (``time.process_time``: what one idle core takes) to one run and to the sweep (ratios 1, 2, 5,
10, 20 x 5 seeds). Prints one JSON object.

    nice -n 10 python benchmarks/bench_squad_paper_size.py --steps 4 --decode-items 64
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import tempfile
import time
from pathlib import Path

import torch


def _cpu(fn):
    """``(result, wall seconds, CPU seconds)`` of ``fn()``."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--decode-items", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ratio", type=float, default=20.0)
    ap.add_argument("--data-dir", default=os.environ.get("QKOV_DATA_DIR", "data"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    load0 = os.getloadavg()

    from validation.real import resume
    from validation.real.config import default_config
    from validation.real.run import _split_items
    from validation.real.squad_run import evaluate_decoder, prepare_squad
    from validation.real.training import train

    cfg = default_config("squad", ratio=a.ratio, seed=0, quick=False, data_dir=a.data_dir)
    (_, train_ex, val_ex, test_ex), _, load_cpu = _cpu(lambda: _split_items(cfg))
    torch.manual_seed(cfg.seed)
    p, _, prep_cpu = _cpu(lambda: prepare_squad(cfg, train_ex, val_ex, test_ex))
    n, per_epoch = len(p.tr), math.ceil(len(p.tr) / cfg.batch_size)
    steps = min(a.steps, per_epoch)
    part = p.tr.take(torch.arange(steps * cfg.batch_size))
    hist, train_wall, train_cpu = _cpu(lambda: train(p.model, part, dataclasses.replace(cfg, epochs=1), p.loss_fn,
                                                     progress=False))
    _, ckpt_wall, ckpt_cpu = _cpu(lambda: p.tracker(steps, steps / per_epoch))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.pt"
        state = {"epoch": 1, "model": p.model.state_dict(), "callback": p.tracker.state_dict()}
        _, _, save_cpu = _cpu(lambda: resume.save(path, "bench", state))
        state_mb = path.stat().st_size / 1e6
    k = min(a.decode_items, len(p.te))
    te = p.te.take(torch.arange(k))
    _, dec_wall, dec_full_cpu = _cpu(lambda: evaluate_decoder(p.model, te, test_ex[:k], p.vocab, cfg, full=True))
    _, _, dec_cpu = _cpu(lambda: evaluate_decoder(p.model, te, test_ex[:k], p.vocab, cfg, full=False))
    scale = len(p.te) / k
    per_step = train_cpu / steps
    checkpoints = 1 + cfg.epochs * cfg.checkpoints_per_epoch
    run = {"training_h": per_step * per_epoch * cfg.epochs / 3600, "checkpoints_h": ckpt_cpu * checkpoints / 3600,
           "training_state_h": save_cpu * cfg.epochs / 3600,
           "final_evaluation_h": (dec_full_cpu + 2 * dec_cpu) * scale / 3600}
    total = sum(run.values())
    print(json.dumps({
        "config": {k_: v for k_, v in cfg.to_json_dict().items() if k_ != "data_dir"}, "threads": a.threads,
        "parameters": sum(q.numel() for q in p.model.parameters()), "vocab": len(p.vocab), "train_items": n,
        "val_items": len(p.va), "test_items": len(p.te), "steps_per_epoch": per_epoch, "epochs": cfg.epochs,
        "steps_timed": steps, "train_seconds_recorded": round(hist.seconds, 2),
        "cpu_seconds_per_step": round(per_step, 3), "wall_seconds_per_step": round(train_wall / steps, 3),
        "cpu_seconds_per_checkpoint": round(ckpt_cpu, 2), "wall_seconds_per_checkpoint": round(ckpt_wall, 2),
        "cpu_seconds_training_state_write": round(save_cpu, 3), "training_state_mb": round(state_mb, 1),
        "decode_items_timed": k, "cpu_seconds_decode_full_eval": round(dec_full_cpu, 2),
        "cpu_seconds_decode_plain": round(dec_cpu, 2), "wall_seconds_decode_full_eval": round(dec_wall, 2),
        "load_and_prepare_cpu_seconds": round(load_cpu + prep_cpu, 1),
        "one_run_cpu_hours": {k_: round(v, 3) for k_, v in run.items()} | {"total": round(total, 2)},
        "sweep_25_runs_core_hours": round(25 * total, 1),
        "load_average_before_after": [list(load0), list(os.getloadavg())]}, indent=1))


if __name__ == "__main__":
    main()
