"""One SQuAD run with the answer-generating decoder (:mod:`validation.real.squad_decoder`).

Vocabulary: every word of the loaded contexts and questions (train, validation and test; lowercased,
minimum frequency 1, at most :data:`MAX_VOCAB`). It uses no label and stands in for the paper's
GPT-2 tokenizer, which covers every word: a test answer can only be generated if its word has an id.
Words GloVe knows start from their GloVe vector.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, cast

import numpy as np
import torch

from .config import RealRunConfig
from .evaluation import _concentration
from .examples import SquadExample
from .official import OFFICIAL_AC_EDGES
from .glove import GloveMissingWarning, GloveUnavailable, glove_vectors
from .squad_decoder import (DecoderLM, DecoderTensors, answer_attention, decoder_loss, em_f1, encode_decoder,
                            grad_input_agreement, mean_loss, plausibility)
from .tracking import Tracker, on_cpu, uniform_attention
from .training import train
from .vocab import Vocab

MAX_VOCAB = 60000
PROBE = 300
"""Training loss along training: the first ``PROBE`` training questions (fixed)."""


def init_vectors(vocab: Vocab, use_glove: bool) -> tuple[np.ndarray | None, str]:
    """GloVe rows for the vocabulary (or ``None``) and a one-line note of what was used."""
    if not use_glove:
        return None, "random (glove disabled)"
    words = [vocab.tokenizer.id_to_token(i) for i in range(len(vocab))]
    try:
        vec, found = glove_vectors(cast("list[str]", words))  # ids below len(vocab) all have a token: no None
    except GloveUnavailable as exc:
        warnings.warn(str(exc), GloveMissingWarning, stacklevel=2)
        return None, f"random ({exc})"
    return vec, f"GloVe 6B 50d for {int(found.sum())} of {len(words)} words, random for the rest"


def evaluate_decoder(model: DecoderLM, te: DecoderTensors, test_ex: list[SquadExample], vocab: Vocab,
                     cfg: RealRunConfig, *, full: bool, decode: bool = True
                     ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict]:
    """EM/F1 and the answer attention; ``full`` adds the shuffled-context control and the
    gradient x input check and returns the predictions. ``decode=False`` (checkpoints along
    training) skips greedy decoding: EM/F1 are then NaN and the task measure is ``p_true``."""
    att = answer_attention(model, te)
    if decode:
        em, f1, preds = em_f1(model, te, test_ex, vocab, cfg.answer_len)
    else:
        em = f1 = np.full(len(test_ex), np.nan)
        preds = {}
    has = te.answer_ctx[:, :te.W].any(1).numpy()
    metrics: dict[str, Any] = {
        "n_test": len(test_ex), "exact_match": float(em.mean()), "f1": float(f1.mean()),
        **_concentration(att["rollout"][has], att["p_true"][has], "squad"),
        "layer_average": _concentration(att["layer_average"][has], att["p_true"][has], "squad"),
        "max_over_layers": _concentration(att["max_over_layers"][has], att["p_true"][has], "squad"),
        "mass_share_ge": {f"{t:g}": float((att["rollout"][has] >= t).mean()) if has.any() else float("nan")
                          for t in OFFICIAL_AC_EDGES},
        "answer_prob_geomean": float(np.exp(np.mean(np.log(att["p_true"][has] + 1e-12)))),
        **plausibility(att["window_attention"], te),
    }
    arrays = {"mass": att["rollout"][has], "mass_layer_average": att["layer_average"][has],
              "mass_max_over_layers": att["max_over_layers"][has], "p_true": att["p_true"][has], "em": em, "f1": f1}
    if full:
        perm = torch.roll(torch.arange(len(te)), 1)
        em_s, f1_s, _ = em_f1(model, te.with_windows_from(perm), test_ex, vocab, cfg.answer_len,
                              context_of=[test_ex[int(j)] for j in perm])
        metrics.update(exact_match_shuffled_contexts=float(em_s.mean()), f1_shuffled_contexts=float(f1_s.mean()),
                       faithfulness_check=grad_input_agreement(model, te, att["window_attention"]))
        arrays["f1_shuffled_contexts"] = f1_s
    return metrics, arrays, preds


@dataclass
class SquadPrepared:
    """One SQuAD run ready to train (:func:`prepare_squad`): vocabulary, encoded splits, the decoder, its
    checkpoint tracker, the training loss and the best-validation evaluation."""

    vocab: Vocab
    tr: DecoderTensors
    va: DecoderTensors
    te: DecoderTensors
    model: DecoderLM
    tracker: Tracker
    loss_fn: Callable[[DecoderLM, DecoderTensors], torch.Tensor]
    best_eval: Callable[[torch.nn.Module], tuple[dict[str, Any], dict[str, Any]]]
    init_note: str


def prepare_squad(cfg: RealRunConfig, train_ex: list[SquadExample], val_ex: list[SquadExample],
                  test_ex: list[SquadExample]) -> SquadPrepared:
    """Vocabulary, encoding, the decoder (initialised from the global torch RNG: the caller seeds it) and its
    tracker, exactly as :func:`train_and_evaluate_squad` trains them (also what the benchmarks time)."""
    vocab = Vocab.train([ex.context for ex in train_ex + val_ex + test_ex]
                        + [ex.question for ex in train_ex + val_ex + test_ex], max_size=MAX_VOCAB, min_frequency=1)
    W, Q, A = cfg.window, cfg.question_len, cfg.answer_len
    tr, va, te = (encode_decoder(x, vocab, W, Q, A, cfg.context_chars) for x in (train_ex, val_ex, test_ex))
    vectors, init_note = init_vectors(vocab, cfg.glove)
    model = DecoderLM(len(vocab), d=cfg.d, layers=cfg.layers, heads=cfg.heads, d_head=cfg.d_head,
                      max_T=tr.ids.shape[1] + A + 2, eos_id=vocab.cls, init_std=cfg.init_std, pretrained=vectors,
                      d_ff=cfg.d_ff, dropout=cfg.dropout)

    def loss_of(m, data):
        with on_cpu(m):
            return mean_loss(m, data)

    def light_eval(m):
        with on_cpu(m):
            return evaluate_decoder(m, te, test_ex, vocab, cfg, full=False, decode=False)[0]

    def best_eval(m):
        with on_cpu(m):
            return evaluate_decoder(m, te, test_ex, vocab, cfg, full=False)[:2]

    tracker = Tracker(model, probe=tr.take(torch.arange(min(PROBE, len(tr)))), val=va, loss_of=loss_of,
                      light_eval=light_eval)
    loss_fn = functools.partial(decoder_loss, label_smoothing=cfg.label_smoothing) if cfg.label_smoothing else decoder_loss
    return SquadPrepared(vocab, tr, va, te, model, tracker, loss_fn, best_eval, init_note)


def train_and_evaluate_squad(cfg: RealRunConfig, train_ex: list[SquadExample], val_ex: list[SquadExample],
                             test_ex: list[SquadExample], *, progress: bool = True, device: torch.device | None = None,
                             bf16: bool = False, resume: Path | None = None) -> dict[str, Any]:
    """Train the decoder for ``cfg`` with checkpoints, then the final, best-validation and baseline metrics.

    Training runs on ``device`` (optionally under bf16 autocast); every evaluation (checkpoints,
    decoding, baselines) runs on the CPU (:func:`~validation.real.tracking.on_cpu`), where its code
    and its float64 read-outs live. ``resume``: the training-state file (:func:`validation.real.training.train`)."""
    p = prepare_squad(cfg, train_ex, val_ex, test_ex)
    vocab, tr, te, model, tracker, best_eval, init_note = p.vocab, p.tr, p.te, p.model, p.tracker, p.best_eval, p.init_note
    W, Q, A = cfg.window, cfg.question_len, cfg.answer_len
    hist = train(model, tr, cfg, p.loss_fn, progress=progress, desc=f"squad r={cfg.ratio:g} s={cfg.seed}",
                 on_checkpoint=tracker, device=device, bf16=bf16, resume=resume)
    model.to("cpu")
    metrics, arrays, preds = evaluate_decoder(model, te, test_ex, vocab, cfg, full=True)
    baseline, best, best_arrays = tracker.finish(best_eval, hist.checkpoints)  # best-val: decoded, no controls
    arrays.update({f"best_val_{k}": best_arrays[k] for k in ("f1", "em", "mass", "p_true")})
    with uniform_attention(model):     # the uniform baseline decodes too (checkpoints do not)
        baseline["uniform"] = evaluate_decoder(model, te, test_ex, vocab, cfg, full=False)[0]
    baseline["step0"]["note"] = "EM/F1 not decoded at checkpoints (NaN); step 0 generates nothing useful"
    window = (f"the context cut to {cfg.context_chars} characters either side of the first gold answer (whole "
              f"words, at most {W}), " if cfg.context_chars else
              f"{W} context words holding the first gold answer (start drawn from a hash of the id), ")
    metrics.update(baseline=baseline, best_val=best, embedding_init=init_note,
                   window=window + f"question cut to {Q} words, answers to {A} words")
    return {"model": model, "hist": hist, "vocab": vocab, "n_train": len(tr), "metrics": metrics,
            "arrays": arrays, "extras": {"predictions.json": preds}}
