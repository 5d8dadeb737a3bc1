"""The QK/OV ratio on users' own models: split of the packed MHA projection, groups, realised updates."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from validation.user_models import (is_split, merge_all, merge_mha_in_proj, qk_ov_parameters,
                                    param_groups, split_mha_in_proj)

E, H, LR, RATIO = 8, 2, 1e-3, 10.0


def _mha(seed=0, **kw):
    torch.manual_seed(seed)
    m = nn.MultiheadAttention(E, H, batch_first=True, **kw)
    with torch.no_grad():  # torch initialises in_proj_bias at 0: make every slice matter
        if m.in_proj_bias is not None:
            m.in_proj_bias.normal_(0, 0.1)
    return m


def _x(seed=1, b=3, length=5):
    return torch.randn(b, length, E, generator=torch.Generator().manual_seed(seed))


def _attn_out(m, x):
    return m(x, x, x, need_weights=False)[0]


def test_split_keeps_forward_and_makes_three_parameters():
    m = _mha()
    x = _x()
    y0 = _attn_out(m, x)
    split_mha_in_proj(m)
    assert is_split(m)
    names = {n for n, _ in m.named_parameters()}
    assert {"parametrizations.in_proj_weight.original0", "parametrizations.in_proj_weight.original2",
            "parametrizations.in_proj_bias.original1"} <= names and "in_proj_weight" not in names
    torch.testing.assert_close(_attn_out(m, x), y0, rtol=0, atol=0)
    split_mha_in_proj(m)  # idempotent
    assert len(list(m.parameters())) == 8


def test_transformer_encoder_output_unchanged_train_and_eval_fast_path():
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 16, dropout=0.0, batch_first=True),
                                num_layers=2, enable_nested_tensor=False)
    x = _x()
    y_train = enc(x)
    enc.eval()
    with torch.no_grad():
        y_eval = enc(x)
    enc.train()
    groups = param_groups(enc, LR, RATIO)
    torch.testing.assert_close(enc(x), y_train, rtol=1e-6, atol=1e-6)
    enc.eval()
    with torch.no_grad():
        torch.testing.assert_close(enc(x), y_eval, rtol=1e-6, atol=1e-6)
    by = {g["circuit"]: g for g in groups}
    assert len(by["qk"]["params"]) == 2 * 4 and len(by["ov"]["params"]) == 2 * 4  # per layer q,k / v,out
    assert by["qk"]["lr"] == pytest.approx(RATIO * LR) and by["ov"]["lr"] == LR
    all_ids = [id(p) for g in groups for p in g["params"]]
    assert sorted(all_ids) == sorted(id(p) for p in enc.parameters())


def test_state_dict_round_trip():
    a = _mha(0)
    x = _x()
    y0 = _attn_out(a, x)
    plain_keys = set(a.state_dict())
    split_mha_in_proj(a)
    b = split_mha_in_proj(_mha(5))
    b.load_state_dict(a.state_dict())  # split -> split
    torch.testing.assert_close(_attn_out(b, x), y0, rtol=0, atol=0)
    merge_mha_in_proj(b)  # back to torch's own layout
    assert not is_split(b) and set(b.state_dict()) == plain_keys
    c = _mha(7)
    c.load_state_dict(b.state_dict())
    torch.testing.assert_close(_attn_out(c, x), y0, rtol=0, atol=0)


class OracleMHA(nn.Module):
    """The same attention with separate W_Q, W_K, W_V (and biases): the reference for the split."""

    def __init__(self, mha):
        super().__init__()
        w, b = mha.in_proj_weight.detach(), mha.in_proj_bias.detach()
        self.wq, self.wk, self.wv = (nn.Parameter(t.clone()) for t in w.chunk(3))
        self.bq, self.bk, self.bv = (nn.Parameter(t.clone()) for t in b.chunk(3))
        self.out_proj = copy.deepcopy(mha.out_proj)

    def forward(self, x):
        xt = x.transpose(0, 1)
        y, _ = F.multi_head_attention_forward(
            xt, xt, xt, E, H, None, torch.cat([self.bq, self.bk, self.bv]), None, None, False, 0.0,
            self.out_proj.weight, self.out_proj.bias, training=True, need_weights=False,
            use_separate_proj_weight=True, q_proj_weight=self.wq, k_proj_weight=self.wk, v_proj_weight=self.wv)
        return y.transpose(0, 1)


def _loss(y):
    return (y ** 2).sum() + y[..., 0].sum()


def test_sgd_step_realises_the_ratio_per_slice():
    m = _mha()
    ref = copy.deepcopy(m)  # unsplit: its in_proj_weight gradient is the reference
    x = _x()
    _loss(_attn_out(ref, x)).backward()
    g = ref.in_proj_weight.grad
    gb = ref.in_proj_bias.grad
    w0 = m.in_proj_weight.detach().clone()
    b0 = m.in_proj_bias.detach().clone()
    opt = torch.optim.SGD(param_groups(m, lr=LR, ratio=RATIO))
    _loss(_attn_out(m, x)).backward()
    opt.step()
    scale = torch.tensor([RATIO * LR] * (2 * E) + [LR] * E)
    torch.testing.assert_close(m.in_proj_weight.detach(), w0 - scale[:, None] * g, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(m.in_proj_bias.detach(), b0 - scale * gb, rtol=1e-5, atol=1e-7)
    # realised update per slice relative to its gradient: -lr of the slice
    delta = m.in_proj_weight.detach() - w0
    for rows, lr in ((slice(0, E), RATIO * LR), (slice(E, 2 * E), RATIO * LR), (slice(2 * E, 3 * E), LR)):
        nz = g[rows].abs() > 1e-6
        torch.testing.assert_close(delta[rows][nz] / g[rows][nz], torch.full((int(nz.sum()),), -lr),
                                   rtol=1e-3, atol=0)


def _adamw_mean_abs_update(m, x, groups):
    w0 = m.in_proj_weight.detach().clone()
    opt = torch.optim.AdamW(groups, weight_decay=0.0)
    _loss(_attn_out(m, x)).backward()
    opt.step()
    d = (m.in_proj_weight.detach() - w0).abs()
    return d[:E].mean(), d[E:2 * E].mean(), d[2 * E:].mean(), d


def test_adamw_first_step_scales_by_ratio():
    m = _mha()
    dq, dk, dv, d = _adamw_mean_abs_update(m, _x(), param_groups(m, lr=LR, ratio=RATIO))
    # Adam's first step moves each element by lr * g / (|g| + eps) ~ lr
    assert dq == pytest.approx(RATIO * LR, rel=1e-3) and dk == pytest.approx(RATIO * LR, rel=1e-3)
    assert dv == pytest.approx(LR, rel=1e-3)
    assert (dq / dv) == pytest.approx(RATIO, rel=1e-3)


def test_gradient_scaling_does_nothing_under_adamw():
    """Why the split is needed: scaling the q/k rows' gradient leaves Adam's step unchanged."""
    m = _mha()
    m.in_proj_weight.register_hook(lambda g: g * torch.tensor([RATIO] * (2 * E) + [1.0] * E)[:, None])
    dq, _, dv, _ = _adamw_mean_abs_update(m, _x(), [{"params": list(m.parameters()), "lr": LR}])
    assert (dq / dv) == pytest.approx(1.0, rel=1e-3)


def test_adamw_several_steps_match_separate_weights():
    m = _mha()
    oracle = OracleMHA(m)
    x = _x()
    torch.testing.assert_close(oracle(x), _attn_out(m, x), rtol=1e-6, atol=1e-6)
    opt = torch.optim.AdamW(param_groups(m, lr=LR, ratio=RATIO), weight_decay=0.01)
    oopt = torch.optim.AdamW([
        {"params": [oracle.wq, oracle.wk, oracle.bq, oracle.bk], "lr": RATIO * LR},
        {"params": [oracle.wv, oracle.bv, *oracle.out_proj.parameters()], "lr": LR}], weight_decay=0.01)
    w0 = m.in_proj_weight.detach().clone()
    for step in range(4):
        xs = _x(seed=10 + step)
        for model, o, fwd in ((m, opt, lambda z: _attn_out(m, z)), (oracle, oopt, oracle)):
            o.zero_grad()
            _loss(fwd(xs)).backward()
            o.step()
    merged = m.in_proj_weight.detach()
    torch.testing.assert_close(merged, torch.cat([oracle.wq, oracle.wk, oracle.wv]).detach(), rtol=1e-5, atol=1e-6)
    # the key bias shifts every score of a query equally, so its gradient is zero up to rounding,
    # which Adam's normalisation amplifies: compare the q and v bias slices only
    bq, _, bv = m.in_proj_bias.detach().chunk(3)
    torch.testing.assert_close(bq, oracle.bq.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(bv, oracle.bv.detach(), rtol=1e-5, atol=1e-6)
    # after several steps the QK slices have moved about RATIO times as far as the V slice
    moved = (merged - w0).abs()
    ratio = moved[:2 * E].mean() / moved[2 * E:].mean()
    assert 0.5 * RATIO < ratio < 1.5 * RATIO


class TinyHFAttention(nn.Module):
    """An HF-style single-head attention (q_proj/k_proj/v_proj/o_proj), no transformers library."""

    def __init__(self, d):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        a = torch.softmax(self.q_proj(x) @ self.k_proj(x).transpose(1, 2) / x.shape[-1] ** 0.5, dim=-1)
        return self.o_proj(a @ self.v_proj(x))


class TinyHFModel(nn.Module):
    def __init__(self, vocab=11, d=E, classes=3):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([TinyHFAttention(d), TinyHFAttention(d)])
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        h = self.embed(ids)
        for layer in self.layers:
            h = h + layer(h)
        return self.head(h[:, -1])


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_hf_style_module_groups_and_first_step(optimizer):
    model = TinyHFModel().double()  # float64: the update of a tiny gradient is resolved exactly
    groups = param_groups(model, lr=LR, ratio=RATIO, lr_other=3e-4)
    by = {g["circuit"]: g for g in groups}
    assert len(by["qk"]["params"]) == 8 and len(by["ov"]["params"]) == 8
    assert {id(p) for p in by["other"]["params"]} == {id(p) for p in [*model.embed.parameters(),
                                                                       *model.head.parameters()]}
    assert by["other"]["lr"] == 3e-4
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ids = torch.randint(0, 11, (4, 6), generator=torch.Generator().manual_seed(0))
    loss = F.cross_entropy(model(ids), torch.tensor([0, 1, 2, 0]))
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    opt = (torch.optim.SGD(groups) if optimizer == "sgd" else torch.optim.AdamW(groups, weight_decay=0.0))
    opt.step()
    for n, p in model.named_parameters():
        lr = RATIO * LR if (".q_proj." in n or ".k_proj." in n) else LR if (".v_proj." in n or ".o_proj." in n) \
            else 3e-4
        delta = p.detach() - before[n]
        nz = grads[n].abs() > 1e-6
        if optimizer == "sgd":
            expected = -lr * grads[n][nz]
        else:
            # first AdamW step (bias-corrected m = g, v = g^2): -lr g / (|g| + eps), about -lr sign(g)
            expected = -lr * grads[n][nz] / (grads[n][nz].abs() + 1e-8)
        torch.testing.assert_close(delta[nz], expected, rtol=1e-4, atol=1e-12)


def test_separate_kdim_mha_and_errors():
    m = nn.MultiheadAttention(E, H, kdim=4, vdim=6, batch_first=True)
    qk, ov = qk_ov_parameters(m)
    assert m.q_proj_weight in [*qk] and m.v_proj_weight in [*ov]
    assert len(qk) == 4 and len(ov) == 4  # q, k weights + bias slices; v weight + bias slice + out_proj
    with pytest.raises(ValueError, match="no attention module"):
        param_groups(nn.Linear(3, 3), LR, RATIO)
    with pytest.raises(TypeError):
        split_mha_in_proj(nn.Linear(3, 3))
    model = nn.Sequential(_mha(), nn.Linear(E, 2))
    param_groups(model, LR, RATIO)
    merge_all(model)
    assert not is_split(model[0])


def test_tied_projections_are_grouped_once():
    model = TinyHFModel()
    model.layers[1].q_proj = model.layers[0].q_proj  # weight sharing across layers
    groups = param_groups(model, LR, RATIO)
    ids = [id(p) for g in groups for p in g["params"]]
    assert len(ids) == len(set(ids)) == len(list(model.parameters()))
