"""The RunContext: what the engine hands every run (device, precision, threads, progress, store)."""

from __future__ import annotations

import pickle
import types
from pathlib import Path

import pytest

from qkov.study.context import DEFAULT_CONTEXT, RunContext


def test_a_context_pickles_to_an_equal_one():
    """Dask ships the context to its workers by pickle: every field must come back as it was."""
    ctx = RunContext(device="cuda:1", precision="bf16", threads=3, progress=None, store=Path("/r/out"))
    back = pickle.loads(pickle.dumps(ctx))
    assert back == ctx and back.bf16 and back.store == Path("/r/out")
    assert not DEFAULT_CONTEXT.bf16 and DEFAULT_CONTEXT.device == "cpu"


def test_a_context_is_frozen_and_checked():
    with pytest.raises(AttributeError):
        DEFAULT_CONTEXT.device = "cuda"   # type: ignore[misc]
    with pytest.raises(ValueError, match="precision: 'fp8'"):
        RunContext(precision="fp8")
    with pytest.raises(ValueError, match="threads: 0"):
        RunContext(threads=0)
    assert DEFAULT_CONTEXT.replace(device="mps").device == "mps"


@pytest.fixture
def fake_torch(monkeypatch):
    """A stand-in ``torch`` recording the thread count (the real one takes seconds to import)."""
    state = types.SimpleNamespace(n=8)
    mod = types.ModuleType("torch")
    mod.get_num_threads = lambda: state.n
    mod.set_num_threads = lambda n: setattr(state, "n", n)
    monkeypatch.setitem(__import__("sys").modules, "torch", mod)
    return state


def test_thread_scope_sets_the_count_and_restores_it(fake_torch):
    with RunContext(threads=1).thread_scope():
        assert fake_torch.n == 1
    assert fake_torch.n == 8
    with pytest.raises(RuntimeError), RunContext(threads=2).thread_scope():
        assert fake_torch.n == 2
        raise RuntimeError("the run failed")
    assert fake_torch.n == 8                     # restored after a failure too
    with RunContext(threads=None).thread_scope():
        assert fake_torch.n == 8                 # None: left alone
