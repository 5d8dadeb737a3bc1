"""QKOVTrainer: a 3-step Trainer run checkpoints in the model's own format, resumes (model and
optimizer state) to the same weights as an uninterrupted run, keeps Q/V = K/V = ratio under
AdamW, keeps Trainer's weight-decay exclusions and logs each circuit's rate."""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")
pytest.importorskip("accelerate", reason="accelerate not installed (pip install qkov[hf])")

from safetensors.torch import load_file  # noqa: E402

from validation.hf_trainer import QKOVTrainer  # noqa: E402

E, V, L, LR, RATIO, WD = 32, 50, 8, 1e-3, 10.0, 0.1


def _model():
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=E, n_layer=2, n_head=2, vocab_size=V, n_positions=16, bos_token_id=0, eos_token_id=0))


def _data():
    g = torch.Generator().manual_seed(1)
    return [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, V, (12, L), generator=g)]


def _trainer(out, model, **kw):
    args = transformers.TrainingArguments(
        output_dir=str(out), max_steps=3, per_device_train_batch_size=2, learning_rate=LR, weight_decay=WD,
        lr_scheduler_type="constant", save_strategy="steps", save_steps=1, logging_steps=1, report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, **kw)
    return QKOVTrainer(model=model, args=args, train_dataset=_data(), qk_ov_ratio=RATIO)


def _median_step(after, before, cols):
    w1, w0 = after["transformer.h.0.attn.c_attn.weight"], before["transformer.h.0.attn.c_attn.weight"]
    return (w1 - w0)[:, cols].abs().median().item()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("trainer")
    init = {k: v.clone() for k, v in _model().state_dict().items()}
    full = _trainer(base / "full", _model())
    full.train()
    resumed = _trainer(base / "full", _model())  # a fresh model, resumed from step 2 of the same run dir
    resumed.train(resume_from_checkpoint=str(base / "full" / "checkpoint-2"))
    return base, init, full, resumed


def test_checkpoints_hold_the_standard_keys(runs):
    base, init, *_ = runs
    saved = load_file(str(base / "full" / "checkpoint-1" / "model.safetensors"))
    assert not [k for k in saved if "parametrizations" in k]
    assert set(saved) <= set(init) and "transformer.h.0.attn.c_attn.weight" in saved
    assert (base / "full" / "checkpoint-1" / "optimizer.pt").exists()


def test_first_adamw_step_has_q_v_and_k_v_at_the_ratio(runs):
    base, init, *_ = runs
    after = load_file(str(base / "full" / "checkpoint-1" / "model.safetensors"))
    q, k, v = (_median_step(after, init, slice(i * E, (i + 1) * E)) for i in range(3))
    # AdamW's first step is lr * g/(|g| + eps) + lr * wd * w: |step| = rate within wd*|w| ~ 0.2%
    assert q / v == pytest.approx(RATIO, rel=0.01) and k / v == pytest.approx(RATIO, rel=0.01)
    assert v == pytest.approx(LR, rel=0.01)


def test_resume_restores_model_and_optimizer_state(runs):
    _, _, full, resumed = runs
    a, b = full.model.state_dict(), resumed.model.state_dict()
    assert set(a) == set(b)
    for key in a:  # same data order, same Adam moments: the same third step (CPU, float32 rounding)
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-7, msg=lambda s, key=key: f"{key}: {s}")
    rates = {g["circuit"]: g["lr"] for g in resumed.optimizer.param_groups}
    assert rates["qk"] / rates["ov"] == pytest.approx(RATIO, rel=1e-12)
    moved = max((a[k] - v).abs().max().item() for k, v in _model().state_dict().items())
    assert moved > 1e-3  # training happened


def test_weight_decay_exclusions_and_logged_rates(runs):
    base, _, full, _ = runs
    names = {id(p): n for n, p in full.model.named_parameters()}
    for g in full.optimizer.param_groups:
        for p in g["params"]:
            n = names[id(p)]
            excluded = "bias" in n or ".ln_" in n or n.startswith("transformer.ln_f")
            assert g["weight_decay"] == (0.0 if excluded else WD), n
    assert full.optimizer.param_groups[0]["circuit"] == "ov"
    logs = [h for h in full.state.log_history if "loss" in h]
    assert len(logs) == 3
    for h in logs:
        assert h["learning_rate"] == pytest.approx(LR) and h["learning_rate_ov"] == pytest.approx(LR)
        assert h["learning_rate_qk"] == pytest.approx(RATIO * LR)
    state = json.loads((base / "full" / "checkpoint-3" / "trainer_state.json").read_text())
    assert any("learning_rate_qk" in h for h in state["log_history"])
