"""The results convention: atomic writes and the COMPLETE marker."""

import json
import os

import numpy as np
import pytest

from qkov.core.runstore import (COMPLETE_MARKER, RunWriter, atomic_write_bytes, config_key,
                             discard_incomplete, is_complete)


def test_complete_run_has_manifest_and_marker(tmp_path):
    with RunWriter(tmp_path / "r", kind="test", config={"a": 1}, seed=7) as run:
        run.write_json("metrics.json", {"x": np.float64(1.5)})
        run.write_arrays("arrays.npz", t=np.arange(3))
    assert is_complete(tmp_path / "r")
    man = json.loads((tmp_path / "r" / "manifest.json").read_text())
    for key in ("qkov_version", "git_commit", "seed", "started", "ended", "python", "sympy", "platform"):
        assert key in man
    assert man["seed"] == 7
    assert json.loads((tmp_path / "r" / "config.json").read_text()) == {"a": 1}
    assert np.load(tmp_path / "r" / "arrays.npz")["t"].tolist() == [0, 1, 2]


def test_exception_midway_leaves_incomplete(tmp_path):
    with pytest.raises(RuntimeError):
        with RunWriter(tmp_path / "r", kind="test", config={}) as run:
            run.write_json("metrics.json", {"x": 1})
            raise RuntimeError("killed")
    assert not (tmp_path / "r" / COMPLETE_MARKER).exists()
    assert not is_complete(tmp_path / "r")
    assert discard_incomplete(tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_rerun_clears_old_marker_before_writing(tmp_path):
    with RunWriter(tmp_path / "r", kind="test", config={}) as run:
        run.write_json("metrics.json", {"x": 1})
    assert is_complete(tmp_path / "r")
    with pytest.raises(KeyboardInterrupt):
        with RunWriter(tmp_path / "r", kind="test", config={}) as run:
            raise KeyboardInterrupt
    assert not is_complete(tmp_path / "r")


def test_truncated_file_is_detected(tmp_path):
    with RunWriter(tmp_path / "r", kind="test", config={}) as run:
        run.write_arrays("arrays.npz", x=np.ones(1000))
    f = tmp_path / "r" / "arrays.npz"
    f.write_bytes(f.read_bytes()[:100])
    assert not is_complete(tmp_path / "r")


def test_atomic_write_interrupted_keeps_old_content(tmp_path, monkeypatch):
    target = tmp_path / "f.json"
    atomic_write_bytes(target, b"old")

    def boom(fd):
        raise OSError("disk died mid-write")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new-but-never-finished")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]  # no temp file left behind


def test_config_key_is_stable_and_discriminating():
    assert config_key("k", {"a": 1, "b": 2}) == config_key("k", {"b": 2, "a": 1})
    assert config_key("k", {"a": 1}) != config_key("k", {"a": 2})
    assert config_key("k", {"a": 1}) != config_key("j", {"a": 1})


def test_atomic_write_reaches_the_target_only_by_rename(tmp_path, monkeypatch):
    """The new content appears in one step: a complete temporary file in the same directory is renamed over the
    target, and until then the target holds the old bytes (a plain write to the target fails this)."""
    target = tmp_path / "f.json"
    atomic_write_bytes(target, b"old")
    real_replace, calls = os.replace, []

    def spy(src, dst):
        src, dst = os.fspath(src), os.fspath(dst)
        calls.append((src, dst))
        assert os.path.dirname(src) == str(tmp_path) and dst == str(target)
        assert open(src, "rb").read() == b"new content" and target.read_bytes() == b"old"
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    atomic_write_bytes(target, b"new content")
    assert len(calls) == 1 and target.read_bytes() == b"new content"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
