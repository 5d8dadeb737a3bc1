"""Models, vocabulary and per-circuit rates: properties that could fail."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, strategies as st

from validation.real.batching import encode_classification
from validation.real.config import default_config
from validation.real.evaluation import best_spans
from validation.real.examples import ClassExample
from validation.real.models import AttentionClassifier, SpanModel
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


def test_span_model_shapes_and_masking():
    m = SpanModel(20, d=8, init_std=0.3)
    ctx = torch.tensor([[4, 5, 6, 0], [7, 8, 9, 10]])
    q = torch.tensor([[4, 0], [11, 12]])
    s, e, a = m(ctx, ctx != 0, q, q != 0)
    assert s.shape == e.shape == a.shape == (2, 4)
    assert s[0, 3] < -1e30 and a[0, 3] == 0 and torch.all(a.sum(1) <= 1 + 1e-6)


@given(st.integers(1, 12), st.integers(0, 10_000))
def test_best_spans_are_ordered_and_short(n, seed):
    g = torch.Generator().manual_seed(seed)
    s, e = best_spans(torch.randn(3, n, generator=g), torch.randn(3, n, generator=g), max_words=4)
    assert all(0 <= a <= b < min(n, a + 4) for a, b in zip(s, e))


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
    from pathlib import Path
    from tests.paths import ROOT

    path = ROOT / "benchmarks" / "bench_real_throughput.py"
    spec = importlib.util.spec_from_file_location("bench_real_throughput", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.measure(steps=60, rounds=3)
    assert r["ratio_qkov_over_mha"] >= 1.0, r
