"""Real ``transformers`` architectures (tiny, random weights, built from configs; no download):
the QK/OV groups hit the right tensors (fused rows included), one SGD step and one AdamW step
move every W_Q/W_K entry at ratio x the rate of W_V/W_O, and attention can be read out."""

import copy

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")

from validation.user_attention import attention_metrics, read_attention  # noqa: E402
from validation.user_models import describe_param_groups, merge_all, param_groups  # noqa: E402

E, NH, V, L, B = 16, 2, 40, 6, 3
LR, RATIO = 1e-3, 10.0
T = transformers


def _configs():
    common = dict(vocab_size=V)
    return {
        "gpt2": (T.GPT2LMHeadModel, T.GPT2Config(n_embd=E, n_layer=2, n_head=NH, n_positions=16, resid_pdrop=0,
                                                  embd_pdrop=0, attn_pdrop=0, **common)),
        "bert": (T.BertForSequenceClassification,
                 T.BertConfig(hidden_size=E, num_hidden_layers=2, num_attention_heads=NH, intermediate_size=32,
                              max_position_embeddings=16, hidden_dropout_prob=0, attention_probs_dropout_prob=0,
                              **common)),
        "llama": (T.LlamaForCausalLM, T.LlamaConfig(hidden_size=E, num_hidden_layers=2, num_attention_heads=NH,
                                                    num_key_value_heads=1, intermediate_size=32,
                                                    max_position_embeddings=16, attention_bias=True, **common)),
        "neox": (T.GPTNeoXForCausalLM, T.GPTNeoXConfig(hidden_size=E, num_hidden_layers=2, num_attention_heads=NH,
                                                       intermediate_size=32, max_position_embeddings=16,
                                                       hidden_dropout=0, attention_dropout=0, **common)),
        "t5": (T.T5ForConditionalGeneration, T.T5Config(d_model=E, d_kv=8, d_ff=32, num_layers=1,
                                                        num_decoder_layers=1, num_heads=NH, dropout_rate=0, decoder_start_token_id=0,
                                                        **common)),
        "distilbert": (T.DistilBertForSequenceClassification,
                       T.DistilBertConfig(dim=E, n_layers=2, n_heads=NH, hidden_dim=32, max_position_embeddings=16,
                                          dropout=0, attention_dropout=0, seq_classif_dropout=0, **common)),
    }


ARCHS = list(_configs())


def _role_mask(arch, name, p):
    """Hand-written expectation: +1 where an entry is W_Q/W_K (or bias), -1 W_V/W_O, 0 other."""
    m = torch.zeros_like(p)
    def whole(qk_keys, ov_keys):
        if any(k in name for k in qk_keys):
            m.fill_(1)
        elif any(k in name for k in ov_keys):
            m.fill_(-1)
    if arch == "gpt2":
        if ".attn.c_attn." in name:  # Conv1D (in, 3E) / bias (3E,): last axis q | k | v
            m[..., :2 * E] = 1
            m[..., 2 * E:] = -1
        whole((), (".attn.c_proj.",))
    elif arch == "neox":
        if ".attention.query_key_value." in name:  # rows viewed (H, 3, head): q, k, v per head
            mv = m.view(NH, 3, E // NH, *p.shape[1:])
            mv[:, :2] = 1
            mv[:, 2] = -1
        whole((), (".attention.dense.",))
    elif arch == "bert":
        whole((".self.query.", ".self.key."), (".self.value.", ".attention.output.dense."))
    elif arch == "llama":
        whole((".q_proj.", ".k_proj."), (".v_proj.", ".o_proj."))
    elif arch == "t5":
        whole((".q.", ".k."), (".v.", ".o."))
    elif arch == "distilbert":
        whole((".q_lin.", ".k_lin."), (".v_lin.", ".out_lin."))
    return m


def _model(arch, dtype=torch.float64):
    cls, cfg = _configs()[arch]
    torch.manual_seed(0)
    model = cls(cfg).to(dtype)
    model.train()
    return model


def _batch(arch):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, V, (B, L), generator=g)
    mask = torch.ones(B, L, dtype=torch.long)
    mask[0, -2:] = 0  # one padded row
    if arch == "t5":
        return {"input_ids": ids, "attention_mask": mask, "labels": torch.randint(1, V, (B, 4), generator=g)}
    if arch in ("bert", "distilbert"):
        return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([0, 1, 1])}
    return {"input_ids": ids, "attention_mask": mask, "labels": ids}


def _grads(model, batch):
    model.zero_grad()
    model(**batch).loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("arch", ARCHS)
