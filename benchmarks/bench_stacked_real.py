"""Stacked vs loop training of the real-data paper classifier, and the achieved FLOP rate vs a measured matmul.

K runs (ratios x seeds of one configuration) of the paper's HateXplain/SVA classifier (one layer, d 64,
4 heads of d_head 64, AdamW) are trained for ``--steps`` optimizer steps each, on random batches of the
given length:

- loop: the K models one after the other with :func:`validation.real.training.train` (torch AdamW);
- stacked: all K at once with :func:`validation.real.stacked.train_stacked` (torch.func.vmap).

Each is timed ``--repeats`` times alternately (so load from other processes hits both alike); the best
time is reported. FLOPs per training step are counted with ``torch.utils.flop_counter.FlopCounterMode``
on one forward + backward of one model (matmuls only, what the counter counts); the achieved rate is
``K * steps * flops / time``, set against a float32 ``n x n`` matmul timed in the same process with the
same thread count (the machine's practical peak for this kind of work).

    python benchmarks/bench_stacked_real.py [--K 6] [--length 48] [--batch 32] [--steps 40] [--threads 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from validation.real.batching import ClassTensors
from validation.real.config import default_config
from validation.real.models import MultiHeadClassifier
from validation.real.stacked import train_stacked
from validation.real.training import classification_loss, train

VOCAB = 5000


def make_data(n: int, length: int, seed: int = 0) -> ClassTensors:
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(length // 2, length, (n,), generator=g)
    pos = torch.arange(length)[None, :]
    ids = torch.randint(4, VOCAB, (n, length), generator=g)
    ids[pos > lens[:, None]] = 0
    ids[torch.arange(n), lens] = 2
    return ClassTensors(ids=ids, valid=pos <= lens[:, None], words=pos < lens[:, None], query_index=lens,
                        relevant=torch.zeros(n, length, dtype=torch.bool), annotated=torch.zeros(n, dtype=torch.bool),
                        labels=torch.randint(0, 3, (n,), generator=g))


def build(seed: int, length: int) -> MultiHeadClassifier:
    torch.manual_seed(seed)
    return MultiHeadClassifier(VOCAB, 3, d=64, heads=4, d_head=64, max_len=length)


def step_flops(length: int, batch: int) -> int:
    """FLOPs of one forward + backward of one model on a full-length batch (FlopCounterMode)."""
    from torch.utils.flop_counter import FlopCounterMode

    m = build(0, length)
    b = make_data(batch, length)
    b.query_index[:] = length - 1
    b.valid[:] = True
    with FlopCounterMode(display=False) as fc:
        classification_loss(m, b).backward()
    return int(fc.get_total_flops())


def matmul_rate(n: int = 512, seconds: float = 1.0) -> float:
    """FLOP/s of a float32 ``n x n`` matmul (``2 n^3`` FLOPs each), best of repeated timings."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        t = time.perf_counter()
        for _ in range(4):
            a @ b
        best = min(best, (time.perf_counter() - t) / 4)
    return 2 * n ** 3 / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, default=6)
    ap.add_argument("--length", type=int, default=48)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    ratios = (1.0, 30.0)
    runs = [(ratios[k % 2], k // 2) for k in range(a.K)]
    data = make_data(a.steps * a.batch, a.length)
    cfgs = [default_config("hatexplain", ratio=r, seed=s, quick=False, data_dir=".", model="paper", epochs=1,
                           batch_size=a.batch, checkpoints_per_epoch=1, max_len=a.length) for r, s in runs]

    def loop() -> float:
        ms = [build(s, a.length) for _, s in runs]
        t = time.perf_counter()
        for m, c in zip(ms, cfgs):
            train(m, data, c, classification_loss, progress=False)
        return time.perf_counter() - t

    def stacked() -> float:
        ms = [build(s, a.length) for _, s in runs]
        t = time.perf_counter()
        train_stacked(ms, [data] * a.K, cfgs, classification_loss)
        return time.perf_counter() - t

    stacked()  # warm-up (vmap tracing, allocator)
    t_loop, t_stack = [], []
    for _ in range(a.repeats):
        t_loop.append(loop())
        t_stack.append(stacked())
    flops = step_flops(a.length, a.batch)
    peak = matmul_rate()
    best_loop, best_stack = min(t_loop), min(t_stack)
    work = a.K * a.steps * flops
    res = {"K": a.K, "steps": a.steps, "batch": a.batch, "length": a.length, "threads": a.threads,
           "loop_s": best_loop, "stacked_s": best_stack, "speedup": best_loop / best_stack,
           "loop_examples_per_s": a.K * a.steps * a.batch / best_loop,
           "stacked_examples_per_s": a.K * a.steps * a.batch / best_stack,
           "flops_per_step": flops, "loop_gflops": work / best_loop / 1e9, "stacked_gflops": work / best_stack / 1e9,
           "matmul_gflops": peak / 1e9, "loop_fraction_of_matmul": work / best_loop / peak,
           "stacked_fraction_of_matmul": work / best_stack / peak}
    if a.json:
        print(json.dumps(res, indent=2))
        return
    print(f"K={a.K} runs x {a.steps} steps, batch {a.batch} x length {a.length}, {a.threads} thread(s)")
    print(f"loop    {best_loop:7.2f} s  {res['loop_examples_per_s']:8.0f} ex/s  {res['loop_gflops']:6.2f} GFLOP/s "
          f"({100 * res['loop_fraction_of_matmul']:.1f} % of matmul)")
    print(f"stacked {best_stack:7.2f} s  {res['stacked_examples_per_s']:8.0f} ex/s  {res['stacked_gflops']:6.2f} GFLOP/s "
          f"({100 * res['stacked_fraction_of_matmul']:.1f} % of matmul)")
    print(f"speedup stacked/loop {res['speedup']:.2f}x; matmul {res['matmul_gflops']:.1f} GFLOP/s; "
          f"{flops / 1e6:.1f} MFLOP per step of one model")


if __name__ == "__main__":
    main()
