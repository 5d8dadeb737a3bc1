"""The per-circuit update monitor in a plain loop, a Trainer and Lightning (twice: re-entrant fit).

Known answer: AdamW's first step moves every entry by ``lr * g / (|g| + eps)`` = ``lr`` (gradients
>> eps = 1e-8), so the RMS update per entry is the group's rate and the effective ratio is the
learning-rate ratio; 1% tolerance for entries whose gradient is near eps or zero.
"""

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")

from validation.update_monitor import UpdateMonitor  # noqa: E402
from validation.user_models import param_groups  # noqa: E402

pytestmark = pytest.mark.integration
V = 40
IDS = torch.randint(0, V, (4, 8), generator=torch.Generator().manual_seed(2))


def _gpt2():
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=16, n_layer=2, n_head=2, vocab_size=V, n_positions=16, bos_token_id=0, eos_token_id=0))


def test_plain_loop_measures_the_rate_ratio_under_adamw_and_not_under_sgd(tmp_path):
    model = _gpt2()
    opt = torch.optim.AdamW(param_groups(model, 1e-3, 10.0), weight_decay=0.0)
    mon = UpdateMonitor(model)
    for step in range(1, 4):
        opt.zero_grad()
        model(input_ids=IDS, labels=IDS).loss.backward()
        with mon.step(step):
            opt.step()
    a = mon.arrays()
    assert a["step"].tolist() == [1, 2, 3] and a["ratio"].shape == (3, 2)
    np.testing.assert_allclose(a["ratio"][0], 10.0, rtol=0.01)  # step 1: exactly the lr ratio
    np.testing.assert_allclose(a["ov_rms"][0], 1e-3, rtol=0.01)
    assert (a["qk_rel"] > 0).all() and (a["ov_rel"] > 0).all()
    fig = mon.plot(tmp_path / "updates.png")
    assert (tmp_path / "updates.png").stat().st_size > 0 and len(fig.axes) == 2

    sgd_model = _gpt2()  # SGD: the update is lr * g, so the effective ratio follows the gradients
    sgd = torch.optim.SGD(param_groups(sgd_model, 1e-2, 10.0))
    mon2 = UpdateMonitor(sgd_model)
    sgd_model(input_ids=IDS, labels=IDS).loss.backward()
    with mon2.step(1):
        sgd.step()
    assert abs(mon2.arrays()["ratio"][0, 0] - 10.0) > 0.1


def test_monitor_refuses_an_unsplit_fused_model():
    from theory.errors import InputError

    with pytest.raises(InputError, match="not split yet"):
        UpdateMonitor(_gpt2())


def test_trainer_callback_logs_the_effective_ratio(tmp_path):
    pytest.importorskip("accelerate", reason="accelerate not installed (pip install qkov[hf])")
    from validation.hf_trainer import QKOVTrainer
    from validation.update_monitor import UpdateMonitorCallback

    model = _gpt2()
    param_groups(model, 1e-3, 10.0)  # split before building the monitor (QKOVTrainer re-uses it)
    cb = UpdateMonitorCallback(model)
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4,
                                          learning_rate=1e-3, lr_scheduler_type="constant", weight_decay=0.0,
                                          report_to=[], use_cpu=True, save_strategy="no", logging_steps=1,
                                          disable_tqdm=True)
    trainer = QKOVTrainer(model=model, args=args, train_dataset=[{"input_ids": i, "labels": i} for i in IDS],
                          qk_ov_ratio=10.0, callbacks=[cb])
    trainer.train()
    assert [r["step"] for r in cb.monitor.history] == [1, 2]
    np.testing.assert_allclose(cb.monitor.arrays()["ratio"][0], 10.0, rtol=0.01)
    logged = [h for h in trainer.state.log_history if "update/effective_ratio" in h]
    assert [h["step"] for h in logged] == [1, 2]
    assert logged[0]["update/effective_ratio"] == pytest.approx(10.0, rel=0.01)


def test_lightning_callback_and_a_second_fit(tmp_path):
    pl = pytest.importorskip("lightning.pytorch", reason="lightning not installed")
    from validation.update_monitor import lightning_callback

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = _gpt2()

        def training_step(self, batch, _i):
            return self.model(input_ids=batch, labels=batch).loss

        def configure_optimizers(self):  # called on every fit: the split model's groups again
            return torch.optim.AdamW(param_groups(self.model, 1e-3, 10.0), weight_decay=0.0)

    module = Module()
    param_groups(module.model, 1e-3, 10.0)
    ratios = []
    for fit in range(2):
        cb = lightning_callback(module.model)
        trainer = pl.Trainer(max_steps=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False, callbacks=[cb],
                             default_root_dir=str(tmp_path / str(fit)))
        trainer.fit(module, torch.utils.data.DataLoader(IDS, batch_size=4))
        assert [r["step"] for r in cb.monitor.history] == [1, 2]
        ratios.append(cb.monitor.arrays()["ratio"][0])
    np.testing.assert_allclose(ratios[0], 10.0, rtol=0.01)  # a fresh AdamW per fit: step 1 again
    np.testing.assert_allclose(ratios[1], 10.0, rtol=0.01)
