"""Re-entrant splits on fused Hugging Face layouts, and PEFT LoRA adapters at their circuit's rate.

Tiny models from configs (nothing downloaded). The LoRA ratio is measured from the first AdamW
step: each entry of an Adam update is ``lr * g / (|g| + eps)`` = ``lr`` up to ``eps`` (1e-8 against
gradients of order 1e-3 and more), so mean |update| of an adapter is its group's rate; 1% tolerance.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")
pytest.importorskip("accelerate", reason="accelerate not installed (pip install qkov[hf])")

from validation.attention_layouts import UnknownAttentionLayout  # noqa: E402
from validation.user_models import describe_param_groups, param_groups  # noqa: E402

pytestmark = pytest.mark.integration
V = 50


def _fused(kind):
    torch.manual_seed(0)
    T = transformers
    if kind == "gpt2":
        return T.GPT2LMHeadModel(T.GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=V, n_positions=16,
                                              bos_token_id=0, eos_token_id=0))
    if kind == "neox":
        return T.GPTNeoXForCausalLM(T.GPTNeoXConfig(num_hidden_layers=2, hidden_size=16, num_attention_heads=2,
                                                    intermediate_size=32, vocab_size=V, bos_token_id=0,
                                                    eos_token_id=0))
    return T.GPTBigCodeForCausalLM(T.GPTBigCodeConfig(n_layer=2, n_embd=16, n_head=2, vocab_size=V, n_positions=16,
                                                      multi_query=kind == "bigcode-mq", bos_token_id=0,
                                                      eos_token_id=0))


def _by_circuit(groups):
    return {g["circuit"]: [id(p) for p in g["params"]] for g in groups}


@pytest.mark.parametrize("kind", ["gpt2", "neox", "bigcode", "bigcode-mq"])
def test_second_call_on_a_split_model_returns_the_same_groups(kind):
    model = _fused(kind)
    first = param_groups(model, 1e-3, 10.0)
    plan = describe_param_groups(model, 1e-3, 10.0)  # after the split: no probe of split tensors
    second = param_groups(model, 1e-3, 10.0)
    assert _by_circuit(second) == _by_circuit(first)
    assert [g["lr"] for g in second] == [g["lr"] for g in first]
    assert "(split)" in plan and "nan" not in plan.lower()
    assert plan.splitlines()[-1] == describe_param_groups(model, 1e-3, 10.0).splitlines()[-1]


def test_qkov_trainer_on_an_already_split_model_trains(tmp_path):
    from validation.hf_trainer import QKOVTrainer

    model = _fused("gpt2")
    param_groups(model, 1e-3, 10.0)
    ids = torch.randint(0, V, (4, 8), generator=torch.Generator().manual_seed(1))
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2,
                                          learning_rate=1e-3, report_to=[], use_cpu=True, save_strategy="no",
                                          disable_tqdm=True)
    trainer = QKOVTrainer(model=model, args=args, train_dataset=[{"input_ids": i, "labels": i} for i in ids],
                          qk_ov_ratio=10.0)
    trainer.train()
    lrs = {g["circuit"]: g["lr"] for g in trainer.optimizer.param_groups}
    assert lrs["qk"] == pytest.approx(10 * lrs["ov"])


def test_tied_embedding_note_in_the_plan():
    plan = describe_param_groups(_fused("gpt2"), 1e-3, 10.0, embeddings=True)
    line = next(ln for ln in plan.splitlines() if "input embedding" in ln)
    assert "tied to" in line and "lm_head.weight" in line and "transformer.wte.weight" in line
    assert line.split()[1] == "qk"


def _lora_llama(peft):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   num_key_value_heads=2, vocab_size=V, bos_token_id=0, eos_token_id=0)
    base = transformers.LlamaForCausalLM(cfg)
    # init_lora_weights=False: B random, so A has a gradient at step 1 too
    return peft.get_peft_model(base, peft.LoraConfig(r=2, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                                                     init_lora_weights=False, lora_dropout=0.0))


def test_lora_adapters_train_at_their_circuit_rate_through_qkov_trainer(tmp_path):
    peft = pytest.importorskip("peft", reason="peft not installed (pip install qkov[peft])")
    from validation.hf_trainer import QKOVTrainer

    model = _lora_llama(peft)
    adapters = {n: p for n, p in model.named_parameters() if "lora_" in n}
    assert adapters and all(p.requires_grad for p in adapters.values())
    before = {n: p.detach().clone() for n, p in adapters.items()}
    ids = torch.randint(0, V, (4, 8), generator=torch.Generator().manual_seed(1))
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=4,
                                          learning_rate=1e-3, lr_scheduler_type="constant", weight_decay=0.0,
                                          report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True)
    trainer = QKOVTrainer(model=model, args=args, train_dataset=[{"input_ids": i, "labels": i} for i in ids],
                          qk_ov_ratio=10.0)
    trainer.train()

    def step(proj):
        ds = [(adapters[n] - before[n]).abs().mean().item() for n in adapters if f".{proj}." in n]
        assert len(ds) == 4  # 2 layers x (A, B)
        return sum(ds) / len(ds)

    q, k, v, o = (step(p) for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
    assert q / v == pytest.approx(10.0, rel=0.01) and k / v == pytest.approx(10.0, rel=0.01)
    assert o / v == pytest.approx(1.0, rel=0.01)
    plan = describe_param_groups(model, 1e-3, 10.0)
    assert any("adapter lora_A.default.weight of W_Q" in ln and ln.split()[1] == "qk" for ln in plan.splitlines())


def test_lora_on_fused_c_attn_is_refused_in_one_line_naming_it():
    peft = pytest.importorskip("peft", reason="peft not installed (pip install qkov[peft])")
    model = peft.get_peft_model(_fused("gpt2"), peft.LoraConfig(r=2, target_modules=["c_attn"], fan_in_fan_out=True))
    with pytest.raises(UnknownAttentionLayout) as e:
        param_groups(model, 1e-3, 10.0)
    msg = str(e.value)
    assert "\n" not in msg and "transformer.h.0.attn.c_attn" in msg and "fused" in msg


@pytest.mark.parametrize("kv", [1, 2])
def test_falcon_new_decoder_architecture_gqa_gets_the_exact_ratio(kv):
    """Falcon's grouped query_key_value: per KV group [q x g; k; v] (transformers' own view), rows at 10 : 1."""
    torch.manual_seed(0)
    heads, hd = 4, 8
    model = transformers.FalconForCausalLM(transformers.FalconConfig(
        vocab_size=V, hidden_size=heads * hd, num_hidden_layers=1, num_attention_heads=heads, num_kv_heads=kv,
        new_decoder_architecture=True, bos_token_id=0, eos_token_id=0))
    qkv = model.transformer.h[0].self_attention.query_key_value
    before = qkv.weight.detach().clone()
    opt = torch.optim.AdamW(param_groups(model, 1e-3, 10.0), weight_decay=0.0)
    ids = torch.randint(0, V, (2, 8), generator=torch.Generator().manual_seed(1))
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    step = (qkv.weight.detach() - before).abs().mean(dim=1)  # per fused row
    g = heads // kv
    is_v = torch.tensor([(r % ((g + 2) * hd)) // hd == g + 1 for r in range(before.shape[0])])
    assert step[~is_v].mean() / step[is_v].mean() == pytest.approx(10.0, rel=0.01)
