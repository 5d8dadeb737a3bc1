r"""SQuAD with a decoder-only transformer that reads context + question and generates the answer.

Input layout (fixed slots, so every prompt has the same length :math:`P = W + Q + 2` and greedy
decoding runs batched)::

    [context window: W words][SEP][question: Q words][SEP] answer_1 .. answer_k [EOS]

(pads inside the slots are masked out as keys; ``[CLS]`` serves as ``[EOS]``). The context window is
``W`` consecutive words of the paragraph that contain the first gold answer; its start is drawn per
question from a hash of the question id, so the answer can sit anywhere in the window (a model cannot
find it by position alone). Training: teacher forcing, cross-entropy of the answer words and
``[EOS]``. Evaluation: greedy decoding (at most ``answer_len`` words), EM/F1 with the official
normalisation against every gold answer; a generated word sequence that occurs in the window is
mapped back to the exact context text.

The model: word embeddings (GloVe 6B 50d when the ``glove`` extra is installed, else random),
projected to ``d``, learned positions, ``layers`` pre-LayerNorm blocks of causal multi-head
attention (per head :math:`W_Q^h, W_K^h` form the QK circuit, :math:`W_V^h` and :math:`W_O` the OV
circuit) plus an MLP, and a pointer-generator output (See et al., 2017): with the head-averaged
attention :math:`a_t` of the last layer at position :math:`t` and a gate :math:`g_t=\sigma(w^\top h_t)`,

.. math::
    p_t(w) = g_t\,\mathrm{softmax}(\ell_t)_w + (1-g_t) \sum_{j \le t,\ x_j = w} a_{tj},

where :math:`\ell_t` are logits tied to the word embeddings. The copy term makes the last layer's
attention *the* way to produce a context word, as copying through attention does in the paper's
GPT-2-style decoder (which has no explicit copy term: a departure, stated in docs/real-data.md),
and lets a small model trained for a minute on a CPU read its input. Attention on the answer:
at the positions that predict an answer word (the second ``[SEP]`` and the answer words but the
last) the head-averaged attention of each layer :math:`A_l` gives (a) the rollout
:math:`R = \tilde A_L\cdots\tilde A_1` (:func:`validation.metrics.attention_mass.attention_rollout`),
(b) the layer average and (c) the maximum over layers of the mass on the gold answer's context
positions, averaged over those rows. The primary metric (``relevant_mass_mean``, AC, ACMC, DTAP)
is the rollout one, as in the paper's SQuAD figures.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats
from torch import nn

from validation.metrics.plausibility import auprc, hard_rationale, iou_f1, mean_rationale_length, token_f1
from validation.metrics.squad_eval import exact_match, f1 as squad_f1

from .examples import SquadExample
from .squad_data import char_window
from .vocab import Vocab

EVAL_BATCH = 128


@dataclass
class DecoderTensors:
    """``ids, valid, target (-100 = no loss), answer_ctx, measured: (N, T)``; ``start (N,)`` the window
    start (word index in the paragraph); ``n_ans (N,)``; ``P`` the prompt length. ``measured`` marks
    the rows (positions) whose attention is measured: those predicting an answer word."""

    ids: torch.Tensor
    valid: torch.Tensor
    target: torch.Tensor
    answer_ctx: torch.Tensor
    measured: torch.Tensor
    start: torch.Tensor
    n_ans: torch.Tensor
    P: int
    W: int

    def __len__(self) -> int:
        return self.ids.shape[0]

    def take(self, idx: torch.Tensor) -> "DecoderTensors":
        return DecoderTensors(self.ids[idx], self.valid[idx], self.target[idx], self.answer_ctx[idx],
                              self.measured[idx], self.start[idx], self.n_ans[idx], self.P, self.W)

    def with_windows_from(self, perm: torch.Tensor) -> "DecoderTensors":
        """Contexts of the items ``perm`` (a permutation) with this data's questions and answers:
        the shuffled-context control (the answer is then usually not in the window)."""
        ids, valid = self.ids.clone(), self.valid.clone()
        ids[:, :self.W], valid[:, :self.W] = self.ids[perm, :self.W], self.valid[perm, :self.W]
        return DecoderTensors(ids, valid, self.target, torch.zeros_like(self.answer_ctx), self.measured,
                              self.start[perm], self.n_ans, self.P, self.W)


def window_start(ex: SquadExample, W: int) -> int:
    """Start of the ``W``-word window holding the first gold span, drawn from a hash of the id."""
    a, b = ex.spans[0]
    n = len(ex.context)
    lo, hi = max(0, b - W + 1), min(a, max(0, n - W))
    if lo > hi:
        return max(0, min(a, n - W))
    h = int(hashlib.sha1(ex.uid.encode()).hexdigest()[:8], 16)
    return lo + h % (hi - lo + 1)


def window_span(ex: SquadExample, W: int, context_chars: int | None = None) -> tuple[int, int]:
    """Words ``[s, e)`` of the context the model reads: with ``context_chars`` the official cut (every word
    within ``context_chars`` characters either side of the first gold answer,
    :func:`~validation.real.squad_data.char_window`), at most ``W`` of them (a longer cut keeps the ``W`` words
    nearest its start that still hold the answer); else the ``W``-word window of :func:`window_start`."""
    if context_chars is None:
        s = window_start(ex, W)
        return s, min(s + W, len(ex.context))
    a, b = ex.spans[0]
    s, e = char_window(ex.offsets, ex.offsets[a][0], ex.offsets[b][1], context_chars)
    if e - s > W:
        s = max(s, b + 1 - W)
        e = s + W
    return s, e


def encode_decoder(examples: list[SquadExample], vocab: Vocab, W: int, Q: int, A: int,
                   context_chars: int | None = None) -> DecoderTensors:
    """Encode the fixed-slot layout of the module docstring (answers cut to ``A`` words; the context window
    of :func:`window_span`, ``context_chars`` the official +-200-character cut)."""
    N, P = len(examples), W + Q + 2
    T = P + A + 1
    ids = torch.zeros(N, T, dtype=torch.long)
    valid = torch.zeros(N, T, dtype=torch.bool)
    target = torch.full((N, T), -100, dtype=torch.long)
    ans_ctx = torch.zeros(N, T, dtype=torch.bool)
    measured = torch.zeros(N, T, dtype=torch.bool)
    starts, n_ans = torch.zeros(N, dtype=torch.long), torch.zeros(N, dtype=torch.long)
    for i, ex in enumerate(examples):
        s, e = window_span(ex, W, context_chars)
        win = ex.context[s:e]
        ids[i, :len(win)] = torch.tensor(vocab.encode(win))
        valid[i, :len(win)] = True
        ids[i, W], valid[i, W] = vocab.sep, True
        q = ex.question[:Q]
        if q:
            ids[i, W + 1:W + 1 + len(q)] = torch.tensor(vocab.encode(q))
            valid[i, W + 1:W + 1 + len(q)] = True
        ids[i, P - 1], valid[i, P - 1] = vocab.sep, True
        a, b = ex.spans[0]
        ans = vocab.encode(ex.context[a:b + 1][:A])
        k = len(ans)
        ids[i, P:P + k] = torch.tensor(ans)
        ids[i, P + k] = vocab.cls
        valid[i, P:P + k + 1] = True
        target[i, P - 1:P - 1 + k] = torch.tensor(ans)
        target[i, P - 1 + k] = vocab.cls
        measured[i, P - 1:P - 1 + k] = True
        for x, y in ex.spans:
            if s <= x and y < e:
                ans_ctx[i, x - s:y - s + 1] = True
        starts[i], n_ans[i] = s, k
    return DecoderTensors(ids, valid, target, ans_ctx, measured, starts, n_ans, P, W)


class CausalBlock(nn.Module):
    """Pre-LN block: causal multi-head attention (``W_Q, W_K, W_V: (H, d_head, d)``, ``W_O: (d, H d_head)``)
    and a ``d_ff``-wide (default 4d) GELU MLP; ``dropout > 0`` drops the two residual branches in training
    (never the attention weights, which the metrics read). ``forward(x (B,T,d), valid (B,T))`` ->
    ``(x, attention (B,H,T,T))``."""

    def __init__(self, d: int, heads: int, d_head: int, init_std: float, d_ff: int | None = None,
                 dropout: float = 0.0):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.W_Q = nn.Parameter(torch.randn(heads, d_head, d) * init_std)
        self.W_K = nn.Parameter(torch.randn(heads, d_head, d) * init_std)
        self.W_V = nn.Parameter(torch.randn(heads, d_head, d) * init_std)
        self.W_O = nn.Parameter(torch.randn(d, heads * d_head) * init_std)
        d_ff = d_ff or 4 * d
        self.mlp = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Linear(d_ff, d))
        self.scale = 1.0 / math.sqrt(d_head)
        self.drop = nn.Dropout(dropout) if dropout > 0 else None

    def forward(self, x: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, _ = x.shape
        h = self.ln1(x)
        q = torch.einsum("hed,btd->bhte", self.W_Q, h)
        k = torch.einsum("hed,btd->bhte", self.W_K, h)
        v = torch.einsum("hed,btd->bhte", self.W_V, h)
        s = torch.einsum("bhte,bhue->bhtu", q, k) * self.scale
        eye = torch.eye(T, dtype=torch.bool, device=x.device)
        allowed = (torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))[None] & valid[:, None, :]) | eye
        a = torch.softmax(s.masked_fill(~allowed[:, None], float("-inf")), dim=-1)
        o = torch.einsum("bhtu,bhue->bthe", a, v).reshape(B, T, -1)
        if self.drop is None:
            x = x + o @ self.W_O.T
            return x + self.mlp(self.ln2(x)), a
        x = x + self.drop(o @ self.W_O.T)
        return x + self.drop(self.mlp(self.ln2(x))), a


class DecoderLM(nn.Module):
    """The answer-generating decoder (module docstring). ``forward(ids, valid)`` ->
    ``(hidden (B,T,d), attentions (layers, B, H, T, T))``; :meth:`logits` maps hidden states to words."""

    def __init__(self, vocab_size: int, *, d: int, layers: int, heads: int, d_head: int, max_T: int,
                 eos_id: int, init_std: float = 0.02, pretrained: np.ndarray | None = None,
                 d_ff: int | None = None, dropout: float = 0.0):
        super().__init__()
        self.eos_id = eos_id
        emb_dim = 50 if pretrained is None else pretrained.shape[1]
        self.emb = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        nn.init.normal_(self.emb.weight, 0.0, 0.4)          # about GloVe 6B 50d's per-coordinate spread
        if pretrained is not None:
            with torch.no_grad():
                found = torch.from_numpy(np.abs(pretrained).sum(1) > 0)
                self.emb.weight[found] = torch.from_numpy(pretrained)[found]
        self.inp = nn.Linear(emb_dim, d, bias=False)
        self.pos = nn.Embedding(max_T, d)
        nn.init.normal_(self.pos.weight, 0.0, 0.02)
        self.blocks = nn.ModuleList(CausalBlock(d, heads, d_head, init_std, d_ff, dropout) for _ in range(layers))
        self.drop = nn.Dropout(dropout) if dropout > 0 else None
        self.ln_f = nn.LayerNorm(d)
        self.out = nn.Linear(d, emb_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        self.gate = nn.Linear(d, 1)

    def qk_parameters(self):
        for b in self.blocks:
            yield from (b.W_Q, b.W_K)

    def ov_parameters(self):
        for b in self.blocks:
            yield from (b.W_V, b.W_O)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.emb(ids)

    def forward(self, ids: torch.Tensor, valid: torch.Tensor, embedded: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        e = self.embed(ids) if embedded is None else embedded
        x = self.inp(e) + self.pos.weight[:ids.shape[1]][None]
        if self.drop is not None:
            x = self.drop(x)
        attns = []
        for b in self.blocks:
            x, a = b(x, valid)
            attns.append(a)
        return self.ln_f(x), torch.stack(attns)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        r"""Vocabulary logits :math:`\ell` (tied to the embeddings), ``(..., V)``."""
        return self.out(h) @ self.emb.weight.T + self.bias

    def target_log_prob(self, h: torch.Tensor, att: torch.Tensor, ids: torch.Tensor, target: torch.Tensor,
                        sel: torch.Tensor) -> torch.Tensor:
        r""":math:`\log p_t(\text{target}_t)` at the selected positions ``sel (B,T)``; ``att`` the
        last layer's head-averaged attention ``(B,T,T)``."""
        g = torch.sigmoid(self.gate(h[sel]))[:, 0]
        pv = torch.log_softmax(self.logits(h[sel]), -1).gather(-1, target[sel][:, None])[:, 0].exp()
        match = (ids[:, None, :] == target[:, :, None]).to(att.dtype)           # (B, T, T)
        pc = (att * match).sum(-1)[sel]
        return torch.log(g * pv + (1 - g) * pc + 1e-12)

    def next_word_probs(self, h_last: torch.Tensor, att_last: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        r""":math:`p_t(\cdot)` over the vocabulary at one position per row: ``h_last (B,d)``,
        ``att_last (B,T)`` -> ``(B,V)``."""
        g = torch.sigmoid(self.gate(h_last))
        p = g * torch.softmax(self.logits(h_last), -1)
        return p.scatter_add(1, ids, (1 - g) * att_last)


def decoder_loss(model: DecoderLM, b: DecoderTensors, label_smoothing: float = 0.0) -> torch.Tensor:
    r"""Teacher-forced cross-entropy of the answer words and ``[EOS]`` (mean over those positions).

    ``label_smoothing`` :math:`\varepsilon > 0` (official SQuAD: 0.1): per position
    :math:`-(1-\varepsilon)\log p_t(y_t) - \frac{\varepsilon}{V}\sum_w \log p_t(w)` with :math:`p_t` the
    whole pointer-generator distribution (:meth:`DecoderLM.next_word_probs`, ``(n, V)`` at the ``n`` target
    positions of the batch), as ``torch.nn.functional.cross_entropy(label_smoothing=...)`` smooths a softmax."""
    h, att = model(b.ids, b.valid)
    sel = b.target >= 0
    if label_smoothing <= 0:
        return -model.target_log_prob(h, att[-1].mean(1), b.ids, b.target, sel).mean()
    rows = att[-1].mean(1)[sel]                                                   # (n, T)
    ids = b.ids[:, None, :].expand(-1, b.ids.shape[1], -1)[sel]                   # (n, T)
    logp = torch.log(model.next_word_probs(h[sel], rows, ids) + 1e-12)            # (n, V)
    nll = -logp.gather(1, b.target[sel][:, None])[:, 0]
    return ((1 - label_smoothing) * nll - label_smoothing * logp.mean(1)).mean()


@torch.no_grad()
def mean_loss(model: DecoderLM, data: DecoderTensors) -> float:
    """:func:`decoder_loss` averaged over all target positions of ``data`` (eval mode)."""
    model.eval()
    tot, n = 0.0, 0
    for i in range(0, len(data), EVAL_BATCH):
        b = data.take(torch.arange(i, min(i + EVAL_BATCH, len(data))))
        h, att = model(b.ids, b.valid)
        sel = b.target >= 0
        tot -= float(model.target_log_prob(h, att[-1].mean(1), b.ids, b.target, sel).sum())
        n += int(sel.sum())
    return tot / max(n, 1)


@torch.no_grad()
def greedy_decode(model: DecoderLM, data: DecoderTensors, max_words: int, banned: tuple[int, ...] = (0, 1)
                  ) -> list[list[int]]:
    """Greedy generation after the prompt, stopping at ``[EOS]`` (``[CLS]``); ``banned`` ids
    (``[PAD]``, ``[UNK]``) are never produced. Returns the generated word ids per item."""
    model.eval()
    out: list[list[int]] = []
    for i in range(0, len(data), EVAL_BATCH):
        b = data.take(torch.arange(i, min(i + EVAL_BATCH, len(data))))
        ids, valid = b.ids[:, :data.P].clone(), b.valid[:, :data.P].clone()
        gen: list[list[int]] = [[] for _ in range(len(b))]
        done = torch.zeros(len(b), dtype=torch.bool)
        for _ in range(max_words + 1):
            h, att = model(ids, valid)
            pr = model.next_word_probs(h[:, -1], att[-1].mean(1)[:, -1], ids)
            pr[:, list(banned)] = -1.0
            nxt = pr.argmax(-1)
            for j, t in enumerate(nxt.tolist()):
                if not done[j]:
                    if t == model.eos_id:
                        done[j] = True
                    else:
                        gen[j].append(t)
            if bool(done.all()):
                break
            ids = torch.cat([ids, nxt[:, None]], 1)
            valid = torch.cat([valid, torch.ones_like(valid[:, :1])], 1)
        out.extend(g[:max_words] for g in gen)
    return out


def answer_text(words: list[str], ex: SquadExample, start: int, W: int) -> str:
    """The generated words as text: the exact context text when they occur in the window, else joined."""
    if not words:
        return ""
    win = [w.lower() for w in ex.context[start:start + W]]
    k = len(words)
    for i in range(len(win) - k + 1):
        if win[i:i + k] == words:
            return ex.context_text[ex.offsets[start + i][0]:ex.offsets[start + i + k - 1][1]]
    return " ".join(words)


def em_f1(model: DecoderLM, data: DecoderTensors, examples: list[SquadExample], vocab: Vocab,
          max_words: int, context_of: list[SquadExample] | None = None
          ) -> tuple[np.ndarray, np.ndarray, dict[str, str]]:
    """Per-item EM and F1 (percent) of greedy decoding, and the predictions by question id.
    ``context_of[i]`` is the example whose window item ``i`` reads (default: its own)."""
    gens = greedy_decode(model, data, max_words, banned=(vocab.pad, vocab.unk))
    ctx = context_of or examples
    preds = {ex.uid: answer_text(vocab.words(g), c, int(s), data.W)
             for ex, c, g, s in zip(examples, ctx, gens, data.start.tolist())}
    em = np.array([100.0 * exact_match(preds[ex.uid], list(ex.answers)) for ex in examples])
    f1 = np.array([100.0 * squad_f1(preds[ex.uid], list(ex.answers)) for ex in examples])
    return em, f1, preds


def rollout_rows_mean(A: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r"""``weights^T R`` per item, ``R`` the rollout :math:`\tilde A_L\cdots\tilde A_1`, :math:`\tilde A_l = \tfrac12 A_l
    + \tfrac12 I` (:func:`validation.metrics.attention_mass.attention_rollout`), without forming ``R``: the row
    vector times each :math:`\tilde A_l` from the last layer down, :math:`O(L T^2)` per item instead of
    :math:`O(L T^3)`. ``A``: ``(layers, B, T, T)`` head-averaged attention; ``weights``: ``(B, T)`` (e.g. the
    measured rows over their count); returns ``(B, T)``, equal to ``einsum("bi,bij->bj", weights, R)`` to float
    rounding (``tests/unit/test_rollout_rows.py``)."""
    v = weights[:, None, :]                                           # (B, 1, T)
    for a in A.flip(0):                                               # the last layer first
        v = 0.5 * (v @ a) + 0.5 * v
    return v[:, 0]


@torch.no_grad()
def answer_attention(model: DecoderLM, data: DecoderTensors) -> dict[str, np.ndarray]:
    """Per item: mass on the answer's context positions by rollout, layer average and max over layers
    (each averaged over the measured rows), the gold answer's probability (geometric mean over its
    words) and the rollout attention over the window (mean over measured rows, ``(N, W)``)."""
    model.eval()
    keys = ("rollout", "layer_average", "max_over_layers", "p_true")
    res: dict[str, list] = {k: [] for k in keys + ("window_attention",)}
    for i in range(0, len(data), EVAL_BATCH):
        b = data.take(torch.arange(i, min(i + EVAL_BATCH, len(data))))
        h, att = model(b.ids, b.valid)
        A = att.mean(2).double()                                      # (layers, B, T, T), heads averaged
        rel = b.answer_ctx.double()                                   # (B, T)
        rows = b.measured.double()
        nrows = rows.sum(1).clamp(min=1)
        v = rollout_rows_mean(A, rows / nrows[:, None])               # (B, T): the measured rows' mean of R

        def mass(M, rel=rel, rows=rows, nrows=nrows):                 # M (B, T, T) -> (B,)
            return ((M @ rel[..., None])[..., 0] * rows).sum(1) / nrows

        per_layer = torch.stack([mass(a) for a in A])                 # (layers, B)
        res["rollout"].append((v * rel).sum(1))                       # = mass(R), R the rollout
        res["layer_average"].append(per_layer.mean(0))
        res["max_over_layers"].append(per_layer.max(0).values)
        word = (b.target >= 0) & b.measured                          # answer words, not [EOS]
        tok = torch.zeros(b.ids.shape, dtype=torch.float64)
        tok[word] = model.target_log_prob(h, att[-1].mean(1), b.ids, b.target, word).double()
        res["p_true"].append(torch.exp(tok.sum(1) / word.sum(1).clamp(min=1)))
        res["window_attention"].append(v[:, :data.W])
    return {k: torch.cat(v).numpy() for k, v in res.items()}


def grad_input_agreement(model: DecoderLM, data: DecoderTensors, window_attention: np.ndarray,
                         max_items: int = 200) -> dict[str, float]:
    r"""An explanation-independent check of the rollout attention: per item, the Spearman correlation
    between the rollout attention over the window's words and the gradient x input saliency
    :math:`|\sum_k e_{jk}\,\partial \log p(\text{answer})/\partial e_{jk}|` of the same words, and the
    share of the top-:math:`k` rollout words (``k`` = answer length) that are also top-:math:`k` by
    saliency. Both are near 0 / :math:`k/W` for an attention unrelated to what the output uses."""
    model.eval()
    n = min(len(data), max_items)
    b = data.take(torch.arange(n))
    e = model.embed(b.ids).detach().requires_grad_(True)
    h, att = model(b.ids, b.valid, embedded=e)
    sel = (b.target >= 0) & b.measured
    logp = model.target_log_prob(h, att[-1].mean(1), b.ids, b.target, sel).sum()
    (g,) = torch.autograd.grad(logp, e)
    sal = (g * e).sum(-1).abs()[:, :data.W].detach().numpy()
    rhos, overlaps = [], []
    for i in range(n):
        v = b.valid[i, :data.W].numpy()
        if v.sum() < 3:
            continue
        att, s = window_attention[i][v], sal[i][v]
        r = stats.spearmanr(att, s).statistic
        if np.isfinite(r):
            rhos.append(r)
        k = max(1, int(b.n_ans[i]))
        overlaps.append(len(set(np.argsort(-att)[:k]) & set(np.argsort(-s)[:k])) / k)
    return {"spearman_rollout_vs_grad_input": float(np.mean(rhos)) if rhos else math.nan,
            "topk_overlap_rollout_vs_grad_input": float(np.mean(overlaps)) if overlaps else math.nan,
            "n_items": len(overlaps)}


def plausibility(window_attention: np.ndarray, data: DecoderTensors) -> dict[str, float]:
    """Token F1, IOU-F1 and AUPRC of the rollout attention over the window against the gold answer."""
    gold = data.answer_ctx[:, :data.W].numpy()
    valid = data.valid[:, :data.W].numpy()
    has = gold.any(1)
    k = mean_rationale_length(gold[has])
    hard = hard_rationale(window_attention[has], valid[has], k)
    return {"token_f1": token_f1(hard, gold[has]), "iou_f1": iou_f1(hard, gold[has]),
            "auprc": auprc(window_attention[has], gold[has], valid[has]), "hard_rationale_tokens": k}


def uniform_mass(data: DecoderTensors) -> np.ndarray:
    """Mass on the answer under uniform causal attention in every layer, exactly (rollout of uniform
    rows is what the QK-zeroed model gives; this closed form is its one-layer value for reference)."""
    rel = data.answer_ctx.double()
    T = data.ids.shape[1]
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))[None] & data.valid[:, None, :]
    allowed = allowed | torch.eye(T, dtype=torch.bool)[None]
    U = allowed.double() / allowed.sum(-1, keepdim=True)
    rows = data.measured.double()
    return (((U @ rel[..., None])[..., 0] * rows).sum(1) / rows.sum(1).clamp(min=1)).numpy()
