"""Resume inside a run (issue 34): a run interrupted after an epoch continues from its training state and ends
exactly as an uninterrupted run (bitwise on the CPU: every weight, loss, checkpoint record and metric)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from qkov.core.runstore import is_complete
from qkov.study import real_stage as study
from qkov.study.engine import RunsFailed
from qkov.study.real_command import RealSweep, validate_real
from validation.real import resume as training_state
from validation.real.config import default_config
from validation.real.examples import SquadExample
from validation.real.squad_decoder import DecoderLM, decoder_loss, encode_decoder, mean_loss
from validation.real.tracking import Tracker
from validation.real.training import train
from validation.real.vocab import Vocab

from .conftest import data_dir_for

EPOCHS, STOP_AFTER = 3, 2
"""Three epochs; the first attempt stops once the state after its second epoch (index 1) is written."""


class Interrupted(Exception):
    """Stands for a killed process: raised right after a training state is written."""


@pytest.fixture
def interrupt_after(monkeypatch):
    """``interrupt_after(k)``: from now on the run stops (:class:`Interrupted`) once the state holding ``k``
    epochs is written; returns the list of epoch counts written, which keeps counting after ``stop()``."""
    real_save = training_state.save
    written: list[int] = []
    stop_at: list[int | None] = [None]

    def save(path, key, state):
        real_save(path, key, state)
        written.append(state["epoch"])
        if state["epoch"] == stop_at[0]:
            raise Interrupted(f"stopped after epoch {state['epoch']}")

    monkeypatch.setattr(training_state, "save", save)

    def arm(k: int | None) -> list[int]:
        stop_at[0] = k
        return written

    return arm


# --- the trainer: a tiny decoder with dropout (the global RNG matters), no data directory needed -------------

def _examples(n: int) -> list[SquadExample]:
    out = []
    for k in range(n):
        words = tuple(f"w{(k * 7 + i) % 23}" for i in range(24))
        a = 3 + k % 15
        out.append(SquadExample(uid=f"q{k}", article="A", question=("what", f"w{a % 23}", "is"), context=words,
                                offsets=tuple((3 * i, 3 * i + 2) for i in range(24)), context_text=" ".join(words),
                                spans=((a, a + 1),), answers=(f"{words[a]} {words[a + 1]}",), sentence=(0, 23)))
    return out


def _tiny_decoder_run(resume_path: Path | None, calls: list[int]):
    cfg = default_config("squad", ratio=5.0, seed=3, quick=True, data_dir="unused", epochs=EPOCHS, batch_size=8,
                         checkpoints_per_epoch=2, dropout=0.1, schedule="cosine", warmup=0.2, weight_decay=0.01,
                         glove=False)
    exs = _examples(36)
    vocab = Vocab.train([e.context for e in exs] + [e.question for e in exs], min_frequency=1)
    tr, va = encode_decoder(exs[:28], vocab, 12, 4, 3), encode_decoder(exs[28:], vocab, 12, 4, 3)
    torch.manual_seed(cfg.seed)
    model = DecoderLM(len(vocab), d=16, layers=2, heads=2, d_head=8, max_T=tr.ids.shape[1] + 5, eos_id=vocab.cls,
                      dropout=0.1)
    tracker = Tracker(model, probe=tr, val=va, loss_of=mean_loss, light_eval=lambda m: {"loss": mean_loss(m, va)})

    def loss_fn(m, b):
        calls.append(1)
        return decoder_loss(m, b)

    hist = train(model, tr, cfg, loss_fn, progress=False, on_checkpoint=tracker, resume=resume_path)
    return model, tracker, hist


def test_interrupted_decoder_training_resumes_bitwise(tmp_path, interrupt_after):
    ref_model, ref_tracker, ref_hist = _tiny_decoder_run(None, [])       # no state file at all
    state = tmp_path / "resume" / "run.pt"
    state.parent.mkdir()
    written = interrupt_after(STOP_AFTER)
    with pytest.raises(Interrupted):
        _tiny_decoder_run(state, [])
    assert written == [1, 2] and state.is_file()
    calls: list[int] = []
    model, tracker, hist = _tiny_decoder_run(state, calls)
    per_epoch = 28 // 8 + 1
    assert hist.resumed_from_epoch == STOP_AFTER and ref_hist.resumed_from_epoch is None
    assert len(calls) == per_epoch * (EPOCHS - STOP_AFTER)        # only the last epoch trained again
    assert written == [1, 2, 3]
    ref_sd, sd = ref_model.state_dict(), model.state_dict()
    assert ref_sd.keys() == sd.keys() and all(torch.equal(ref_sd[k], sd[k]) for k in sd)
    assert hist.epoch_loss == ref_hist.epoch_loss and hist.checkpoints == ref_hist.checkpoints
    assert len(hist.checkpoints) == 1 + EPOCHS * 2
    assert tracker.best_index == ref_tracker.best_index and tracker.step0 == ref_tracker.step0
    assert all(torch.equal(ref_tracker.best_state[k], tracker.best_state[k]) for k in sd)


def test_a_state_of_another_run_is_not_resumed(tmp_path, interrupt_after):
    state = tmp_path / "run.pt"
    written = interrupt_after(1)
    with pytest.raises(Interrupted):
        _tiny_decoder_run(state, [])
    torch.save({"format": training_state.FORMAT, "key": "another run", **torch.load(state, weights_only=True)
                | {"key": "another run"}}, state)
    interrupt_after(None)
    calls: list[int] = []
    with pytest.warns(training_state.ResumeIgnoredWarning, match="another run"):
        _, _, hist = _tiny_decoder_run(state, calls)
    assert hist.resumed_from_epoch is None and len(calls) == EPOCHS * (28 // 8 + 1)
    assert written == [1, 1, 2, 3]


@pytest.mark.parametrize("bad", ["truncated", "link"])
def test_a_damaged_or_linked_state_file_is_not_read_and_the_link_is_not_followed(bad, tmp_path, interrupt_after):
    state, target = tmp_path / "run.pt", tmp_path / "elsewhere.pt"
    written = interrupt_after(1)
    with pytest.raises(Interrupted):
        _tiny_decoder_run(state, [])
    if bad == "truncated":
        state.write_bytes(state.read_bytes()[:1000])
    else:   # a link to a real state: O_NOFOLLOW refuses to read it, os.replace replaces the link, not its target
        state.rename(target)
        state.symlink_to(target)
    before = target.read_bytes() if bad == "link" else b""
    interrupt_after(None)
    calls: list[int] = []
    with pytest.warns(training_state.ResumeIgnoredWarning, match="not read"):
        _, _, hist = _tiny_decoder_run(state, calls)
    assert hist.resumed_from_epoch is None and len(calls) == EPOCHS * (28 // 8 + 1) and written == [1, 1, 2, 3]
    assert not state.is_symlink() and state.is_file()
    aside = tmp_path / "run.pt.rejected"   # set aside, so that a rerun never meets it again (issue 44)
    assert aside.is_symlink() if bad == "link" else aside.is_file()
    if bad == "link":
        assert target.read_bytes() == before


def _wrong_shapes(st: dict) -> dict:
    k = next(iter(st["model"]))
    return {**st, "model": {**st["model"], k: torch.zeros(3, 3, 3)}}


def _wrong_optimizer_shapes(st: dict) -> dict:
    opt = st["optimizer"]
    pid = next(iter(opt["state"]))
    return {**st, "optimizer": {**opt, "state": {**opt["state"], pid: {**opt["state"][pid],
                                                                        "exp_avg": torch.zeros(7)}}}}


BAD_STATES = {
    "wrong shapes": (_wrong_shapes, "model: "),
    "optimizer shapes": (_wrong_optimizer_shapes, "optimizer: exp_avg"),
    "epoch two": (lambda st: {**st, "epoch": "two"}, "epoch: 'two'"),
    "epoch 10**6": (lambda st: {**st, "epoch": 10**6}, "must be an integer in \\[1, 3\\]"),
    "no optimizer": (lambda st: {k: v for k, v in st.items() if k != "optimizer"}, "no optimizer"),
    "no history": (lambda st: {k: v for k, v in st.items() if k != "history"}, "no history"),
    "short history": (lambda st: {**st, "history": {**st["history"], "epoch_loss": []}}, "epoch_loss must be 1"),
    "callback weights": (lambda st: {**st, "callback": {**st["callback"], "best_state": {"x": torch.zeros(1)}}},
                         "callback.best_state"),
}


@pytest.mark.parametrize("case", list(BAD_STATES))
def test_a_state_with_the_right_key_but_wrong_contents_is_set_aside_and_the_run_starts_afresh(case, tmp_path,
                                                                                              interrupt_after):
    """Issue 44: a state for this run's key whose contents do not fit (other shapes, epoch "two", no optimizer,
    no history, epoch 10**6 of 3 configured, ...) failed the run with RuntimeError/KeyError on every rerun, or
    (10**6) made a complete run with no training. Now it is moved to <file>.rejected with one warning line
    naming it and why, and the run trains from the beginning: bitwise the run that never had a state."""
    ref_model, _, ref_hist = _tiny_decoder_run(None, [])
    state = tmp_path / "resume" / "run.pt"
    state.parent.mkdir()
    interrupt_after(1)
    with pytest.raises(Interrupted):
        _tiny_decoder_run(state, [])
    mutate, why = BAD_STATES[case]
    torch.save(mutate(torch.load(state, weights_only=True)), state)
    interrupt_after(None)
    calls: list[int] = []
    with pytest.warns(training_state.ResumeIgnoredWarning, match=f"run.pt: does not fit this run \\(.*{why}") as seen:
        model, _, hist = _tiny_decoder_run(state, calls)
    assert len([w for w in seen if issubclass(w.category, training_state.ResumeIgnoredWarning)]) == 1
    assert "\n" not in str(seen[0].message) and "moved to run.pt.rejected" in str(seen[0].message)
    assert (tmp_path / "resume" / "run.pt.rejected").is_file()
    assert hist.resumed_from_epoch is None and len(calls) == EPOCHS * (28 // 8 + 1)
    assert hist.epoch_loss == ref_hist.epoch_loss
    assert all(torch.equal(ref_model.state_dict()[k], v) for k, v in model.state_dict().items())


def test_a_state_the_checks_miss_fails_in_loading_and_still_starts_afresh(tmp_path, interrupt_after, monkeypatch):
    """Belt and braces: with the content check switched off, loading a wrong-shaped model fails half-way; the
    state is set aside and the run's weights, optimizer, data order and random states are put back, so it
    trains from the beginning, bitwise the run that never had a state."""
    ref_model, _, ref_hist = _tiny_decoder_run(None, [])
    state = tmp_path / "run.pt"
    interrupt_after(1)
    with pytest.raises(Interrupted):
        _tiny_decoder_run(state, [])
    torch.save(_wrong_shapes(torch.load(state, weights_only=True)), state)
    interrupt_after(None)
    monkeypatch.setattr(training_state, "state_problem", lambda *a, **k: None)
    with pytest.warns(training_state.ResumeIgnoredWarning, match="RuntimeError"):
        model, _, hist = _tiny_decoder_run(state, [])
    assert hist.resumed_from_epoch is None and hist.epoch_loss == ref_hist.epoch_loss
    assert all(torch.equal(ref_model.state_dict()[k], v) for k, v in model.state_dict().items())


def test_temporary_files_of_a_killed_write_are_removed_at_the_next_start(tmp_path):
    """A SIGKILL during the state write leaves ``.run.pt.*.tmp`` (up to ~1 MB each): removed when the run starts
    again (another run's temporaries, and a link with the pattern's name, are left alone)."""
    d = tmp_path / "resume"
    d.mkdir()
    for name in (".run.pt.abc123.tmp", ".run.pt.x.tmp", ".other.pt.abc.tmp"):
        (d / name).write_bytes(b"x" * 1000)
    (tmp_path / "keep").write_text("k")
    (d / ".run.pt.link.tmp").symlink_to(tmp_path / "keep")
    assert training_state.load(d / "run.pt", "k") is None
    assert sorted(p.name for p in d.iterdir()) == [".other.pt.abc.tmp", ".run.pt.link.tmp"]
    assert (tmp_path / "keep").read_text() == "k"


def test_a_link_in_place_of_the_state_directory_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "resume").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(training_state.ResumeRefused, match="symbolic link"):
        training_state.prepare_dir(tmp_path / "resume")
    with pytest.raises(training_state.ResumeRefused, match="symbolic link"):
        training_state.save(tmp_path / "resume" / "run.pt", "k", {"epoch": 1})
    assert not any((tmp_path / "elsewhere").iterdir())


# --- the CLI's entry point on the real data: a tiny SQuAD decoder and the small SVA classifier ----------------

TINY = {"squad": dict(max_train=40, max_val=12, max_test=12, epochs=EPOCHS, d=16, heads=2, d_head=8, layers=1,
                      window=16, question_len=8, answer_len=3, batch_size=16, glove=False, dropout=0.1),
        "sva": dict(max_train=160, max_val=40, max_test=40, epochs=EPOCHS, batch_size=32)}
TIMING = {"train_seconds", "checkpoint_seconds", "train_examples_per_second", "training_state_seconds",
          "resumed_from_epoch"}


def _sweep(dataset: str, out: Path, monkeypatch) -> Path:
    def tiny(*a, **k):
        return default_config(*a, **{**k, **TINY[dataset]})

    monkeypatch.setattr(study, "default_config", tiny)
    res = validate_real(RealSweep(datasets=(dataset,), ratios=(5.0,), seeds=(1,), quick=True, device="cpu"), out,
                        data_dir=data_dir_for(dataset), progress=False)
    (run,) = res.run_dirs
    return run


def _results(run: Path) -> tuple[dict, dict, dict]:
    metrics = json.loads((run / "metrics.json").read_text())
    arrays = dict(np.load(run / "instances.npz", allow_pickle=False))
    extras = {p.name: p.read_text() for p in run.iterdir() if p.suffix in (".json", ".jsonl")
              and p.name not in ("metrics.json", "manifest.json")}
    return {k: v for k, v in metrics.items() if k not in TIMING}, arrays, extras


@pytest.mark.parametrize("dataset", ["squad", "sva"])
def test_an_interrupted_sweep_run_resumes_where_it_stopped(dataset, tmp_path, monkeypatch, interrupt_after):
    ref = _sweep(dataset, tmp_path / "uninterrupted", monkeypatch)
    written = interrupt_after(STOP_AFTER)
    out = tmp_path / "interrupted"
    with pytest.raises(RunsFailed, match="stopped after epoch 2"):
        _sweep(dataset, out, monkeypatch)
    state = study.training_state_path(out / "runs" / ref.name)
    assert state.is_file() and not is_complete(out / "runs" / ref.name)
    assert written == [1, 2, 3, 1, 2]                    # the uninterrupted run's three states, then two
    run = _sweep(dataset, out, monkeypatch)             # the same sweep again
    assert written[5:] == [3]                            # epochs 0 and 1 were not trained again
    assert is_complete(run) and not state.exists() and not state.parent.exists()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["resumed_from_epoch"] == STOP_AFTER
    assert json.loads((ref / "manifest.json").read_text())["resumed_from_epoch"] is None
    (m, a, x), (m_ref, a_ref, x_ref) = _results(run), _results(ref)
    assert m == m_ref and x == x_ref
    assert a.keys() == a_ref.keys() and all(np.array_equal(a[k], a_ref[k], equal_nan=a[k].dtype.kind == "f")
                                            for k in a)


def test_a_sweep_rerun_sets_a_wrong_state_aside_and_trains_from_scratch(tmp_path, monkeypatch, interrupt_after):
    """Issue 44, through the command's entry point: the state of an interrupted run is replaced by one claiming
    epoch 10**6 (3 configured; before: a complete run with no training) and a rerun of the same sweep sets it
    aside as OUT/resume/<run>.pt.rejected and trains all three epochs, ending as the uninterrupted run."""
    ref = _sweep("sva", tmp_path / "uninterrupted", monkeypatch)
    written = interrupt_after(1)
    out = tmp_path / "interrupted"
    with pytest.raises(RunsFailed):
        _sweep("sva", out, monkeypatch)
    state = study.training_state_path(out / "runs" / ref.name)
    torch.save({**torch.load(state, weights_only=True), "epoch": 10**6}, state)
    interrupt_after(None)
    del written[:]
    with pytest.warns(training_state.ResumeIgnoredWarning, match=r"epoch: 1000000.*moved to .*\.pt\.rejected"):
        run = _sweep("sva", out, monkeypatch)
    assert written == [1, 2, 3] and is_complete(run)
    assert json.loads((run / "manifest.json").read_text())["resumed_from_epoch"] is None
    assert state.with_name(state.name + ".rejected").is_file() and not state.exists()
    (m, a, _), (m_ref, a_ref, _) = _results(run), _results(ref)
    assert m == m_ref and all(np.array_equal(a[k], a_ref[k], equal_nan=a[k].dtype.kind == "f") for k in a)


def test_a_run_into_a_results_directory_not_made_yet_leaves_no_state(tmp_path):
    cfg = default_config("sva", ratio=1.0, seed=0, quick=True, data_dir=str(data_dir_for("sva")),
                         **{**TINY["sva"], "epochs": 1})
    run = tmp_path / "new" / "runs" / "r"
    study.execute_run(cfg, run, progress=False)
    assert is_complete(run) and sorted(p.name for p in (tmp_path / "new").iterdir()) == ["runs"]
