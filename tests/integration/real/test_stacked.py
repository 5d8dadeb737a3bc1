"""Stacked training (K runs in one process with torch.func.vmap) equals K separate training runs."""

from __future__ import annotations

import pytest
import torch

from validation.real.batching import encode_classification
from validation.real.config import default_config
from validation.real.examples import ClassExample
from validation.real.models import AttentionClassifier, MultiHeadClassifier
from validation.real.stacked import check_stackable, train_stacked
from validation.real.training import classification_loss, train
from validation.real.vocab import Vocab

WORDS = "the a dog cat runs sleeps big small red old".split()


def tiny_data(n: int = 40):
    g = torch.Generator().manual_seed(3)
    exs = []
    for i in range(n):
        k = int(torch.randint(2, 9, (1,), generator=g))
        toks = tuple(WORDS[int(j)] for j in torch.randint(0, len(WORDS), (k,), generator=g))
        exs.append(ClassExample(str(i), toks, int("dog" in toks), None))
    v = Vocab.train([WORDS], min_frequency=1)
    return v, encode_classification(exs, v, 12)


def build(kind: str, vocab_size: int, seed: int):
    torch.manual_seed(seed)
    if kind == "paper":
        return MultiHeadClassifier(vocab_size, 2, d=8, heads=2, d_head=4, max_len=12, init_std=0.3)
    return AttentionClassifier(vocab_size, 2, d=8, max_len=12, init_std=0.3)


@pytest.mark.parametrize("kind, optimizer, recipe", [("paper", "adamw", "ratio-only"), ("paper", "sgd", "paper"),
                                                    ("small", "adamw", "paper")])
def test_stacked_equals_loop(kind, optimizer, recipe):
    v, data = tiny_data()
    runs = [(r, s) for r in (1.0, 10.0) for s in (0, 1)]
    model_name = "paper" if kind == "paper" else "small"
    cfgs = [default_config("sva", ratio=r, seed=s, quick=True, data_dir=".", model=model_name, optimizer=optimizer,
                           epochs=2, batch_size=8, checkpoints_per_epoch=2, recipe=recipe,
                           schedule="cosine", warmup=0.2, **({"lr_ov": 0.05} if optimizer == "sgd" else {}))
            for r, s in runs]

    def probe(m):
        return lambda step, epoch: {"step": step, "w": [p.detach().clone() for p in m.parameters()]}

    loop_models, loop_hist = [], []
    for (r, s), c in zip(runs, cfgs):
        m = build(kind, len(v), s)
        loop_hist.append(train(m, data, c, classification_loss, progress=False, on_checkpoint=probe(m)))
        loop_models.append(m)
    st_models = [build(kind, len(v), s) for _, s in runs]
    st_hist = train_stacked(st_models, [data] * 4, cfgs, classification_loss,
                            on_checkpoint=[probe(m) for m in st_models])
    # float32 kernels: vmap batches the matmuls and the pad changes reduction lengths; 1e-5 relative
    # agreement after 10 steps is rounding, a wrong rate or a wrong batch is off by >1e-2
    for a, b in zip(loop_models, st_models):
        for pa, pb in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(pa, pb, rtol=1e-4, atol=1e-5)
    for ha, hb in zip(loop_hist, st_hist):
        assert [c["step"] for c in ha.checkpoints] == [c["step"] for c in hb.checkpoints]
        for ca, cb in zip(ha.checkpoints, hb.checkpoints):
            for pa, pb in zip(ca["w"], cb["w"]):
                torch.testing.assert_close(pa, pb, rtol=1e-4, atol=1e-5)
        assert ha.epoch_loss == pytest.approx(hb.epoch_loss, rel=1e-4)
    # the runs really differ from each other (else equality would be trivial)
    assert not torch.allclose(next(st_models[0].parameters()), next(st_models[2].parameters()))


def test_stacking_refuses_mixed_schedules():
    v, data = tiny_data()
    cfgs = [default_config("sva", ratio=1.0, seed=0, quick=True, data_dir=".", epochs=e) for e in (1, 2)]
    with pytest.raises(ValueError, match="share epochs"):
        check_stackable(cfgs, [build("small", len(v), 0)] * 2, [data] * 2)


def test_many_runs_equal_single_runs_on_sva_and_write_one_dir_each(tmp_path):
    from qkov.study import real_stage as study
    from validation.real.run import train_and_evaluate

    from .conftest import data_dir_for

    d = data_dir_for("sva")
    cfgs = [default_config("sva", ratio=r, seed=s, quick=True, data_dir=str(d), max_train=96, max_val=32,
                           max_test=48, epochs=2) for r in (1.0, 30.0) for s in (0, 1)]
    dirs = [tmp_path / f"run{i}" for i in range(len(cfgs))]
    many = study.execute_runs_stacked(cfgs, dirs)
    for c, m, rd in zip(cfgs, many, dirs):
        one = train_and_evaluate(c, progress=False)["metrics"]
        assert (rd / "COMPLETE").is_file() and m["stacked_runs"] == 4
        for k in ("accuracy", "relevant_mass_mean", "token_f1", "comprehensiveness_aopc"):
            assert m[k] == pytest.approx(one[k], abs=1e-4), k        # float32 rounding, not a different model
        assert m["best_val"]["step"] == one["best_val"]["step"]
    assert many[0]["relevant_mass_mean"] != many[2]["relevant_mass_mean"]
    assert study.stack_groups(cfgs) == [[0, 1, 2, 3]]
