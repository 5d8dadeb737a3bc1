"""Real ``transformers`` architectures (tiny, random, built from configs; nothing downloaded):
a split model saves and reloads in its own format, export leaves the live model intact, and
fused layouts that names alone get wrong (GPT-BigCode both modes, CodeGen's q,v,k, ALBERT's
W_O, Falcon, BLOOM) get Q/V = K/V = ratio, checked against hand-written row roles."""

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")

from validation.attention_layouts import (  # noqa: E402
    AttentionLayout,
    UnknownAttentionLayout,
    register_attention_layout,
)
from validation.user_models import merge_all, merged_copy, param_groups  # noqa: E402

T = transformers


@pytest.fixture(autouse=True)
def _quiet_transformers():
    """transformers' own warnings off during each test here, its previous verbosity restored after."""
    before = T.logging.get_verbosity()
    T.logging.set_verbosity_error()
    yield
    T.logging.set_verbosity(before)


E, NH, V, LR, RATIO = 32, 2, 50, 1e-3, 10.0
D = E // NH
IDS = torch.randint(0, V, (2, 8), generator=torch.Generator().manual_seed(0))


def _build(cls, cfg):
    torch.manual_seed(0)
    return cls(cfg).eval()


SAVE = {
    "gpt2": lambda: _build(T.GPT2LMHeadModel, T.GPT2Config(n_embd=E, n_layer=2, n_head=NH, vocab_size=V,
                                                         n_positions=16, bos_token_id=0, eos_token_id=0)),
    "neox": lambda: _build(T.GPTNeoXForCausalLM, T.GPTNeoXConfig(hidden_size=E, num_hidden_layers=2,
                                                               num_attention_heads=NH, intermediate_size=64,
                                                               vocab_size=V, bos_token_id=0, eos_token_id=0)),
    "llama": lambda: _build(T.LlamaForCausalLM, T.LlamaConfig(hidden_size=E, num_hidden_layers=2,
                                                            num_attention_heads=NH, num_key_value_heads=1,
                                                            intermediate_size=64, vocab_size=V,
                                                            bos_token_id=0, eos_token_id=0)),
}


@pytest.mark.parametrize("arch", list(SAVE))
def test_save_pretrained_from_pretrained_round_trip_of_a_split_model(arch, tmp_path):
    model = SAVE[arch]()
    groups = param_groups(model, LR, RATIO)
    opt = torch.optim.AdamW(groups)
    model.train()
    model(input_ids=IDS, labels=IDS).loss.backward()
    opt.step()  # move the weights off their init, so a re-initialised tensor would show
    model.eval()
    with torch.no_grad():
        want = model(input_ids=IDS).logits
    model.save_pretrained(tmp_path)
    fresh, info = type(model).from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    with torch.no_grad():
        torch.testing.assert_close(fresh.eval()(input_ids=IDS).logits, want, rtol=0, atol=0)
    # into a split model too (how a Trainer resumes), from the same standard keys
    again = SAVE[arch]()
    param_groups(again, LR, RATIO)
    res = again.load_state_dict(model.state_dict())
    assert not res.missing_keys and not res.unexpected_keys
    with torch.no_grad():
        torch.testing.assert_close(again(input_ids=IDS).logits, want, rtol=0, atol=0)


def test_export_never_breaks_the_live_model():
    model = SAVE["gpt2"]()
    param_groups(model, LR, RATIO)
    with torch.no_grad():
        want = model(input_ids=IDS).logits
    for export in (merged_copy(model), merge_all(copy.deepcopy(model))):
        with torch.no_grad():
            torch.testing.assert_close(export(input_ids=IDS).logits, want, rtol=0, atol=0)
            torch.testing.assert_close(model(input_ids=IDS).logits, want, rtol=0, atol=0)
        assert not [n for n, _ in export.named_parameters() if "parametrizations" in n]
    assert [n for n, _ in model.named_parameters() if "parametrizations" in n]  # still split, optimizer intact
    enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 2)
    param_groups(enc, LR, RATIO)
    x = torch.randn(2, 5, 16)
    y = enc(x)
    merged_copy(enc)
    torch.testing.assert_close(enc(x), y, rtol=0, atol=0)


