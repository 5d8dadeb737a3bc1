"""Attention read-out by hooks on nn.MultiheadAttention, and the metrics computed from it."""

import numpy as np
import pytest
import torch
from torch import nn

from validation.metrics.attention_mass import attention_rollout
from validation.user_attention import attention_metrics, read_attention

E, H, L, B = 8, 2, 5, 3


def _enc():
    torch.manual_seed(0)
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 16, dropout=0.0, batch_first=True),
                                 num_layers=2, enable_nested_tensor=False)


@pytest.mark.parametrize("train", [True, False])
def test_hooks_return_each_layers_unaveraged_weights(train):
    enc = _enc().train(train)
    x = torch.randn(B, L, E, generator=torch.Generator().manual_seed(1))
    a = read_attention(enc, x)
    assert a.shape == (2, B, H, L, L) and not a.requires_grad
    # layer 0 sees x itself: its weights are what the MHA returns when asked directly
    want = enc.layers[0].self_attn(x, x, x, need_weights=True, average_attn_weights=False)[1]
    torch.testing.assert_close(a[0], want.detach(), rtol=1e-6, atol=1e-7)  # float32 recomputation
    assert not torch.allclose(a[0], a[1])
    # the hooks are gone afterwards: the layer asks for no weights again
    assert enc.layers[0].self_attn._forward_hooks == {} and enc.layers[0].self_attn._forward_pre_hooks == {}
    torch.testing.assert_close(read_attention(enc, x, layers=[1], heads=[0])[0, :, 0], a[1, :, 0])


def test_no_attention_raises():
    with pytest.raises(ValueError, match="no way to read its attention"):
        read_attention(nn.Linear(3, 3), torch.zeros(1, 3))


def test_metrics_equal_hand_computation():
    rng = np.random.default_rng(0)
    a = rng.random((2, B, H, L, L))
    a /= a.sum(-1, keepdims=True)
    rel = np.zeros((B, L), bool)
    rel[:, [1, 3]] = True
    valid = np.ones((B, L), bool)
    valid[0, 3] = False  # a padded relevant token does not count
    query = np.array([0, 4, 2])
    p_true = np.array([0.9, 0.2, 0.7])
    m = attention_metrics(a, rel, query=query, valid=valid, p_true=p_true, tau=0.3, kappa=0.5)
    for l in range(2):
        for h in range(H):
            for b in range(B):
                want = sum(a[l, b, h, query[b], j] for j in (1, 3) if valid[b, j])
                assert m["mass"][l, h, b] == pytest.approx(want, rel=1e-12)  # same float64 sums
            assert m["attention_confidence"][l, h] == np.mean(m["mass"][l, h] >= 0.3)
            assert m["acmc"][l, h] == np.mean((m["mass"][l, h] >= 0.3) & (p_true >= 0.5))
    roll = attention_rollout(a.mean(axis=2))
    want = [roll[b, query[b], [j for j in (1, 3) if valid[b, j]]].sum() for b in range(B)]
    np.testing.assert_allclose(m["rollout_mass"], want, rtol=1e-12)
    assert m["rollout_dtap"].sum() == pytest.approx(100.0)
