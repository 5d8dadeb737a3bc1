"""One real-data run: load, subsample, build the vocabulary, train with checkpoints, evaluate
(:func:`train_and_evaluate`): fixed-epoch metrics, ``best_val``, ``baseline`` and ``checkpoints``."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import random
from pathlib import Path
from typing import Any, cast

import torch

from validation.device import check_autocast, device_record, resolve_device
from validation.metrics.eraser_export import eraser_docid, to_eraser_annotations, to_eraser_results

from .batching import encode_classification
from .config import RealRunConfig, group_rates
from .errors import DataError
from .evaluation import evaluate_classifier
from .examples import Splits
from . import datasets as registry
from .models import AttentionClassifier, MultiHeadClassifier
from .tracking import Tracker, gain_over_uniform, mean_batch_loss
from .training import TrainHistory, classification_loss, train
from .vocab import Vocab

SUBSAMPLE_SEED = 12345
"""Subsamples (``max_train``/``max_val``/``max_test``) and a held-out validation share are drawn
with this fixed seed, the same for every ratio and training seed, so runs compared pairwise see
the same data."""
PROBE = 1000
"""Training loss along training is measured on the first ``PROBE`` training items (fixed)."""
PRETRAINED_PROBE = 64
"""The probe of the pretrained MiniLM (its forward pass is about 100x the paper model's)."""


@functools.lru_cache(maxsize=8)
def load_dataset(dataset: str, data_dir: str) -> Splits:
    """The validated splits of ``dataset`` under ``data_dir`` (cached per process); a split without
    any item is a :class:`DataError` (one line), raised before any training."""
    splits = registry.get(dataset).loader(Path(data_dir))
    for name in ("train", "test"):
        if not getattr(splits, name):
            raise DataError(f"{dataset}: {splits.description}: the {name} split is empty")
    return splits


def subsample(items: list, n: int | None) -> list:
    """``n`` items drawn without replacement with :data:`SUBSAMPLE_SEED` (all if ``n`` is None or larger)."""
    if n is None or n >= len(items):
        return list(items)
    idx = sorted(random.Random(SUBSAMPLE_SEED).sample(range(len(items)), n))
    return [items[i] for i in idx]


def train_val(splits: Splits, fraction: float) -> tuple[list, list]:
    """The training items and the validation items: the dataset's own validation split, else a
    fixed share ``fraction`` of its training split (drawn with :data:`SUBSAMPLE_SEED`)."""
    if splits.val:
        return list(splits.train), list(splits.val)
    n_val = max(1, int(round(fraction * len(splits.train))))
    held = set(random.Random(SUBSAMPLE_SEED + 1).sample(range(len(splits.train)), n_val))
    return ([ex for i, ex in enumerate(splits.train) if i not in held],
            [ex for i, ex in enumerate(splits.train) if i in held])


def build_classifier(cfg: RealRunConfig, vocab_size: int, n_classes: int) -> torch.nn.Module:
    """The paper's multi-head classifier or the small single-head QKOV classifier."""
    if cfg.model == "paper":
        return MultiHeadClassifier(vocab_size, n_classes, d=cfg.d, heads=cfg.heads, d_head=cfg.d_head,
                                   max_len=cfg.max_len, init_std=cfg.init_std, d_mlp=cfg.d_mlp, qkv_bias=cfg.qkv_bias)
    return AttentionClassifier(vocab_size, n_classes, d=cfg.d, param=cfg.param, max_len=cfg.max_len,
                               layers=cfg.layers, init_std=cfg.init_std)


@dataclass
class _Prepared:
    """One classification run ready to train: its data, model and checkpoint tracker."""

    cfg: RealRunConfig
    splits: Splits
    val_ex: list
    test_ex: list
    model: torch.nn.Module
    tr: Any
    te: Any
    vocab: Any
    tracker: Tracker


def _split_items(cfg: RealRunConfig) -> tuple[Splits, list, list, list]:
    splits = load_dataset(cfg.dataset, cfg.data_dir)
    train_all, val_all = train_val(splits, cfg.val_fraction)
    return (splits, subsample(train_all, cfg.max_train), subsample(val_all, cfg.max_val),
            subsample(splits.test, cfg.max_test))


def _prepare_classifier(cfg: RealRunConfig) -> _Prepared:
    """Load, subsample, encode, build the model (initialised from ``torch.manual_seed(cfg.seed)``) and its tracker."""
    splits, train_ex, val_ex, test_ex = _split_items(cfg)
    torch.manual_seed(cfg.seed)
    model: torch.nn.Module
    if cfg.model == "minilm":
        from .pretrained import pretrained_tensors
        model, (tr, va, te), vocab = pretrained_tensors(train_ex, val_ex, test_ex, len(splits.classes), cfg.max_len)
    else:
        vocab = Vocab.train([ex.tokens for ex in train_ex])
        tr = encode_classification(train_ex, vocab, cfg.max_len)
        va = encode_classification(val_ex, vocab, cfg.max_len)
        te = encode_classification(test_ex, vocab, cfg.max_len)
        model = build_classifier(cfg, len(vocab), len(splits.classes))
    probe = PRETRAINED_PROBE if cfg.model == "minilm" else PROBE
    tracker = Tracker(model, probe=tr.take(torch.arange(min(probe, len(tr)))), val=va,
                      loss_of=mean_batch_loss(classification_loss),
                      light_eval=lambda m: evaluate_classifier(m, te, cfg.dataset, faithfulness=False)[0])
    return _Prepared(cfg, splits, val_ex, test_ex, model, tr, te, vocab, tracker)


def _finish_classifier(p: _Prepared, hist) -> dict[str, Any]:
    """Evaluate a trained classifier: fixed-epoch metrics with ERASER, baselines, best-validation, ERASER files."""
    cfg, model, te, test_ex, splits = p.cfg, p.model, p.te, p.test_ex, p.splits
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
    extras_text = {"eraser_annotations.jsonl": "".join(json.dumps(a) + "\n" for a in annotations),
                   "eraser_docs.jsonl": "".join(json.dumps({"docid": d, "tokens": t}) + "\n"
                                                for d, t in docs.items())}
    baseline, best, best_arrays = p.tracker.finish(lambda m: evaluate_classifier(m, te, cfg.dataset)[:2],
                                                   hist.checkpoints)
    metrics.update(baseline=baseline, best_val=best)
    if cfg.model == "minilm":  # the second attention view: rollout through the 6 layers
        from .pretrained import MiniLMClassifier, rollout_views
        # cast: with model minilm, _prepare_classifier built a MiniLMClassifier (pretrained_tensors)
        metrics["rollout"] = rollout_views(cast(MiniLMClassifier, model), te, cfg.dataset, p.tracker, baseline)
    arrays.update({f"best_val_{k}": best_arrays[k] for k in ("pred", "mass", "p_true") if k in best_arrays})
    return {"metrics": metrics, "arrays": arrays, "extras": {}, "eraser": eraser, "extras_text": extras_text}


def _common_metrics(out: dict, cfg: RealRunConfig, model, hist: TrainHistory, vocab, n_train: int, n_val: int,
                    split: str, record: dict) -> dict[str, Any]:
    metrics = out["metrics"]
    metrics["gain_over_uniform"] = gain_over_uniform(metrics, metrics["baseline"]["uniform"])
    task = registry.get(cfg.dataset).task
    metrics.update(dataset=cfg.dataset, ratio=cfg.ratio, seed=cfg.seed, optimizer=cfg.optimizer, model=cfg.model,
                   attention_measured=ATTENTION_MEASURED[(task == "generation", cfg.model)],
                   recipe=cfg.recipe, rates=group_rates(cfg), n_train=n_train, n_val=n_val, vocab_size=len(vocab), split=split,
                   train_loss=hist.epoch_loss, train_seconds=hist.seconds,
                   checkpoint_seconds=hist.checkpoint_seconds, checkpoints=hist.checkpoints,
                   resumed_from_epoch=hist.resumed_from_epoch, training_state_seconds=hist.state_seconds,
                   train_examples_per_second=hist.examples_per_second, stacked_runs=hist.stacked,
                   parameters=sum(p.numel() for p in model.parameters()), device=record)
    return out


def _device(device: str | torch.device, bf16: bool) -> tuple[torch.device, dict]:
    requested = str(device)
    dev = device if isinstance(device, torch.device) else resolve_device(requested)
    check_autocast(dev, bf16)
    return dev, device_record(dev, bf16, requested)


def train_and_evaluate(cfg: RealRunConfig, *, progress: bool = True, device: str | torch.device = "cpu",
                       bf16: bool = False, resume: Path | None = None) -> dict[str, Any]:
    """Train one model for ``cfg`` and evaluate it; returns metrics, arrays and extras for writing.

    ``device`` (``auto | cpu | cuda[:N] | mps`` or a :class:`torch.device`) is where the model trains
    (:func:`validation.device.resolve_device`; an absent one raises ``DeviceError`` before the data
    is loaded); ``bf16`` the optional CUDA autocast. Both are recorded in ``metrics["device"]``.
    The device is not part of ``cfg``: it changes how fast a run is and its float rounding, not what
    is trained, so the run's key (its directory) is the same on every device. ``resume``: the training-state
    file written at the end of every epoch and resumed from (:func:`validation.real.training.train`; the
    caller deletes it once the results are written); ``metrics["resumed_from_epoch"]`` says whether it was."""
    dev, record = _device(device, bf16)
    if registry.get(cfg.dataset).task == "generation":
        from .squad_run import train_and_evaluate_squad
        splits, train_ex, val_ex, test_ex = _split_items(cfg)
        torch.manual_seed(cfg.seed)
        out = train_and_evaluate_squad(cfg, train_ex, val_ex, test_ex, progress=progress, device=dev, bf16=bf16,
                                       resume=resume)
        res = {"metrics": out["metrics"], "arrays": out["arrays"], "extras": out["extras"], "eraser": None,
               "extras_text": {}}
        return _common_metrics(res, cfg, out["model"], out["hist"], out["vocab"], out["n_train"], len(val_ex),
                               splits.description, record)
    p = _prepare_classifier(cfg)
    hist = train(p.model, p.tr, cfg, classification_loss, progress=progress,
                 desc=f"{cfg.dataset} r={cfg.ratio:g} s={cfg.seed}", on_checkpoint=p.tracker, device=dev, bf16=bf16,
                 resume=resume)
    return _common_metrics(_finish_classifier(p, hist), cfg, p.model, hist, p.vocab, len(p.tr), len(p.val_ex),
                           p.splits.description, record)


def train_and_evaluate_many(cfgs: list[RealRunConfig], *, device: str | torch.device = "cpu") -> list[dict[str, Any]]:
    """:func:`train_and_evaluate` for several classification runs of one configuration (seeds x ratios x
    recipes; :data:`validation.real.stacked.SHARED` equal), trained together by
    :func:`validation.real.stacked.train_stacked`; one result per config, in order. Equal to the
    per-run results to float tolerance (``tests/integration/real/test_stacked.py``). Not for SQuAD or
    MiniLM (``ValueError``)."""
    from .stacked import train_stacked

    if any(registry.get(c.dataset).task != "classification" or c.model == "minilm" for c in cfgs):
        raise ValueError("stacked runs: only the paper and small classifiers (HateXplain, SVA)")
    dev, record = _device(device, False)
    preps = [_prepare_classifier(c) for c in cfgs]
    hists = train_stacked([p.model for p in preps], [p.tr for p in preps], cfgs, classification_loss,
                          on_checkpoint=[p.tracker for p in preps], device=dev)
    return [_common_metrics(_finish_classifier(p, h), p.cfg, p.model, h, p.vocab, len(p.tr), len(p.val_ex),
                            p.splits.description, record) for p, h in zip(preps, hists)]


ATTENTION_MEASURED = {
    (False, "small"): "the single head of the QKOV layer, row of [CLS] (the query) over the words",
    (False, "paper"): "the mean over the 4 heads of the row of [CLS] (the last token) over the words",
    (False, "minilm"): "the mean over the 12 heads of the last layer's [CLS] row, word pieces summed per word "
                       "(specials on the [CLS] slot); the rollout view is in rollout.*",
    (True, "small"): "rollout of the head-averaged attention of all layers, rows predicting answer words, "
                     "mass on the gold answer's context positions (layer average and max over layers also given)",
    (True, "paper"): "rollout of the head-averaged attention of all layers, rows predicting answer words, "
                     "mass on the gold answer's context positions (layer average and max over layers also given)",
}
