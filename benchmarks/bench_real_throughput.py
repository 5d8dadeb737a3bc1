"""Training throughput of the qkov real-data classifier vs a same-size ``nn.MultiheadAttention`` model.

All models: word embedding + distance-to-query embedding (d), one single-head attention
layer read at the ``[CLS]`` query over a right-padded batch, a linear head; AdamW; the same
batches (random token ids, random lengths) in one process, timed alternately so that load
from other processes affects both alike. Prints examples/s of each and their ratio
qkov / MHA (goal: >= 1.0); also the MHA model re-parametrised by ``validation.user_models`` so
that its QK and OV slices can take different AdamW rates (what the intervention needs).

    python benchmarks/bench_real_throughput.py [--d 64] [--length 48] [--batch 32] [--steps 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch
from torch import nn

from validation.param_groups import model_param_groups
from validation.real.models import AttentionClassifier
from validation.user_models import param_groups


class MHAClassifier(nn.Module):
    """The same architecture with ``torch.nn.MultiheadAttention`` (1 head) as the attention layer."""

    def __init__(self, vocab_size: int, n_classes: int, d: int, max_len: int):
        super().__init__()
        self.max_len = max_len
        self.emb = nn.Embedding(vocab_size, d, padding_idx=0)
        self.dist = nn.Embedding(max_len + 1, d)
        self.attn = nn.MultiheadAttention(d, 1, batch_first=True)
        self.head = nn.Linear(d, n_classes)

    def forward(self, ids, valid, query_index):
        pos = torch.arange(ids.shape[1])[None, :]
        x = self.emb(ids) + self.dist((query_index[:, None] - pos).clamp(0, self.max_len))
        q = x[torch.arange(x.shape[0]), query_index][:, None]
        z, a = self.attn(q, x, x, key_padding_mask=~valid, need_weights=True)
        return self.head(z[:, 0]), a[:, 0]


def make_batches(n: int, batch: int, length: int, vocab: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        lens = torch.randint(length // 2, length, (batch,), generator=g)
        ids = torch.randint(4, vocab, (batch, length), generator=g)
        pos = torch.arange(length)[None, :]
        ids[pos > lens[:, None]] = 0
        valid = pos <= lens[:, None]
        out.append((ids, valid, lens, torch.randint(0, 3, (batch,), generator=g)))
    return out


def step(model, opt, b):
    ids, valid, q, y = b
    logits, _ = model(ids, valid, q)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def measure(d: int = 64, length: int = 48, batch: int = 32, steps: int = 200, vocab: int = 5000,
            rounds: int = 5) -> dict:
    """Examples/s of both models (best of ``rounds`` alternating timing rounds) and their ratio."""
    torch.manual_seed(0)
    models = {"qkov": AttentionClassifier(vocab, 3, d=d, max_len=length, init_std=0.02),
              "mha": MHAClassifier(vocab, 3, d, length),
              "mha_split": MHAClassifier(vocab, 3, d, length)}
    # all three train with eta_QK/eta_OV = 10; plain "mha" can only do it for SGD-like scaling,
    # so it runs with one rate (its fastest form); "mha_split" uses validation.user_models'
    # re-parametrisation that gives q, k, v their own Parameters (the form needed for AdamW).
    opts = {"qkov": torch.optim.AdamW(model_param_groups(models["qkov"], lr_ov=1e-3, ratio=10.0)),
            "mha": torch.optim.AdamW(models["mha"].parameters(), lr=1e-3),
            "mha_split": torch.optim.AdamW(param_groups(models["mha_split"], lr=1e-3, ratio=10.0))}
    batches = make_batches(steps, batch, length, vocab)
    for k in models:  # warm-up
        for b in batches[:10]:
            step(models[k], opts[k], b)
    best = {k: math.inf for k in models}
    for _ in range(rounds):
        for k in models:
            t = time.perf_counter()
            for b in batches:
                step(models[k], opts[k], b)
            best[k] = min(best[k], time.perf_counter() - t)
    eps = {k: steps * batch / v for k, v in best.items()}
    return {"d": d, "length": length, "batch": batch, "steps": steps, "threads": torch.get_num_threads(),
            "params": {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()},
            "examples_per_second": eps, "ratio_qkov_over_mha": eps["qkov"] / eps["mha"],
            "ratio_qkov_over_mha_split": eps["qkov"] / eps["mha_split"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--length", type=int, default=48)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    r = measure(a.d, a.length, a.batch, a.steps)
    if a.json:
        print(json.dumps(r, indent=2))
    else:
        e = r["examples_per_second"]
        print(f"qkov {e['qkov']:.0f} ex/s, nn.MultiheadAttention {e['mha']:.0f} ex/s "
              f"(with the QK/OV split of validation.user_models: {e['mha_split']:.0f} ex/s); "
              f"ratio qkov/MHA {r['ratio_qkov_over_mha']:.2f} (goal >= 1.0), "
              f"qkov/MHA-split {r['ratio_qkov_over_mha_split']:.2f}")


if __name__ == "__main__":
    main()
