"""Fused q/k/v projections: the split keeps the function, and AdamW on the split fused model
equals AdamW on an unfused copy (separate q, k, v Parameters), to float64 precision."""

import pytest
import torch
from torch import nn

from tests.unit.metrics.toy_attention import attend
from validation.attention_layouts import UnknownAttentionLayout, neox_labels
from validation.user_models import describe_param_groups, merge_all, plan_qk_ov, param_groups

E, H = 6, 2
D = E // H
LR, RATIO, WD = 1e-2, 7.0, 0.1


class Conv1D(nn.Module):
    """GPT-2's transposed linear (same class name, so it is recognised): weight ``(in, out)``."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf, dtype=torch.float64) * 0.5)
        self.bias = nn.Parameter(torch.randn(nf, dtype=torch.float64) * 0.5)

    def forward(self, x):
        return x @ self.weight + self.bias


def _lin(i, o):
    m = nn.Linear(i, o, dtype=torch.float64)
    with torch.no_grad():
        m.weight.normal_(0, 0.5)
        m.bias.normal_(0, 0.5)
    return m


def _attend(q, k, v):
    return attend(q, k, v, H)


class Separate(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (_lin(E, E) for _ in range(4))

    def forward(self, x):
        return self.o_proj(_attend(self.q_proj(x), self.k_proj(x), self.v_proj(x)))


class GPT2LikeAttention(nn.Module):
    """``c_attn`` Conv1D ``(E, 3E)``: columns q | k | v."""

    def __init__(self):
        super().__init__()
        self.c_attn, self.c_proj = Conv1D(3 * E, E), Conv1D(E, E)

    def forward(self, x):
        return self.c_proj(_attend(*self.c_attn(x).split(E, dim=-1)))

    def load_from(self, s):
        with torch.no_grad():
            self.c_attn.weight.copy_(torch.cat([s.q_proj.weight, s.k_proj.weight, s.v_proj.weight]).T)
            self.c_attn.bias.copy_(torch.cat([s.q_proj.bias, s.k_proj.bias, s.v_proj.bias]))
            self.c_proj.weight.copy_(s.o_proj.weight.T)
            self.c_proj.bias.copy_(s.o_proj.bias)

    def unfused(self):
        w, b = self.c_attn.weight.T, self.c_attn.bias
        return [w[:E], w[E:2 * E], w[2 * E:]], [b[:E], b[E:2 * E], b[2 * E:]]


class GPTNeoXTinyAttention(nn.Module):
    """``query_key_value`` Linear ``(3E, E)`` viewed as ``(..., H, 3D)``: per head q, k, v."""

    def __init__(self):
        super().__init__()
        self.head_size = D
        self.query_key_value, self.dense = _lin(E, 3 * E), _lin(E, E)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.query_key_value(x).view(b, n, H, 3 * D).chunk(3, dim=-1)
        return self.dense(_attend(*(t.reshape(b, n, E) for t in (q, k, v))))

    @staticmethod
    def _interleave(q, k, v):
        return torch.stack([t.view(H, D, *t.shape[1:]) for t in (q, k, v)], dim=1).reshape(3 * E, *q.shape[1:])

    def load_from(self, s):
        with torch.no_grad():
            self.query_key_value.weight.copy_(self._interleave(s.q_proj.weight, s.k_proj.weight, s.v_proj.weight))
            self.query_key_value.bias.copy_(self._interleave(s.q_proj.bias, s.k_proj.bias, s.v_proj.bias))
            self.dense.load_state_dict(s.o_proj.state_dict())

    def unfused(self):
        w = self.query_key_value.weight.view(H, 3, D, E)
        b = self.query_key_value.bias.view(H, 3, D)
        return [w[:, i].reshape(E, E) for i in range(3)], [b[:, i].reshape(E) for i in range(3)]


class QKVProj(nn.Module):
    """``qkv_proj`` Linear ``(3E, E)``: rows q | k | v (Phi-3 layout)."""

    def __init__(self):
        super().__init__()
        self.qkv_proj, self.o_proj = _lin(E, 3 * E), _lin(E, E)

    def forward(self, x):
        return self.o_proj(_attend(*self.qkv_proj(x).split(E, dim=-1)))

    def load_from(self, s):
        with torch.no_grad():
            self.qkv_proj.weight.copy_(torch.cat([s.q_proj.weight, s.k_proj.weight, s.v_proj.weight]))
            self.qkv_proj.bias.copy_(torch.cat([s.q_proj.bias, s.k_proj.bias, s.v_proj.bias]))
            self.o_proj.load_state_dict(s.o_proj.state_dict())

    def unfused(self):
        w, b = self.qkv_proj.weight, self.qkv_proj.bias
        return list(w.split(E)), list(b.split(E))


def _pair(kind, seed=0):
    torch.manual_seed(seed)
    sep = Separate()
    fused = kind()
    fused.load_from(sep)
    return sep, fused


def _x(seed=3):
    return torch.randn(2, 5, E, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


KINDS = [GPT2LikeAttention, GPTNeoXTinyAttention, QKVProj]


@pytest.mark.parametrize("kind", KINDS)
def test_fused_copy_computes_the_same_function_and_split_keeps_it_bitwise(kind):
    sep, fused = _pair(kind)
    x = _x()
    y = fused(x)
    # float64, same products summed in the same order up to the q|k|v packing: 1e-12 is
    # ~1e4 ulps of O(1) outputs.
    torch.testing.assert_close(y, sep(x), rtol=0, atol=1e-12)
    param_groups(fused, LR, RATIO, example_inputs=x)
    torch.testing.assert_close(fused(x), y, rtol=0, atol=0)  # the split only copies entries


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("steps", [1, 3])
def test_adamw_on_split_fused_equals_adamw_on_unfused_copy(kind, steps):
    sep, fused = _pair(kind)
    opt_s = torch.optim.AdamW(param_groups(sep, LR, RATIO, weight_decay=WD))
    opt_f = torch.optim.AdamW(param_groups(fused, LR, RATIO, weight_decay=WD, example_inputs=_x()))
    for t in range(steps):
        x = _x(10 + t)
        for m, opt in ((sep, opt_s), (fused, opt_f)):
            opt.zero_grad()
            (m(x) ** 2).sum().backward()
            opt.step()
    merge_all(fused)
    w, b = fused.unfused()
    for got, want in zip(w + [b[0], b[2]], [sep.q_proj.weight, sep.k_proj.weight, sep.v_proj.weight,
                                           sep.q_proj.bias, sep.v_proj.bias]):
        # float64: the two models' gradients differ only by summation order (~1e-15), and the
        # first Adam step divides g by |g|, so 1e-12 leaves a 1e3 margin over rounding.
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    # The key bias has an analytically zero gradient (softmax ignores a constant per query),
    # so each model sees its own rounding noise g ~ 1e-16..1e-14, which Adam divides by
    # |g| + eps (eps = 1e-8): the step is noise of size up to the rate. Only that bound holds:
    # each entry moved by at most ratio * lr per step in either model.
    torch.testing.assert_close(b[1], sep.k_proj.bias, rtol=0, atol=2 * RATIO * LR * steps)
    # and the QK rows really moved ratio x farther than under a ratio-1 run (not a no-op)
    sep1, fused1 = _pair(kind)
    opt1 = torch.optim.AdamW(param_groups(fused1, LR, 1.0, weight_decay=WD, example_inputs=_x()))
    opt1.zero_grad()
    (fused1(_x(10)) ** 2).sum().backward()
    opt1.step()
    merge_all(fused1)
    if steps == 1:
        d_ratio = (w[0] - sep1.q_proj.weight).abs().mean()
        d_one = (fused1.unfused()[0][0] - sep1.q_proj.weight).abs().mean()
        assert (d_ratio / d_one).item() == pytest.approx(RATIO, rel=0.05)  # |g| >> eps: |step| ~ lr per element


def test_neox_labels_interleave_per_head():
    assert neox_labels(12, 2) == ("q", "q", "k", "k", "v", "v") * 2
    with pytest.raises(UnknownAttentionLayout):
        neox_labels(10, 2)


def test_dry_run_lists_fused_rows_and_changes_nothing():
    _, fused = _pair(GPTNeoXTinyAttention)
    before = {n for n, _ in fused.named_parameters()}
    text = describe_param_groups(fused, LR, RATIO, example_inputs=_x())
    assert {n for n, _ in fused.named_parameters()} == before
    assert f"{RATIO * LR:.3g}" in text and "q rows [0:3, 9:12]" in text and "v rows [6:9, 15:18]" in text
    plan = plan_qk_ov(fused, qk_bias=False, example_inputs=_x())
    bias_rows = [r for r in plan if r.name == "query_key_value.bias"]
    assert {r.circuit for r in bias_rows} == {"other", "ov"}


class MysteryAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq, self.wkv = nn.Linear(E, E), nn.Linear(E, 2 * E)


class Falconish(nn.Module):
    def __init__(self):
        super().__init__()
        self.query_key_value, self.dense = nn.Linear(E, 3 * E), nn.Linear(E, E)


def test_unknown_layouts_raise_one_error_listing_what_was_found():
    model = nn.Sequential(Separate(), MysteryAttention())
    with pytest.raises(UnknownAttentionLayout, match=r"1 attention module.*1 \(MysteryAttention: wq:Linear, wkv:Linear"):
        param_groups(model, LR, RATIO)
    groups = param_groups(model, LR, RATIO, strict=False)  # the opt-out leaves it at lr_other
    assert sum(len(g["params"]) for g in groups if g["circuit"] == "qk") == 4
    with pytest.raises(UnknownAttentionLayout, match="no attention module found.*Linear"):
        param_groups(nn.Sequential(nn.Linear(3, 3)), LR, RATIO)
    # a fused projection whose rows cannot be checked (no inputs to run it on): no guess, an error
    with pytest.raises(UnknownAttentionLayout, match=r"^0 \(Falconish\): query_key_value.weight is a fused .*example_inputs"):
        param_groups(nn.Sequential(Falconish()), LR, RATIO)


class WithEmbedding(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.emb = nn.Embedding(11, E, dtype=torch.float64)
        self.attn = kind()

    def forward(self, ids):
        return self.attn(self.emb(ids))


@pytest.mark.parametrize("kind", KINDS + [Separate])
@pytest.mark.parametrize("qk_bias", [True, False])
@pytest.mark.parametrize("embeddings", [True, False])
def test_dry_run_plan_matches_the_groups_built(kind, qk_bias, embeddings):
    model = WithEmbedding(kind)
    ids = torch.randint(0, 11, (2, 5), generator=torch.Generator().manual_seed(0))
    before = plan_qk_ov(model, qk_bias=qk_bias, embeddings=embeddings, example_inputs=ids)
    groups = param_groups(model, LR, RATIO, qk_bias=qk_bias, embeddings=embeddings, example_inputs=ids)
    circuit_of = {id(p): g["circuit"] for g in groups for p in g["params"]}
    params = dict(model.named_parameters())
    after = plan_qk_ov(model, qk_bias=qk_bias, embeddings=embeddings)
    assert {r.name for r in after} == set(params)
    for r in after:  # the dry run on the split model names exactly the groups' circuits
        assert circuit_of[id(params[r.name])] == r.circuit, r
    # before the split, the same roles: one row per q/k/v part of a fused tensor
    assert sorted(r.circuit for r in before if r.site) == sorted(r.circuit for r in after if r.site)
    q_bias_circuit = {r.circuit for r in after if "bias" in r.name and r.rows.startswith(("q", "all (q)"))}
    assert q_bias_circuit == ({"qk"} if qk_bias else {"other"})
    assert circuit_of[id(model.emb.weight)] == ("qk" if embeddings else "other")
