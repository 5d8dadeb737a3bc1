"""Practitioner paths of validation.user_models on tiny torch modules (no transformers needed):
attention found by what the forward computes, timm/diffusers/Meta layouts, guards around the split."""

import math
import warnings

import pytest
import torch
from torch import nn

from theory.errors import InputError
from validation.attention_layouts import UnknownAttentionLayout
from validation.user_models import describe_param_groups, param_groups

pytestmark = pytest.mark.unit
E, H, L = 8, 2, 5


def _attend(q, k, v):
    b, n, _ = q.shape
    q, k, v = (t.view(b, n, H, E // H).transpose(1, 2) for t in (q, k, v))
    p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(E // H), dim=-1)
    return (p @ v).transpose(1, 2).reshape(b, n, E)


class SelfAttention(nn.Module):  # HF-style names
    def __init__(self):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(E, E) for _ in range(4))

    def forward(self, x):
        return self.o_proj(_attend(self.q_proj(x), self.k_proj(x), self.v_proj(x)))


class TokenMixer(nn.Module):  # no "attn" in the class name, child names in no known layout
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = (nn.Linear(E, E) for _ in range(4))

    def forward(self, x):
        return self.d(_attend(self.a(x), self.b(x), self.c(x)))


class MetaMixer(nn.Module):  # Meta's reference Llama names, class name without "attn"
    def __init__(self):
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(E, E, bias=False) for _ in range(4))

    def forward(self, x):
        return self.wo(_attend(self.wq(x), self.wk(x), self.wv(x)))


class TimmAttention(nn.Module):  # timm's fused qkv + proj
    def __init__(self):
        super().__init__()
        self.num_heads = H
        self.qkv, self.proj = nn.Linear(E, 3 * E), nn.Linear(E, E)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, H, E // H).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, n, E))


class DiffusersAttention(nn.Module):  # diffusers' to_q/to_k/to_v + to_out[0]
    def __init__(self):
        super().__init__()
        self.to_q, self.to_k, self.to_v = (nn.Linear(E, E) for _ in range(3))
        self.to_out = nn.ModuleList([nn.Linear(E, E), nn.Dropout(0.0)])

    def forward(self, x):
        y = _attend(self.to_q(x), self.to_k(x), self.to_v(x))
        return self.to_out[1](self.to_out[0](y))


class Hybrid(nn.Module):
    def __init__(self, second):
        super().__init__()
        torch.manual_seed(0)
        self.first, self.second, self.head = SelfAttention(), second, nn.Linear(E, 1)

    def forward(self, x):
        return self.head(self.second(self.first(x)))


X = torch.randn(2, L, E, generator=torch.Generator().manual_seed(1))


def _circuit_of(groups):
    return {id(p): g["circuit"] for g in groups for p in g["params"]}


def test_hybrid_second_mixer_in_no_layout_is_refused_in_one_line_naming_it():
    model = Hybrid(TokenMixer())
    with pytest.raises(UnknownAttentionLayout) as e:
        param_groups(model, 1e-3, 10.0, example_inputs=X)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("second (TokenMixer") and "computes attention scores" in msg
    with pytest.warns(UserWarning, match="second \\(TokenMixer"):  # strict=False: warned, left at lr_other
        groups = param_groups(model, 1e-3, 10.0, example_inputs=X, strict=False)
    assert _circuit_of(groups)[id(model.second.a.weight)] == "other"
    assert _circuit_of(groups)[id(model.first.q_proj.weight)] == "qk"


@pytest.mark.parametrize("second, qk, ov", [
    (MetaMixer, ("wq", "wk"), ("wv", "wo")),
    (DiffusersAttention, ("to_q", "to_k"), ("to_v",)),
])
def test_hybrid_second_mixer_in_a_known_layout_gets_the_ratio(second, qk, ov):
    model = Hybrid(second())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        groups = param_groups(model, 1e-3, 10.0, example_inputs=X)
    where = _circuit_of(groups)
    for n in qk:
        assert where[id(getattr(model.second, n).weight)] == "qk", n
    for n in ov:
        assert where[id(getattr(model.second, n).weight)] == "ov", n
    if second is DiffusersAttention:
        assert where[id(model.second.to_out[0].weight)] == "ov"


def test_timm_fused_qkv_is_confirmed_by_the_forward_and_split():
    model = Hybrid(TimmAttention())
    out0 = model(X)
    groups = param_groups(model, 1e-3, 10.0, example_inputs=X)
    torch.testing.assert_close(model(X), out0, rtol=0, atol=0)  # the split computes the same function
    pl = model.second.qkv.parametrizations.weight
    where = _circuit_of(groups)
    assert [where[id(getattr(pl, f"original{i}"))] for i in range(3)] == ["qk", "qk", "ov"]
    assert where[id(model.second.proj.weight)] == "ov"
    param_groups(model, 1e-3, 10.0, example_inputs=X)  # re-entrant


def test_timm_qkv_without_example_inputs_is_refused_in_one_line():
    with pytest.raises(UnknownAttentionLayout, match=r"^second \(TimmAttention\): qkv.weight is a fused") as e:
        param_groups(Hybrid(TimmAttention()), 1e-3, 10.0)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("field, kw", [
    ("ratio", {"ratio": math.inf}), ("ratio", {"ratio": math.nan}), ("lr", {"lr": math.inf}),
    ("lr", {"lr": math.nan}), ("ratio", {"ratio": -1.0}), ("lr_other", {"lr_other": math.nan}),
])
def test_bad_rates_raise_before_the_model_is_touched(field, kw):
    model = nn.MultiheadAttention(E, H)
    before = {n for n, _ in model.named_parameters()}
    args = {"lr": 1e-3, "ratio": 10.0, **kw}
    with pytest.raises(InputError, match=f"^{field}: "):
        param_groups(model, **args)
    assert {n for n, _ in model.named_parameters()} == before  # not re-parametrized
    with pytest.raises(InputError, match=f"^{field}: "):
        describe_param_groups(model, **args)


@pytest.mark.parametrize("model", [None, object(), "gpt2"])
def test_a_model_that_is_no_module_is_refused_in_one_line(model):
    with pytest.raises(InputError, match="^model: a .*: must be a torch.nn.Module$"):
        param_groups(model, 1e-3, 10.0)
    with pytest.raises(InputError, match="^model: "):
        describe_param_groups(model, 1e-3, 10.0)


def test_an_optimizer_built_before_the_split_raises_naming_the_fix():
    model = nn.TransformerEncoderLayer(E, H, dim_feedforward=16, batch_first=True)
    stale = torch.optim.AdamW(model.parameters(), lr=1e-3)
    groups = param_groups(model, 1e-3, 10.0)
    model(X).sum().backward()
    with pytest.raises(RuntimeError, match="built before the split.*param_groups"):
        stale.step()
    fresh = torch.optim.AdamW(groups)
    fresh.step()  # the right one steps
    later = torch.optim.AdamW(model.parameters(), lr=1e-3)  # model.parameters() after the split: no stale tensor,
    with pytest.warns(UserWarning, match="in one group"):   # but W_Q/W_K and W_V/W_O at one rate: a warning
        later.step()


def test_every_qk_weight_frozen_and_no_adapter_warns():
    model = nn.Sequential(SelfAttention())
    for n in ("q_proj", "k_proj"):
        getattr(model[0], n).requires_grad_(False)
    with pytest.warns(UserWarning, match="every W_Q/W_K found .* is frozen"):
        groups = param_groups(model, 1e-3, 10.0)
    assert not any(g["circuit"] == "qk" for g in groups)


class CodeGen457Attention(nn.Module):
    """CodeGen's attention as in transformers 4.x: ``mp_num = 4`` local to forward, no attribute."""

    def __init__(self):
        super().__init__()
        self.num_attention_heads, self.head_dim = H, E // H
        self.qkv_proj, self.out_proj = nn.Linear(E, 3 * E, bias=False), nn.Linear(E, E, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        mp_num = 4
        split = self.qkv_proj(x).reshape(b, n, mp_num, -1)
        q, v, k = torch.split(split, E // mp_num, dim=-1)
        q, k, v = (t.reshape(b, n, E) for t in (q, k, v))
        return self.out_proj(_attend(q, k, v))


def test_codegen_4x_groups_found_without_an_mp_num_attribute():
    model = Hybrid(CodeGen457Attention())
    groups = param_groups(model, 1e-3, 10.0, example_inputs=X)
    pl = model.second.qkv_proj.parametrizations.weight
    assert pl[0].roles == ("q", "k", "v")
    where = _circuit_of(groups)
    assert [where[id(getattr(pl, f"original{i}"))] for i in range(3)] == ["qk", "qk", "ov"]
    # rows: 4 groups of [q; v; k], E/4 rows each -> the v part holds rows [E/4, E/2) of each group of 3E/4
    w = E // 4
    v_rows = [g * 3 * w + w + i for g in range(4) for i in range(w)]
    torch.testing.assert_close(pl.original2, model.second.qkv_proj.weight[v_rows])
