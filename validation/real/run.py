"""One real-data run: load, subsample, build the vocabulary, train, evaluate (:func:`train_and_evaluate`)."""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any

import torch

from validation.metrics.eraser_export import eraser_docid, to_eraser_annotations, to_eraser_results

from .batching import encode_classification, encode_squad
from .config import RealRunConfig
from .evaluation import evaluate_classifier, evaluate_span
from .examples import Splits
from .hatexplain_data import load_hatexplain
from .models import AttentionClassifier, SpanModel
from .squad_data import load_squad
from .sva_data import load_sva
from .training import classification_loss, span_loss, train
from .vocab import Vocab

LOADERS = {"squad": load_squad, "hatexplain": load_hatexplain, "sva": load_sva}
SUBSAMPLE_SEED = 12345
"""Subsamples (``max_train``/``max_test``) are drawn with this fixed seed, the same for every
ratio and training seed, so runs compared pairwise see the same data."""


@functools.lru_cache(maxsize=8)
def load_dataset(dataset: str, data_dir: str) -> Splits:
    """The validated splits of ``dataset`` under ``data_dir`` (cached per process)."""
    return LOADERS[dataset](Path(data_dir))


def subsample(items: list, n: int | None) -> list:
    """``n`` items drawn without replacement with :data:`SUBSAMPLE_SEED` (all if ``n`` is None or larger)."""
    if n is None or n >= len(items):
        return list(items)
    idx = sorted(random.Random(SUBSAMPLE_SEED).sample(range(len(items)), n))
    return [items[i] for i in idx]


def train_and_evaluate(cfg: RealRunConfig, *, progress: bool = True) -> dict[str, Any]:
    """Train one model for ``cfg`` and evaluate it; returns metrics, arrays and extras for writing."""
    splits = load_dataset(cfg.dataset, cfg.data_dir)
    train_ex, test_ex = subsample(splits.train, cfg.max_train), subsample(splits.test, cfg.max_test)
    torch.manual_seed(cfg.seed)
    if cfg.dataset == "squad":
        vocab = Vocab.train([ex.context for ex in train_ex] + [ex.question for ex in train_ex])
        tr = encode_squad(train_ex, vocab, cfg.max_len)
        keep = torch.nonzero(tr.start >= 0).flatten()
        tr = tr.take(keep)
        te = encode_squad(test_ex, vocab, cfg.max_len)
        model = SpanModel(len(vocab), d=cfg.d, param=cfg.param, layers=cfg.layers, init_std=cfg.init_std,
                          cls_id=vocab.cls)
        hist = train(model, tr, cfg, span_loss, progress=progress, desc=f"squad r={cfg.ratio:g} s={cfg.seed}")
        metrics, arrays, preds = evaluate_span(model, te, test_ex)
        extras = {"predictions.json": preds}
        extras_text = {}
        eraser = None
    else:
        vocab = Vocab.train([ex.tokens for ex in train_ex])
        tr = encode_classification(train_ex, vocab, cfg.max_len)
        te = encode_classification(test_ex, vocab, cfg.max_len)
        model = AttentionClassifier(len(vocab), len(splits.classes), d=cfg.d, param=cfg.param, max_len=cfg.max_len,
                                    layers=cfg.layers, init_std=cfg.init_std)
        hist = train(model, tr, cfg, classification_loss, progress=progress,
                     desc=f"{cfg.dataset} r={cfg.ratio:g} s={cfg.seed}")
        metrics, arrays, (faith, hard, attn, words, rows, (p_without, p_only)) = evaluate_classifier(
            model, te, cfg.dataset)
        ids = [test_ex[i].uid for i in rows]
        docids = [eraser_docid(a) for a in ids]
        eraser = to_eraser_results(
            ids, splits.classes, faith.probs, docids=docids,
            soft_scores=[attn[j][words[j]] for j in range(len(rows))],
            hard_masks=[hard[j][words[j]] for j in range(len(rows))], thresholded=faith,
            comprehensiveness_probs=p_without, sufficiency_probs=p_only)
        n_words = [int(words[j].sum()) for j in range(len(rows))]
        docs, annotations = to_eraser_annotations(
            ids, [splits.classes[test_ex[i].label] for i in rows],
            [test_ex[i].tokens[:n] for i, n in zip(rows, n_words)],
            [test_ex[i].relevant[:n] for i, n in zip(rows, n_words)], docids=docids)
        extras = {}
        extras_text = {"eraser_annotations.jsonl": "".join(json.dumps(a) + "\n" for a in annotations),
                       "eraser_docs.jsonl": "".join(json.dumps({"docid": d, "tokens": t}) + "\n"
                                                    for d, t in docs.items())}
    metrics.update(dataset=cfg.dataset, ratio=cfg.ratio, seed=cfg.seed, optimizer=cfg.optimizer,
                   n_train=len(tr), vocab_size=len(vocab), split=splits.description,
                   train_loss=hist.epoch_loss, train_seconds=hist.seconds,
                   train_examples_per_second=hist.examples_per_second,
                   parameters=sum(p.numel() for p in model.parameters()))
    return {"metrics": metrics, "arrays": arrays, "extras": extras, "eraser": eraser, "extras_text": extras_text}