def _qkv_roles(order, groups):
    """Row roles of a fused weight made of ``groups`` repetitions of equal blocks in ``order``."""
    return lambda n: [r for _ in range(groups) for r in order for _ in range(n // (groups * len(order)))]


LAYOUTS = {
    # name: (builder, fused child of the first attention, role of each row (by hand, from the model code))
    "bigcode_mq": (lambda: _build(T.GPTBigCodeForCausalLM, T.GPTBigCodeConfig(
        n_embd=E, n_layer=2, n_head=NH, vocab_size=V, n_positions=16, multi_query=True)),
        "transformer.h.0.attn.c_attn", lambda n: ["q"] * E + ["k"] * D + ["v"] * D),
    "bigcode_mha": (lambda: _build(T.GPTBigCodeForCausalLM, T.GPTBigCodeConfig(
        n_embd=E, n_layer=2, n_head=NH, vocab_size=V, n_positions=16, multi_query=False)),
        "transformer.h.0.attn.c_attn", _qkv_roles("qkv", NH)),  # view(..., H, 3d).split(d)
    "codegen": (lambda: _build(T.CodeGenForCausalLM, T.CodeGenConfig(
        n_embd=E, n_layer=2, n_head=4, vocab_size=V, n_positions=16, rotary_dim=4)),
        "transformer.h.0.attn.qkv_proj", _qkv_roles("qvk", 4)),  # mp_num = 4 blocks of [q; v; k]
    "falcon": (lambda: _build(T.FalconForCausalLM, T.FalconConfig(
        hidden_size=E, num_hidden_layers=2, num_attention_heads=NH, vocab_size=V)),  # multi_query=True
        "transformer.h.0.self_attention.query_key_value", lambda n: ["q"] * E + ["k"] * D + ["v"] * D),
    "bloom": (lambda: _build(T.BloomForCausalLM, T.BloomConfig(hidden_size=E, n_layer=2, n_head=NH, vocab_size=V)),
              "transformer.h.0.self_attention.query_key_value", _qkv_roles("qkv", NH)),
}


def _adamw_rates(model, groups, tensors):
    """One AdamW step; median |update| / lr over each ``(name, rows mask)`` of the fused weights."""
    before = {n: p.detach().clone() for n, p in merged_copy(model).named_parameters()}
    # eps far below |g| (ALBERT's tiny random q/k gradients are ~1e-7, where the default eps = 1e-8
    # would damp the step by ~10%): then each entry's first step is its rate, whatever the scale of g
    opt = torch.optim.AdamW(groups, weight_decay=0.0, eps=1e-14)
    model(input_ids=IDS, labels=IDS).loss.backward()
    opt.step()
    after = dict(merged_copy(model).named_parameters())
    return {role: ((after[n] - before[n])[rows].abs().median() / LR).item() for role, (n, rows) in tensors.items()}


@pytest.mark.parametrize("arch", list(LAYOUTS))
def test_fused_layouts_get_q_v_and_k_v_at_the_ratio(arch):
    build, child, roles = LAYOUTS[arch]
    model = build()
    w = model.get_submodule(child).weight
    labels = roles(w.shape[0])
    assert len(labels) == w.shape[0]
    tensors = {r: (f"{child}.weight", torch.tensor([lab == r for lab in labels])) for r in "qkv"}
    rates = _adamw_rates(model, param_groups(model, LR, RATIO), tensors)
    # AdamW's first step is lr * g / (|g| + eps) = +-lr: the median entry moves by its rate
    assert rates["q"] / rates["v"] == pytest.approx(RATIO, rel=0.01), rates
    assert rates["k"] / rates["v"] == pytest.approx(RATIO, rel=0.01), rates


def test_albert_output_projection_is_in_the_ov_circuit():
    model = _build(T.AlbertForMaskedLM, T.AlbertConfig(hidden_size=E, num_hidden_layers=2, num_attention_heads=NH,
                                                       intermediate_size=64, embedding_size=16, vocab_size=V))
    att = "albert.encoder.albert_layer_groups.0.albert_layers.0.attention"
    tensors = {r: (f"{att}.{c}.weight", slice(None)) for r, c in
               (("q", "query"), ("k", "key"), ("v", "value"), ("o", "dense"))}
    # lr_other != lr: a W_O left in "other" (as before ALBERT's own dense was recognised) would show
    rates = _adamw_rates(model, param_groups(model, LR, RATIO, lr_other=LR / 3), tensors)
    for r in "qk":
        assert rates[r] / rates["v"] == pytest.approx(RATIO, rel=0.01), rates
    assert rates["o"] / rates["v"] == pytest.approx(1.0, rel=0.01), rates


def test_a_layout_contradicted_by_the_forward_is_refused_in_one_line():
    build, *_ = LAYOUTS["bigcode_mha"]
    cls = type(build().transformer.h[0].attn)
    register_attention_layout(cls, AttentionLayout(qkv="c_attn", o="c_proj"))  # contiguous: wrong for multi_query=False
    try:
        with pytest.raises(UnknownAttentionLayout) as err:
            param_groups(build(), LR, RATIO)
    finally:
        register_attention_layout(cls, None)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"transformer.h.0.attn ({cls.__name__}): c_attn.weight: the forward")
