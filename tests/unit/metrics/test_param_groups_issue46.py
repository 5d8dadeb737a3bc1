"""Issue 46 on tiny torch modules (no transformers): named groups with the base rate first, the one entry
``qkov.param_groups`` and its deprecated names, the optimizer step checks (no QK group: a warning; Parameters
replaced after the groups: refused), the whole QK circuit (score-only parameters with QK), Parameters shared
by two attention modules, and a declared layout whose W_O is outside the attention module."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import pytest
import torch
from torch import nn

from validation.attention_layouts import AttentionLayout, register_attention_layout
from validation.user_models import describe_param_groups, param_groups, plan_qk_ov

pytestmark = pytest.mark.unit
E, H, L, LR, RATIO = 8, 2, 5, 1e-3, 10.0


def _heads(t):
    b, n, _ = t.shape
    return t.view(b, n, H, E // H).transpose(1, 2)


class Attn(nn.Module):
    """q/k/v/o, with optional q/k norm gains, a per-head sink, a value-only gain and an input gain on q, k, v."""

    def __init__(self, *, norms=False, sink=False, vgain=False, pregain=False):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(E, E) for _ in range(4))
        self.q_norm = nn.Parameter(torch.rand(E // H) + 0.5) if norms else None
        self.k_norm = nn.Parameter(torch.rand(E // H) + 0.5) if norms else None
        self.sinks = nn.Parameter(torch.randn(H)) if sink else None
        self.vgain = nn.Parameter(torch.rand(E) + 0.5) if vgain else None
        self.pregain = nn.Parameter(torch.rand(E) + 0.5) if pregain else None

    def forward(self, x):
        if self.pregain is not None:  # acts on q, k and v alike: not score-only
            x = x * self.pregain
        q, k, v = _heads(self.q_proj(x)), _heads(self.k_proj(x)), self.v_proj(x)
        if self.vgain is not None:
            v = v * self.vgain
        v = _heads(v)
        if self.q_norm is not None:
            q = q / q.norm(dim=-1, keepdim=True) * self.q_norm
            k = k / k.norm(dim=-1, keepdim=True) * self.k_norm
        s = q @ k.transpose(-1, -2) / math.sqrt(E // H)
        if self.sinks is not None:
            sink = self.sinks.view(1, H, 1, 1).expand(s.shape[0], H, s.shape[2], 1)
            p = torch.softmax(torch.cat([s, sink], -1), -1)[..., :-1]
        else:
            p = torch.softmax(s, -1)
        b, _, n, _ = p.shape
        return self.o_proj((p @ v).transpose(1, 2).reshape(b, n, E))


def _net(**kw):
    torch.manual_seed(0)
    return nn.Sequential(Attn(**kw), nn.Linear(E, 2))


X = torch.randn(2, L, E, generator=torch.Generator().manual_seed(1))


def _by_name(groups):
    return {g["name"]: g for g in groups}


def test_groups_are_named_with_the_base_rate_first():
    groups = param_groups(_net(), LR, RATIO, lr_other=3e-4, example_inputs=X, weight_decay=0.1)
    assert [g["name"] for g in groups] == ["ov", "qk", "other"]
    assert [g["circuit"] for g in groups] == ["ov", "qk", "other"]
    assert [g["lr"] for g in groups] == [LR, RATIO * LR, 3e-4]
    assert all(g["weight_decay"] == 0.1 for g in groups)
    sched = torch.optim.lr_scheduler.LambdaLR(torch.optim.AdamW(groups), lambda s: 1.0)
    assert sched.get_last_lr()[0] == LR  # what transformers.Trainer logs as learning_rate: the OV rate


def test_qkov_param_groups_is_the_entry_and_old_names_warn():
    import qkov
    from validation import user_models

    assert qkov.param_groups is user_models.param_groups
    want = [(g["name"], len(g["params"]), g["lr"]) for g in param_groups(_net(), LR, RATIO, example_inputs=X)]
    for old, kw in ((user_models.qk_ov_param_groups, {"lr": LR}), (user_models.qkov_param_groups, {"lr_ov": LR})):
        with pytest.warns(DeprecationWarning, match=r"qkov\.param_groups"):
            got = old(_net(), ratio=RATIO, example_inputs=X, **kw)
        assert [(g["name"], len(g["params"]), g["lr"]) for g in got] == want


def test_import_qkov_stays_cheap_with_param_groups_exported():
    code = "import qkov, sys; assert 'param_groups' in qkov.__all__; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _step(opt, model):
    opt.zero_grad()
    model(X).sum().backward()
    opt.step()


def test_an_optimizer_built_before_the_groups_warns_once_at_its_first_step():
    model = _net()
    before = torch.optim.AdamW(model.parameters(), lr=LR)  # no fused tensor: nothing is retired by the split
    groups = param_groups(model, LR, RATIO, example_inputs=X)
    with pytest.warns(UserWarning, match=r"holds 4 W_Q/W_K and 4 W_V/W_O Parameters in one group.*ratio 10"):
        _step(before, model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _step(before, model)  # checked once: no second warning
        _step(torch.optim.AdamW(groups), model)  # the groups themselves: no warning
        model1 = _net()
        same = param_groups(model1, LR, 1.0, example_inputs=X)  # ratio 1: one rate is what was asked
        _step(torch.optim.AdamW(model1.parameters(), lr=LR), model1)
        assert same


def test_groups_built_and_never_used_warn_when_the_model_trains_without_them():
    model = _net()
    param_groups(model, LR, RATIO, example_inputs=X)  # built, then ignored
    opt = torch.optim.SGD([{"params": list(model.parameters())}], lr=LR)
    with pytest.warns(UserWarning, match="built before the groups, or from model.parameters"):
        _step(opt, model)


def test_an_optimizer_holding_replaced_parameters_is_refused_before_any_update():
    model = _net()
    groups = param_groups(model, LR, RATIO, example_inputs=X)
    opt = torch.optim.AdamW(groups)
    attn = model[0]
    old = attn.q_proj.weight
    attn.q_proj.weight = nn.Parameter(old.detach().clone())  # what fully_shard does to every Parameter
    kept = attn.q_proj.weight.detach().clone()
    with pytest.raises(RuntimeError) as e:
        _step(opt, model)
    msg = str(e.value)
    assert "\n" not in msg and "no longer in the model" in msg and "0.q_proj.weight" in msg
    assert torch.equal(attn.q_proj.weight, kept)  # refused before the step


def _plan(model, **kw):
    return {r.name: r for r in plan_qk_ov(model, example_inputs=X, **kw)}


def test_whole_circuit_trains_score_only_parameters_with_qk_and_value_only_with_ov():
    model = _net(norms=True, sink=True, vgain=True, pregain=True)
    plain = _plan(model)
    assert {plain[n].circuit for n in ("0.q_norm", "0.k_norm", "0.sinks", "0.vgain", "0.pregain")} == {"other"}
    whole = _plan(model, whole_circuit=True)
    assert {n: whole[n].circuit for n in ("0.q_norm", "0.k_norm", "0.sinks", "0.vgain", "0.pregain")} == \
        {"0.q_norm": "qk", "0.k_norm": "qk", "0.sinks": "qk", "0.vgain": "ov", "0.pregain": "other"}
    assert whole["0.sinks"].role == "scores only" and whole["0.vgain"].role == "values only"
    groups = _by_name(param_groups(model, LR, RATIO, example_inputs=X, whole_circuit=True))
    assert any(p is model[0].sinks for p in groups["qk"]["params"])
    assert any(p is model[0].pregain for p in groups["other"]["params"])


def test_whole_circuit_is_read_back_without_running_the_model_after_a_first_call():
    model = _net(norms=True)
    first = [(g["name"], len(g["params"])) for g in param_groups(model, LR, RATIO, example_inputs=X,
                                                                 whole_circuit=True)]
    assert first == [("ov", 4), ("qk", 6), ("other", 2)]
    again = param_groups(model, LR, RATIO, verify=False, whole_circuit=True)  # what a wrapped model gets
    assert [(g["name"], len(g["params"])) for g in again] == first
    with pytest.raises(ValueError, match="whole_circuit=True must tell which of q_norm, k_norm"):
        param_groups(_net(norms=True), LR, RATIO, verify=False, whole_circuit=True)


class Shared(nn.Module):
    """Two attention modules whose projections are the same Parameters (Zamba2's layers), one call each."""

    def __init__(self):
        super().__init__()
        self.a, self.b = Attn(), Attn()
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            getattr(self.b, n).weight = getattr(self.a, n).weight
            getattr(self.b, n).bias = getattr(self.a, n).bias
        self.head = nn.Linear(E, 2)

    def forward(self, x):
        return self.head(self.b(x + self.a(x)))


def test_parameters_shared_by_two_attention_modules_are_one_row_and_not_refused():
    torch.manual_seed(0)
    model = Shared()
    rows = plan_qk_ov(model, example_inputs=X)  # before the probe detached each call's input: "moves the scores"
    names = [r.name for r in rows]
    assert len(names) == len(set(names)) == len(list(model.parameters()))
    assert {r.name: r.circuit for r in rows if r.site} == {
        "a.q_proj.weight": "qk", "a.q_proj.bias": "qk", "a.k_proj.weight": "qk", "a.k_proj.bias": "qk",
        "a.v_proj.weight": "ov", "a.v_proj.bias": "ov", "a.o_proj.weight": "ov", "a.o_proj.bias": "ov"}
    groups = _by_name(param_groups(model, LR, RATIO, example_inputs=X))
    assert [len(groups[c]["params"]) for c in ("ov", "qk", "other")] == [4, 4, 2]


class SelfPart(nn.Module):  # DeBERTa/BERT-like: W_Q, W_K, W_V here, W_O in the sibling `output`
    def __init__(self):
        super().__init__()
        self.query_proj, self.key_proj, self.value_proj = (nn.Linear(E, E) for _ in range(3))
        self.pos_proj = nn.Linear(E, E, bias=False)  # a positional q/k projection: acts only on the scores
        self.rel = nn.Parameter(torch.randn(L, E))

    def forward(self, x):
        q, k, v = _heads(self.query_proj(x)), _heads(self.key_proj(x)), _heads(self.value_proj(x))
        pos = _heads(self.pos_proj(self.rel).expand(x.shape[0], L, E))
        p = torch.softmax((q @ k.transpose(-1, -2) + q @ pos.transpose(-1, -2)) / math.sqrt(E // H), -1)
        b, _, n, _ = p.shape
        return (p @ v).transpose(1, 2).reshape(b, n, E)


class Output(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(E, E)

    def forward(self, x):
        return self.dense(x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_part, self.output = SelfPart(), Output()

    def forward(self, x):
        return self.output(self.self_part(x))


def test_a_declared_layout_names_w_o_outside_the_module():
    torch.manual_seed(0)
    model = nn.Sequential(Block(), nn.Linear(E, 2))
    register_attention_layout(SelfPart, AttentionLayout(q="query_proj", k="key_proj", v="value_proj",
                                                        o="../output.dense", name="mine"))
    try:
        plan = _plan(model, whole_circuit=True)
        assert plan["0.output.dense.weight"].circuit == "ov" and plan["0.output.dense.weight"].role == "O"
        assert plan["0.self_part.pos_proj.weight"].circuit == "qk"
        assert plan["0.self_part.rel"].circuit == "qk"  # the relative embeddings act only on the scores too
        register_attention_layout(SelfPart, AttentionLayout(q="query_proj", k="key_proj", v="value_proj",
                                                            o="../../nothing.dense"))
        with pytest.raises(ValueError, match=r"declared o='../../nothing.dense' is not a module with a weight"):
            describe_param_groups(model, LR, RATIO, example_inputs=X)
    finally:
        register_attention_layout(SelfPart, None)