def test_groups_cover_exactly_the_hand_listed_qk_and_ov_tensors(arch):
    model = _model(arch)
    ref = {n: p.detach().clone() for n, p in model.named_parameters()}
    groups = param_groups(model, LR, RATIO)
    by = {g["circuit"]: g for g in groups}
    assert by["qk"]["lr"] == pytest.approx(RATIO * LR) and by["ov"]["lr"] == LR
    # mark each group's parameters, fold the split back, and compare with the hand-written roles
    with torch.no_grad():
        for g, val in ((by["qk"], 1.0), (by["ov"], -1.0), (by["other"], 0.0)):
            for p in g["params"]:
                p.fill_(val)
    merge_all(model)
    got = dict(model.named_parameters())
    assert set(got) == set(ref)
    for n, p in got.items():
        torch.testing.assert_close(p.detach(), _role_mask(arch, n, ref[n]), rtol=0, atol=0, msg=lambda s, n=n: f"{n}: {s}")
    assert (torch.cat([_role_mask(arch, n, r).flatten() for n, r in ref.items()]) == 1).any()


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
def test_one_step_moves_qk_at_ratio_times_the_ov_rate(arch, opt_name):
    model = _model(arch)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    batch = _batch(arch)
    g0 = _grads(copy.deepcopy(model), batch)  # gradient of the unsplit model
    groups = param_groups(model, LR, RATIO, lr_other=LR)
    opt = torch.optim.SGD(groups) if opt_name == "sgd" else torch.optim.AdamW(groups, weight_decay=0.0)
    opt.zero_grad()
    model(**batch).loss.backward()
    opt.step()
    merge_all(model)
    n_qk = 0
    for n, p in model.named_parameters():
        if n not in g0:
            continue
        g = g0[n]
        lr = torch.full_like(g, LR)
        lr[_role_mask(arch, n, before[n]) == 1] = RATIO * LR
        # SGD: -lr g exactly. AdamW's first step (zero decay): -lr g / (|g| + eps) elementwise.
        step = -lr * g if opt_name == "sgd" else -lr * g / (g.abs() + 1e-8)
        # float64; the split model's gradient equals the unsplit one's up to summation order
        # (~1e-16 relative); Adam's g/(|g|+eps) turns that into <1e-12 wherever |g| >> 1e-8,
        # and entries with |g| <~ 1e-10 (rounding-level gradients, e.g. key biases) are skipped.
        ok = g.abs() > 1e-10 if opt_name == "adamw" else torch.ones_like(g, dtype=torch.bool)
        torch.testing.assert_close((p.detach() - before[n])[ok], step[ok], rtol=1e-9, atol=1e-15, msg=lambda s, n=n: f"{n}: {s}")
        n_qk += int(((_role_mask(arch, n, before[n]) == 1) & ok & (g != 0)).sum())
    assert n_qk > 0  # some QK entry really moved at ratio x lr


@pytest.mark.parametrize("arch", ARCHS)
def test_attention_read_out_and_metrics(arch):
    model = _model(arch, torch.float32).eval()
    batch = {k: v for k, v in _batch(arch).items() if k != "labels"}
    if arch == "t5":
        batch["decoder_input_ids"] = torch.zeros(B, 2, dtype=torch.long)
    a = read_attention(model, batch)
    n_layers = 1 if arch == "t5" else 2
    assert a.shape == (n_layers, B, NH, L, L)
    valid = batch["attention_mask"].bool()
    # rows are distributions over the valid keys (padding gets no weight under the mask)
    torch.testing.assert_close(a.sum(-1), torch.ones(a.shape[:-1]), rtol=0, atol=1e-5)
    assert float(a[:, 0, :, :, -2:].abs().max()) < 1e-6
    heads = read_attention(model, batch, layers=[n_layers - 1], heads=[1])
    torch.testing.assert_close(heads[0, :, 0], a[-1, :, 1])
    relevant = torch.zeros(B, L, dtype=torch.bool)
    relevant[:, 1:3] = True
    query = 3
    met = attention_metrics(a, relevant, query=query, valid=valid, p_true=np.full(B, 0.9))
    expect = a[:, :, :, query, 1:3].sum(-1).permute(0, 2, 1).double().numpy()
    np.testing.assert_allclose(met["mass"], expect, rtol=1e-6)
    assert met["attention_confidence"].shape == (n_layers, NH) and met["rollout_mass"].shape == (B,)
    assert met["rollout_dtap"].sum() == pytest.approx(100.0)


def test_dry_run_for_gpt2_names_fused_columns():
    text = describe_param_groups(_model("gpt2"), LR, RATIO)
    assert f"q columns [0:{E}]" in text and f"v columns [{2 * E}:{3 * E}]" in text
    assert "transformer.h.1.attn.c_attn.weight" in text
