"""Layouts are checked against the module's own forward: a fused projection in an unknown row
order is refused in one line, a declared layout is honoured (and checked), and strict=False
leaves what it cannot place at lr_other."""

import pytest
import torch
from torch import nn

from tests.unit.metrics.toy_attention import attend
from validation.attention_layouts import (
    AttentionLayout,
    UnknownAttentionLayout,
    register_attention_layout,
)
from validation.user_models import param_groups

E, H = 8, 2
LR, RATIO = 1e-3, 10.0


def _attend(q, k, v):
    return attend(q, k, v, H)


class VQKAttention(nn.Module):
    """Fused ``qkv_proj`` whose rows are ``[v; q; k]``: no built-in layout has that order."""

    def __init__(self):
        super().__init__()
        self.qkv_proj, self.o_proj = nn.Linear(E, 3 * E), nn.Linear(E, E)

    def forward(self, x):
        v, q, k = self.qkv_proj(x).split(E, dim=-1)
        return self.o_proj(_attend(q, k, v))


def _x():
    return torch.randn(2, 5, E, generator=torch.Generator().manual_seed(0))


@pytest.fixture
def declared():
    yield
    register_attention_layout(VQKAttention, None)


def _role_rates(model, groups):
    """One AdamW step; mean |update| / lr_ov over the true q, k, v rows of ``qkv_proj``."""
    w0 = model.qkv_proj.weight.detach().clone()
    opt = torch.optim.AdamW(groups, weight_decay=0.0)
    model(_x()).pow(2).sum().backward()
    opt.step()
    with torch.no_grad():
        step = (model.qkv_proj.weight - w0).abs() / LR
    v, q, k = step.split(E)
    return {"q": q.mean().item(), "k": k.mean().item(), "v": v.mean().item()}


def test_unknown_row_order_is_refused_in_one_line_naming_the_module():
    torch.manual_seed(0)
    model = nn.Sequential(VQKAttention())
    with pytest.raises(UnknownAttentionLayout) as err:
        param_groups(model, LR, RATIO, example_inputs=_x())
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("0 (VQKAttention): qkv_proj.weight: the forward puts rows [8:24]")
    assert "only in the output" in msg and "register_attention_layout" in msg
    # unchecked (verify=False) it takes the contiguous [q; k; v] guess: the wrong rates
    rates = _role_rates(model[0], param_groups(model, LR, RATIO, verify=False))
    assert rates["v"] == pytest.approx(RATIO, rel=0.01) and rates["k"] == pytest.approx(1.0, rel=0.01)


def test_declared_layout_is_honoured(declared):
    torch.manual_seed(0)
    register_attention_layout(VQKAttention, AttentionLayout(qkv="qkv_proj", o="o_proj", order="vqk"))
    model = nn.Sequential(VQKAttention())
    x = _x()
    y0 = model(x)
    groups = param_groups(model, LR, RATIO, example_inputs=x)
    torch.testing.assert_close(model(x), y0, rtol=0, atol=0)
    rates = _role_rates(model[0], groups)
    # AdamW's first step is lr * g / (|g| + eps) ~ lr per entry (|g| >> eps here): 1% margin
    assert rates["q"] / rates["v"] == pytest.approx(RATIO, rel=0.01)
    assert rates["k"] / rates["v"] == pytest.approx(RATIO, rel=0.01)
    assert {g["circuit"]: len(g["params"]) for g in groups} == {"qk": 4, "ov": 4}


def test_a_wrong_declaration_is_caught_by_the_probe(declared):
    register_attention_layout(VQKAttention, AttentionLayout(qkv="qkv_proj", o="o_proj", order="qkv"))
    with pytest.raises(UnknownAttentionLayout, match=r"^<root> \(VQKAttention\): qkv_proj.weight: the forward puts"):
        param_groups(VQKAttention(), LR, RATIO, example_inputs=_x())
    with pytest.raises(UnknownAttentionLayout, match="order='qkv', groups=5 does not divide"):
        register_attention_layout(VQKAttention, AttentionLayout(qkv="qkv_proj", groups=5))
        param_groups(VQKAttention(), LR, RATIO, example_inputs=_x())


def test_strict_false_leaves_what_it_cannot_place_at_lr_other():
    model = nn.Sequential(VQKAttention())
    with pytest.warns(UserWarning, match="left at lr_other"):
        groups = param_groups(model, LR, RATIO, lr_other=3e-4, example_inputs=_x(), strict=False)
    assert [(g["circuit"], g["lr"]) for g in groups] == [("other", 3e-4)]
    with pytest.warns(UserWarning, match="no recognised attention"):
        groups = param_groups(nn.Linear(3, 3), LR, RATIO, lr_other=3e-4, strict=False)
    assert [(g["circuit"], len(g["params"])) for g in groups] == [("other", 2)]
