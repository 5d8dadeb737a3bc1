"""Time per epoch of a ``--preset official`` run (issue 32), measured on a fraction of the epoch.

Builds the run exactly as ``qkov validate real --dataset DATASET --preset official`` does (the official
configuration at the paper's ratio, the same data, vocabulary, model and optimizer groups), trains ``--steps``
optimizer steps of its first epoch with :func:`validation.real.training.train` (no checkpoints, no evaluation)
and extrapolates the measured seconds per step to the epoch's step count. Prints one JSON object.

    nice -n 19 python benchmarks/bench_official_preset.py --dataset squad --steps 6 [--threads 1]
    nice -n 19 python benchmarks/bench_official_preset.py --dataset squad --flops-only 4   # GFLOP per step
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=("squad", "hatexplain"), default="squad")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data-dir", default=os.environ.get("QKOV_DATA_DIR", "data"))
    ap.add_argument("--flops-only", type=int, default=0, metavar="N",
                    help="only count the FLOPs of one training step (forward + backward, torch.utils.flop_counter) "
                         "on N items, scaled to the batch size; no timing")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    from validation.real.config import PAPER_RATIO, default_config
    from validation.real.run import _prepare_classifier, _split_items
    from validation.real.training import classification_loss, optimizer_groups, train

    cfg = default_config(a.dataset, ratio=PAPER_RATIO[a.dataset], seed=0, quick=False, data_dir=a.data_dir,
                         preset="official")
    t_load = time.perf_counter()
    if a.dataset == "squad":   # the run's own data, vocabulary, encoding and model, as it trains them
        from validation.real.squad_run import prepare_squad
        _, train_ex, val_ex, test_ex = _split_items(cfg)
        torch.manual_seed(cfg.seed)
        prepared = prepare_squad(cfg, train_ex, val_ex, test_ex)
        loss_fn = prepared.loss_fn
    else:
        prepared = _prepare_classifier(cfg)
        loss_fn = classification_loss
    vocab, tr, model = prepared.vocab, prepared.tr, prepared.model
    seq = int(tr.ids.shape[1])
    t_load = time.perf_counter() - t_load
    n_full = len(tr)
    per_epoch = math.ceil(n_full / cfg.batch_size)
    if a.flops_only:
        from torch.utils.flop_counter import FlopCounterMode

        model.train()
        with FlopCounterMode(display=False) as fc:
            loss_fn(model, tr.take(torch.arange(a.flops_only))).backward()
        per_step = fc.get_total_flops() * cfg.batch_size / a.flops_only
        print(json.dumps({"dataset": a.dataset, "preset": "official", "items_counted": a.flops_only,
                          "gflop_per_step": round(per_step / 1e9, 1), "steps_per_epoch": per_epoch,
                          "train_items": n_full, "epochs": cfg.epochs,
                          "pflop_training_one_run": round(per_step * per_epoch * cfg.epochs / 1e15, 3)}, indent=1))
        return
    steps = min(a.steps, per_epoch)
    part = tr.take(torch.arange(steps * cfg.batch_size))
    timed = dataclasses.replace(cfg, epochs=1)
    marks: list[tuple[float, float]] = []

    def logged(m, b):   # a line per step on stderr (wall and CPU seconds so far), so a cut-off run still tells
        marks.append((time.perf_counter(), time.process_time()))
        if len(marks) > 1:
            print(f"step {len(marks) - 1} done: wall {marks[-1][0] - marks[0][0]:.1f} s, "
                  f"cpu {marks[-1][1] - marks[0][1]:.1f} s", file=sys.stderr, flush=True)
        return loss_fn(m, b)

    cpu0 = time.process_time()
    hist = train(model, part, timed, logged, progress=False, device=torch.device(a.device))
    cpu = time.process_time() - cpu0
    per_step = hist.seconds / steps
    groups = {g["circuit"]: round(g["lr"], 10) for g in optimizer_groups(model, cfg)}
    print(json.dumps({
        "dataset": a.dataset, "preset": "official", "ratio": cfg.ratio, "device": a.device, "threads": a.threads,
        "config": {k: v for k, v in cfg.to_json_dict().items() if k != "data_dir"},
        "parameters": sum(p.numel() for p in model.parameters()), "vocab": len(vocab),
        "train_items": n_full, "sequence_slots": seq, "steps_per_epoch": per_epoch, "steps_timed": steps,
        "seconds_timed": round(hist.seconds, 2), "seconds_per_step": round(per_step, 3),
        "cpu_seconds_per_step": round(cpu / steps, 3), "load_average": os.getloadavg(),
        "seconds_per_epoch_extrapolated": round(per_step * per_epoch, 1),
        "hours_for_all_epochs_extrapolated": round(per_step * per_epoch * cfg.epochs / 3600, 2),
        "optimizer_groups_lr": groups, "load_and_encode_seconds": round(t_load, 1)}, indent=1))


if __name__ == "__main__":
    main()
