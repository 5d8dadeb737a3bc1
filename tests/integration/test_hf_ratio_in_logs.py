"""Issue 46: the ratio reads right in everyone's logs and travels with the model.

* A plain ``transformers.Trainer`` on ``AdamW(qkov.param_groups(...))``: the TensorBoard event file shows the OV
  rate as ``learning_rate`` (the OV group is first), and, with ``report_scalars(trainer)``, ``learning_rate_qk``,
  ``update/*`` (effective ratio 10 within 1% on AdamW's first step) and ``sharpness/*``; without it they reach
  ``log_history`` only, with one warning.
* ``QKOVTrainingArguments`` through ``HfArgumentParser``: ``--qk_ov_ratio`` sets the ratio; the saved
  ``config.json`` and the model card record it; bad values are refused in one line.
* Lightning's ``LearningRateMonitor`` labels the groups by their ``name``.
"""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")
pytest.importorskip("accelerate", reason="accelerate not installed (pip install qkov[hf])")

import qkov  # noqa: E402
from theory.errors import InputError  # noqa: E402

V, L, LR = 40, 8, 3e-3
IDS = torch.randint(0, V, (8, L), generator=torch.Generator().manual_seed(2))
DATA = [{"input_ids": i, "labels": i} for i in IDS]


def _gpt2():
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=32, n_layer=2, n_head=2, vocab_size=V, n_positions=16, bos_token_id=0, eos_token_id=0))


def _args(out, **kw):
    base = dict(output_dir=str(out), max_steps=2, per_device_train_batch_size=4, learning_rate=LR,
                lr_scheduler_type="constant", weight_decay=0.0, use_cpu=True, save_strategy="no", logging_steps=1,
                disable_tqdm=True, report_to=["tensorboard"])
    return transformers.TrainingArguments(**{**base, **kw})


def _scalars(out):
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                             reason="tensorboard not installed")
    events = sorted(out.rglob("events.out.tfevents.*"))
    assert events
    acc = ea.EventAccumulator(str(events[0].parent))
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


def test_plain_trainer_logs_the_ov_rate_as_learning_rate_and_qkov_scalars_reach_tensorboard(tmp_path):
    from validation.hf_trainer import SharpnessCallback, report_scalars
    from validation.update_monitor import UpdateMonitorCallback

    model = _gpt2()
    opt = torch.optim.AdamW(qkov.param_groups(model, LR, 10.0), weight_decay=0.0)
    callbacks = [UpdateMonitorCallback(model), SharpnessCallback({"input_ids": IDS[:2]}, every=1)]
    trainer = transformers.Trainer(model=model, args=_args(tmp_path), train_dataset=DATA, optimizers=(opt, None),
                                   callbacks=callbacks)
    report_scalars(trainer)
    trainer.train()
    tb = _scalars(tmp_path)
    assert tb["train/learning_rate"] == pytest.approx({1: LR, 2: LR}, rel=1e-6)  # float32 events
    assert tb["train/learning_rate_qk"] == pytest.approx({1: 10 * LR, 2: 10 * LR}, rel=1e-6)
    assert tb["train/update/effective_ratio"][1] == pytest.approx(10.0, rel=0.01)
    assert sorted(tb["train/sharpness/normalized_entropy"]) == [1, 2]


def test_without_report_scalars_they_reach_log_history_with_one_warning(tmp_path):
    from validation.update_monitor import UpdateMonitorCallback

    model = _gpt2()
    opt = torch.optim.AdamW(qkov.param_groups(model, LR, 10.0), weight_decay=0.0)
    trainer = transformers.Trainer(model=model, args=_args(tmp_path), train_dataset=DATA, optimizers=(opt, None),
                                   callbacks=[UpdateMonitorCallback(model)])
    with pytest.warns(UserWarning, match=r"report_scalars\(trainer\)") as rec:
        trainer.train()
    assert sum("report_scalars" in str(w.message) for w in rec) == 1
    assert [h["step"] for h in trainer.state.log_history if "update/effective_ratio" in h] == [1, 2]
    tb = _scalars(tmp_path)
    assert "train/update/effective_ratio" not in tb
    assert tb["train/learning_rate"] == pytest.approx({1: LR, 2: LR}, rel=1e-6)  # the OV rate, still


def test_training_arguments_carry_the_ratio_into_the_saved_config_and_card(tmp_path):
    from validation.hf_trainer import QKOVTrainer, QKOVTrainingArguments

    parser = transformers.HfArgumentParser(QKOVTrainingArguments)
    argv = ["--output_dir", str(tmp_path), "--qk_ov_ratio", "10", "--learning_rate", str(LR), "--max_steps", "2",
            "--per_device_train_batch_size", "4", "--use_cpu", "--report_to", "none", "--save_strategy", "no",
            "--logging_steps", "1", "--lr_scheduler_type", "constant"]
    (args,) = parser.parse_args_into_dataclasses(argv)
    assert args.qk_ov_ratio == 10.0 and args.to_dict()["qk_ov_ratio"] == 10.0
    trainer = QKOVTrainer(model=_gpt2(), args=args, train_dataset=DATA)
    trainer.train()
    log = [h for h in trainer.state.log_history if "learning_rate_qk" in h][0]
    assert (log["learning_rate"], log["learning_rate_qk"]) == pytest.approx((LR, 10 * LR))
    trainer.save_model(str(tmp_path / "final"))
    rec = json.loads((tmp_path / "final" / "config.json").read_text())["qkov"]
    assert (rec["qk_ov_ratio"], rec["lr_ov"], rec["lr_qk"]) == pytest.approx((10.0, LR, 10 * LR))
    trainer.create_model_card()
    card = (tmp_path / "README.md").read_text()
    assert f"- learning_rate: {LR}\n- qk_ov_ratio: 10 " in card and f"- learning_rate_qk: {10 * LR:g}" in card
    with pytest.raises(InputError, match=r"^qk_ov_ratio: -1\.0: must be a finite number > 0$"):
        parser.parse_args_into_dataclasses(argv[:3] + ["-1"] + argv[4:])
    with pytest.raises(InputError, match=r"args\.qk_ov_ratio is 10\.0; give one ratio"):
        QKOVTrainer(model=_gpt2(), args=args, train_dataset=DATA, qk_ov_ratio=3.0)
    with pytest.raises(InputError, match=r"^qk_ov_ratio: None: give"):
        QKOVTrainer(model=_gpt2(), args=_args(tmp_path, report_to=[]), train_dataset=DATA)


def test_lightning_learning_rate_monitor_names_each_group(tmp_path):
    pl = pytest.importorskip("lightning.pytorch", reason="lightning not installed")
    from lightning.pytorch.callbacks import LearningRateMonitor
    from lightning.pytorch.loggers import CSVLogger

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = _gpt2()

        def training_step(self, batch, _i):
            return self.model(input_ids=batch, labels=batch).loss

        def configure_optimizers(self):
            return torch.optim.AdamW(qkov.param_groups(self.model, LR, 10.0))

    monitor = LearningRateMonitor(logging_interval="step")
    trainer = pl.Trainer(max_steps=1, accelerator="cpu", logger=CSVLogger(str(tmp_path)), callbacks=[monitor],
                         log_every_n_steps=1,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Module(), torch.utils.data.DataLoader(IDS, batch_size=4))
    assert {k: v[0] for k, v in monitor.lrs.items()} == pytest.approx(
        {"lr-AdamW/ov": LR, "lr-AdamW/qk": 10 * LR, "lr-AdamW/other": LR})
