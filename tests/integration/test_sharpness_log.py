"""Sharpness logging during training: a plain loop and a Trainer record per-layer, per-head
measures that match a direct computation, and the relevant-token metrics when labels exist."""

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")

from validation.metrics.sharpness import sharpness_summary  # noqa: E402
from validation.sharpness_log import SharpnessLogger  # noqa: E402
from validation.user_attention import read_attention  # noqa: E402
from validation.user_models import param_groups  # noqa: E402

V, L = 40, 8


def _gpt2():
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=32, n_layer=2, n_head=2, vocab_size=V, n_positions=16, bos_token_id=0, eos_token_id=0))


IDS = torch.randint(0, V, (4, L), generator=torch.Generator().manual_seed(2))


def test_plain_loop_records_match_a_direct_computation_and_restore_train_mode():
    model = _gpt2()
    mask = torch.ones_like(IDS)
    mask[0, -2:] = 0
    relevant = torch.zeros(4, L, dtype=torch.bool)
    relevant[:, :2] = True
    log = SharpnessLogger({"input_ids": IDS, "attention_mask": mask}, every=2, relevant=relevant, query=5)
    opt = torch.optim.AdamW(param_groups(model, 1e-2, 10.0))
    for step in range(1, 5):
        opt.zero_grad()
        model(input_ids=IDS, labels=IDS).loss.backward()
        opt.step()
        log(model, step)
    assert model.training
    arr = log.arrays()
    assert arr["step"].tolist() == [2, 4] and arr["normalized_entropy"].shape == (2, 2, 2)
    attn = read_attention(model.eval(), {"input_ids": IDS, "attention_mask": mask})
    want = sharpness_summary(attn, mask.bool(), queries=mask.bool())  # padded query rows excluded too
    padded_in = sharpness_summary(attn, mask.bool())
    assert not np.allclose(padded_in["entropy"], want["entropy"])  # the exclusion is visible here
    for k in ("entropy", "normalized_entropy", "max_weight", "mass_span"):
        np.testing.assert_allclose(arr[k][-1], want[k], rtol=1e-6)
    assert arr["relevant_mass"].shape == (2, 2, 2) and arr["attention_confidence"].shape == (2, 2, 2)
    assert not np.allclose(arr["max_weight"][0], arr["max_weight"][1])  # training moved the attention
    assert set(SharpnessLogger.scalars(log.history[0])) >= {"sharpness/normalized_entropy", "sharpness/relevant_mass"}


def test_trainer_callback_logs_sharpness(tmp_path):
    pytest.importorskip("accelerate", reason="accelerate not installed (pip install qkov[hf])")
    from validation.hf_trainer import QKOVTrainer, SharpnessCallback

    cb = SharpnessCallback({"input_ids": IDS[:2]}, every=2)
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=4, per_device_train_batch_size=2,
                                          learning_rate=1e-3, report_to=[], use_cpu=True, save_strategy="no",
                                          logging_steps=1, disable_tqdm=True)
    data = [{"input_ids": i, "labels": i} for i in IDS]
    trainer = QKOVTrainer(model=_gpt2(), args=args, train_dataset=data, qk_ov_ratio=10.0, callbacks=[cb])
    trainer.train()
    assert [r["step"] for r in cb.logger.history] == [0, 2, 4]
    logged = [h for h in trainer.state.log_history if "sharpness/entropy" in h]
    assert [h["step"] for h in logged] == [0, 2, 4]
    assert all(0 < h["sharpness/normalized_entropy"] <= 1 for h in logged)


def test_sharpness_and_circuit_rates_reach_tensorboard(tmp_path):
    """report_to="tensorboard": sharpness/* and learning_rate_qk/ov read back from the event file.

    The rates are those of the step they applied to (before the scheduler moved them): under a
    linear schedule Trainer's own ``learning_rate`` equals ``learning_rate_ov`` at every logged step.
    """
    pytest.importorskip("accelerate", reason="accelerate not installed (pip install qkov[hf])")
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                             reason="tensorboard not installed")
    from validation.hf_trainer import QKOVTrainer, SharpnessCallback

    cb = SharpnessCallback({"input_ids": IDS[:2]}, every=2)
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=4, per_device_train_batch_size=2,
                                          learning_rate=1e-3, lr_scheduler_type="linear", report_to=["tensorboard"],
                                          use_cpu=True, save_strategy="no",
                                          logging_steps=1, disable_tqdm=True)
    data = [{"input_ids": i, "labels": i} for i in IDS]
    trainer = QKOVTrainer(model=_gpt2(), args=args, train_dataset=data, qk_ov_ratio=10.0, callbacks=[cb])
    trainer.train()
    events = sorted(tmp_path.rglob("events.out.tfevents.*"))  # under output_dir (logging_dir on 4.x)
    assert events
    acc = ea.EventAccumulator(str(events[0].parent))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"train/sharpness/entropy", "train/sharpness/normalized_entropy", "train/learning_rate_qk",
            "train/learning_rate_ov", "train/learning_rate"} <= tags, tags
    assert [e.step for e in acc.Scalars("train/sharpness/entropy")] == [2, 4]
    qk = {e.step: e.value for e in acc.Scalars("train/learning_rate_qk")}
    ov = {e.step: e.value for e in acc.Scalars("train/learning_rate_ov")}
    lr = {e.step: e.value for e in acc.Scalars("train/learning_rate")}
    assert sorted(qk) == [1, 2, 3, 4]
    for step in qk:  # float32 event values: rtol 1e-6
        assert qk[step] == pytest.approx(10 * ov[step], rel=1e-6)
        assert ov[step] == pytest.approx(lr[step], rel=1e-6)
    assert ov[1] == pytest.approx(1e-3, rel=1e-6)  # step 1 ran at the initial rate
