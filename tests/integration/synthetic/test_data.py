"""Data sources: the exact population, sampled departures, the paper's preset."""

import numpy as np
import torch
from hypothesis import given, strategies as st

from simulation.model_matrices import TokenLayout
from validation.synthetic import paper_preset
from validation.synthetic.data import SampledData, SampledDataConfig, population_batch


def test_population_batch_is_model_md_population():
    b = population_batch(3, 2)
    assert b.x.shape == (3, 4, 6)
    ids = b.x.argmax(-1).numpy()
    assert (ids == TokenLayout(3, 2).sequences()).all()
    assert b.relevant[:, 0].all() and b.relevant.sum() == 3
    assert (b.y == torch.arange(3)).all()


@given(K=st.integers(2, 5), M=st.integers(1, 6), keep=st.floats(0.05, 1.0), n_pool=st.integers(1, 3),
       n_seq=st.integers(1, 3), seed=st.integers(0, 100))
def test_sampled_sequences_respect_the_layout(K, M, keep, n_pool, n_seq, seed):
    cfg = SampledDataConfig(K=K, M=M, common_keep=keep, min_common=1, distinct_per_class=n_pool,
                            distinct_per_seq=n_seq, label_noise=0.0, batch_size=16)
    data = SampledData(cfg, seed)
    ids, mask, relevant, y = data.token_ids(64)
    assert (ids[:, -1] == data.query_id).all()
    # distinct tokens belong to the label's class: id = k + K j
    assert ((ids[:, :n_seq] % K) == y[:, None]).all() and (ids[:, :n_seq] < K * n_pool).all()
    commons = ids[:, n_seq:-1]
    cmask = mask[:, n_seq:-1]
    assert (cmask.sum(1) >= 1).all()
    assert ((commons >= K * n_pool) & (commons < K * n_pool + M))[cmask].all()
    assert (relevant.sum(1) == n_seq).all()
    # kept commons are distinct tokens within a sequence
    for row, m in zip(commons, cmask):
        kept = row[m].tolist()
        assert len(kept) == len(set(kept))


def test_label_noise_rate_and_embeddings():
    cfg = SampledDataConfig(K=4, M=5, label_noise=0.2, embed_dim=7)
    data = SampledData(cfg, 0)
    # the clean labels are the class of the distinct tokens
    ids, _, _, y = data.token_ids(20000)
    flipped = (ids[:, 0] % 4 != y).double().mean().item()
    assert abs(flipped - 0.2) < 0.02
    b = data.batch(8)
    assert b.x.shape[-1] == 7 and data.d_in == 7


def test_sampled_runs_are_reproducible():
    cfg = SampledDataConfig()
    a, b = SampledData(cfg, 3).batch(), SampledData(cfg, 3).batch()
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)


def test_paper_preset_matches_the_notebook_facts():
    w = paper_preset.class_distributions()
    assert np.allclose(w.sum(1), 1)
    assert np.allclose(w[1, 20:30] / w[1, 0], np.arange(1, 11) / 10)
    assert (w[0, 20:] == 0).all()
    data = paper_preset.PaperData(0, batch_size=32)
    ids, cls = data.token_ids(32)
    assert ids.shape == (32, 63)
    assert (ids[:, -1] == torch.as_tensor(paper_preset.QUERY_IDS)[cls]).all()
    ctx = ids[:, :-1]
    own = (ctx < 10) | ((ctx >= 10 * (cls[:, None] + 1)) & (ctx < 10 * (cls[:, None] + 2)))
    assert own.all()
    b = data.batch()
    assert set(b.y.tolist()) <= {1, 2, 3, 4}
    model = paper_preset.paper_model("FAFO")
    logits, attn = model(b.x)
    assert logits.shape == (32, 50) and torch.allclose(attn.sum(-1), torch.ones(32))
