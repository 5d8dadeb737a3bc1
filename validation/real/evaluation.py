r"""Evaluation of a trained model on the test split with :mod:`validation.metrics`.

Per instance: the attention of the query over the words, its mass on the relevant tokens
:math:`m_i = \sum_{\ell\in R_i} a_{i\ell}` and the probability of the true label
:math:`p_i` (SQuAD: the geometric mean :math:`\sqrt{p^s_i(s^*)\,p^e_i(e^*)}` of the start and
end probabilities of the first gold span). From these: DTAP heatmap, AC and ACMC
(:math:`\tau=\kappa=0.5`). Classification adds accuracy, macro-F1, ERASER faithfulness
(attention as the explanation; removal = masking the word out of attention) and
plausibility against the annotation (hard rationale = top-:math:`\bar k` words by attention,
:math:`\bar k` the mean annotation length).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from validation.metrics.attention_mass import relevant_mass
from validation.metrics.dtap import DEFAULT_KAPPA, DEFAULT_TAU, SQUAD_MASS_EDGES, SYNTH_EDGES, acmc, \
    attention_confidence, dtap_histogram
from validation.metrics.eraser import eraser_scores
from validation.metrics.plausibility import auprc, hard_rationale, iou_f1, mean_rationale_length, token_f1

from .batching import ClassTensors, model_device

EVAL_BATCH = 256


def dtap_edges(dataset: str) -> tuple[float, ...]:
    """DTAP bin edges: the official SQuAD edges for a generation task (SQuAD), the synthetic ones otherwise."""
    from .datasets import DATASETS  # the registry imports the loaders, which import this module

    entry = DATASETS.get(dataset)
    return SQUAD_MASS_EDGES if entry is not None and entry.task == "generation" else SYNTH_EDGES


def _concentration(mass: np.ndarray, p_true: np.ndarray, dataset: str) -> dict[str, Any]:
    return {
        "n_measured": int(mass.size),
        "relevant_mass_mean": float(mass.mean()),
        "relevant_mass_median": float(np.median(mass)),
        "attention_confidence": attention_confidence(mass, DEFAULT_TAU),
        "acmc": acmc(mass, p_true, DEFAULT_TAU, DEFAULT_KAPPA),
        "tau": DEFAULT_TAU, "kappa": DEFAULT_KAPPA,
        "dtap_edges": list(dtap_edges(dataset)),
        "dtap": dtap_histogram(mass, p_true, dtap_edges(dataset)).tolist(),
    }


@torch.no_grad()
def _classify(model, data: ClassTensors, keep: torch.Tensor | None = None) -> tuple[np.ndarray, np.ndarray]:
    probs, attn = [], []
    dev = model_device(model)
    for i in range(0, len(data), EVAL_BATCH):
        idx = torch.arange(i, min(i + EVAL_BATCH, len(data)))
        valid = data.valid[idx] if keep is None else (data.valid[idx] & keep[idx])
        logits, a = model(data.ids[idx].to(dev), valid.to(dev), data.query_index[idx].to(dev))
        probs.append(torch.softmax(logits.float(), -1).cpu())
        attn.append(torch.nn.functional.pad(a.float(), (0, data.ids.shape[1] - a.shape[1])).cpu())
    return torch.cat(probs).numpy().astype(np.float64), torch.cat(attn).numpy().astype(np.float64)


def evaluate_classifier(model, data: ClassTensors, dataset: str, *, faithfulness: bool = True
                        ) -> tuple[dict[str, Any], dict[str, np.ndarray], Any]:
    """Metrics, per-instance arrays and the ERASER :class:`FaithfulnessResult` (annotated instances).

    ``faithfulness=False`` (checkpoints along training, baselines) skips ERASER and returns ``None``
    in its place."""
    from sklearn.metrics import accuracy_score, f1_score  # heavy: load on use

    model.eval()
    probs, attn = _classify(model, data)
    labels = data.labels.numpy()
    pred = probs.argmax(1)
    p_true = probs[np.arange(len(labels)), labels]
    ann = data.annotated.numpy()
    words = data.words.numpy()
    rel = data.relevant.numpy()
    mass = relevant_mass(attn[ann], rel[ann], words[ann])
    metrics: dict[str, Any] = {
        "n_test": int(len(labels)),
        "accuracy": float(accuracy_score(labels, pred)),
        "macro_f1": float(f1_score(labels, pred, average="macro")),
        # the annotated instances are the ones ERASER scores (HateXplain: toxic posts only),
        # so its accuracy is this one, not the accuracy over all test instances
        "n_annotated": int(ann.sum()),
        "accuracy_annotated": float(accuracy_score(labels[ann], pred[ann])) if ann.any() else float("nan"),
        "macro_f1_annotated": (float(f1_score(labels[ann], pred[ann], average="macro")) if ann.any()
                               else float("nan")),
        **_concentration(mass, p_true[ann], dataset),
    }
    # plausibility against the annotation. ``auprc`` is average precision (ERASER's
    # "average_precision": instances whose tokens are all gold are skipped); ``auprc_trapezoid``
    # is ERASER's "auprc" (trapezoid area under the PR curve, every instance with a gold token).
    k = mean_rationale_length(rel[ann])
    hard = hard_rationale(attn[ann], words[ann], k)
    metrics.update(token_f1=token_f1(hard, rel[ann]), iou_f1=iou_f1(hard, rel[ann]),
                   auprc=auprc(attn[ann], rel[ann], words[ann]),
                   auprc_trapezoid=auprc(attn[ann], rel[ann], words[ann], method="trapezoid"),
                   hard_rationale_tokens=k)
    if not faithfulness:
        return metrics, {"mass": mass, "p_true": p_true[ann], "pred": pred, "labels": labels}, None
    # ERASER faithfulness: removal = the word is masked out of the query's attention
    sub = data.take(torch.from_numpy(np.flatnonzero(ann)))

    def predict_proba(ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        p, _ = _classify(model, ClassTensors(ids, sub.valid, sub.words, sub.query_index, sub.relevant,
                                             sub.annotated, sub.labels), keep)
        return torch.from_numpy(p)

    cls_pos = sub.valid & ~sub.words
    faith = eraser_scores(predict_proba, sub.ids, torch.from_numpy(attn[ann][:, :sub.ids.shape[1]]), sub.words,
                          always_keep=cls_pos)
    comp, suff = faith.comprehensiveness_points.mean(0), faith.sufficiency_points.mean(0)
    # ERASER's top-level comprehensiveness/sufficiency: the hard rationale (top-k words, k the
    # mean annotation length) removed / kept alone, for the predicted class j.
    hard_t = torch.from_numpy(hard[:, :sub.ids.shape[1]])
    probs_without = predict_proba(sub.ids, (sub.words & ~hard_t) | cls_pos).numpy()
    probs_only = predict_proba(sub.ids, hard_t | cls_pos).numpy()
    rows_ = np.arange(len(faith.predicted))
    p_j = faith.probs[rows_, faith.predicted]
    metrics.update(
        eraser_fractions=faith.fractions.tolist(),
        comprehensiveness=comp.tolist(), sufficiency=suff.tolist(),
        comprehensiveness_aopc=float(faith.comprehensiveness_aopc().mean()),
        sufficiency_aopc=float(faith.sufficiency_aopc().mean()),
        comprehensiveness_hard=float(np.mean(p_j - probs_without[rows_, faith.predicted])),
        sufficiency_hard=float(np.mean(p_j - probs_only[rows_, faith.predicted])))
    arrays = {"mass": mass, "p_true": p_true[ann], "annotated": ann, "pred": pred, "labels": labels}
    return metrics, arrays, (faith, hard, attn[ann], words[ann], np.flatnonzero(ann), (probs_without, probs_only))
