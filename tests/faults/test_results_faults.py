"""Faults of issue 25 in the results directory: links, malformed markers and summaries, mixed lock modes.

Each test is named after the fault it injects; each asserts the promise ``docs/reliability.md`` makes.
They build runs with :class:`qkov.core.runstore.RunWriter` directly (no cluster), then read them with the
same code ``qkov reproduce`` and ``qkov report`` use.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qkov.cli.main import cli, run_cli
from qkov.core.lock import LOCK_NAME, ResultsLocked, results_lock
from qkov.core.runstore import COMPLETE_MARKER, RunWriter, completeness, is_complete

ROOT = Path(__file__).resolve().parents[2]


def _run(out: Path, name: str = "simulate-0123456789ab", marker: str = "zebra-metric") -> Path:
    path = out / "runs" / name
    with RunWriter(path, kind="simulate", config={"K": 3}) as run:
        run.write_json("metrics.json", {marker: 1.5})
    return path


def _report(out: Path, capsys) -> tuple[int, str, str]:
    rc = run_cli(cli, ["report", "--out", str(out)])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("qkov: error: ") and "Traceback" not in err, err
    return lines[0]


def _seal(path: Path, files: object) -> None:
    (path / COMPLETE_MARKER).write_text(json.dumps({"files": files}))


# --- links -------------------------------------------------------------------------------------------

def test_symlinked_lock_file_is_refused_and_its_target_untouched(tmp_path, capsys):
    """Before: `ln -s ../victim.txt OUT/.qkov.lock; qkov report` exited 0 and replaced victim.txt."""
    out = tmp_path / "out"
    _run(out)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / LOCK_NAME).symlink_to("../victim.txt")
    rc, text, err = _report(out, capsys)
    line = _one_error_line(err)
    assert rc == 2 and "a symbolic link" in line and f"remove {out / LOCK_NAME}" in line, err
    assert victim.read_text() == "precious\n" and (out / LOCK_NAME).is_symlink()
    assert not (out / "report.html").exists()


def test_complete_entries_outside_the_run_are_never_read(tmp_path, capsys):
    """Before: COMPLETE entries `../x` or `/abs/x` with their true SHA-256 made the report embed them."""
    out = tmp_path / "out"
    run = _run(out)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"secret_marker_77": 1}))
    listing = json.loads((run / COMPLETE_MARKER).read_text())["files"]
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    for name in (f"../../../{secret.name}", str(secret), "sub/../../../secret.json"):
        _seal(run, listing | {name: digest})
        listed, why = completeness(run)
        assert listed is None and "not a plain file name" in why, why
        rc, _, err = _report(out, capsys)
        assert rc == 0, err
        page = (out / "report.html").read_text() + (out / "report.md").read_text()
        assert "secret_marker_77" not in page and run.name in page


def test_symlinked_run_directory_is_not_followed_by_the_report(tmp_path, capsys):
    """Before: `qkov report` followed a run directory linked to outside --out (reproduce refused it). Issue 35:
    the report refuses it in one line (exit 2) like every other command, reading and writing nothing."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    _run(out)
    target = _run(elsewhere, "simulate-feedfeedfeed", marker="outside-marker-31")
    (out / "runs" / "simulate-feedfeedfeed").symlink_to(target, target_is_directory=True)
    assert not is_complete(out / "runs" / "simulate-feedfeedfeed") and is_complete(target)
    rc, _, err = _report(out, capsys)
    line = _one_error_line(err)
    assert rc == 2 and "simulate-feedfeedfeed: a symbolic link" in line, err
    assert not (out / "report.md").exists() and not (out / "report.html").exists()


def test_symlinked_listed_file_makes_the_run_incomplete(tmp_path):
    """A listed file replaced by a link to an identical file elsewhere is not read through the link."""
    out = tmp_path / "out"
    run = _run(out)
    copy = tmp_path / "metrics-copy.json"
    copy.write_bytes((run / "metrics.json").read_bytes())
    (run / "metrics.json").unlink()
    (run / "metrics.json").symlink_to(copy)
    assert completeness(run) == (None, "metrics.json is missing or not a regular file")


# --- one definition of a complete run ----------------------------------------------------------------

def test_extra_unlisted_file_keeps_the_run_complete_and_unnamed(tmp_path, capsys):
    """Before: `touch runs/<run>/.DS_Store` hid the run from every report while reproduce reused it."""
    out = tmp_path / "out"
    run = _run(out)
    (run / ".DS_Store").write_bytes(b"\x00\x01junk")
    (run / "notes-extra-41.json").write_text('{"unlisted_marker_41": ')  # not even valid JSON
    (run / "stray-dir-41").mkdir()
    assert is_complete(run)
    rc, _, err = _report(out, capsys)
    assert rc == 0, err
    for page in ((out / "report.html").read_text(), (out / "report.md").read_text().replace("\\", "")):
        assert run.name in page and "zebra-metric" in page                  # the run is shown, with its metric
        # none of the extras named (markers no hash, date or path in the page can contain)
        for extra in (".DS_Store", "notes-extra-41", "unlisted_marker_41", "stray-dir-41"):
            assert extra not in page
        assert "incomplete (not shown)" not in page


@pytest.mark.parametrize("files", [{}, [], "x", None, 5, {"config.json": 7}, {"config.json": "abc"}],
                         ids=["empty-object", "list", "string", "null", "number", "int-digest", "short-digest"])
def test_malformed_complete_marker_reads_incomplete_in_one_line(tmp_path, capsys, files):
    """Before: {"files": {}} was stuck (reused, never shown); {"files": []} crashed report and reproduce."""
    out = tmp_path / "out"
    run = _run(out)
    _seal(run, files)
    listed, why = completeness(run)
    assert listed is None and why and "\n" not in why
    rc, _, err = _report(out, capsys)
    assert rc == 0 and "Traceback" not in err, err
    md = (out / "report.md").read_text().replace("\\", "")
    assert f"incomplete (not shown): {run.name} (COMPLETE " in md


@pytest.mark.parametrize("text", ["", "{", "[1]", '"x"', "[" * 100000 + "]" * 100000],
                         ids=["empty", "cut", "list", "string", "deep"])
def test_unparseable_complete_marker_reads_incomplete(tmp_path, text):
    run = _run(tmp_path / "out")
    (run / COMPLETE_MARKER).write_text(text)
    listed, why = completeness(run)
    assert listed is None and why.startswith("COMPLETE ")


@pytest.mark.parametrize("summary", ["[1]", '{"stages": "abc"}', '{"runs": [1]}', '{"skipped": 5}',
                                     '{"stages": [1]}', '{"runs": [{"name": 1}]}', '{"cluster": []}', "{",
                                     "[" * 100000],
                         ids=["list", "stages-string", "runs-of-ints", "skipped-int", "stages-of-ints",
                              "run-name-int", "cluster-list", "cut", "deep"])
def test_malformed_reproduce_json_is_ignored_with_one_line(tmp_path, capsys, summary):
    """Before: `qkov report` tracebacked on a malformed OUT/reproduce.json."""
    out = tmp_path / "out"
    run = _run(out)
    (out / "reproduce.json").write_text(summary)
    rc, _, err = _report(out, capsys)
    assert rc == 0 and "Traceback" not in err, err
    md = (out / "report.md").read_text().replace("\\", "")
    assert sum(1 for x in md.splitlines() if "reproduce.json:" in x) == 1 and "(ignored)" in md
    assert run.name in md


# --- locks -------------------------------------------------------------------------------------------

_HOLDER = """
import sys, time
sys.path.insert(0, {root!r})
from qkov.core.lock import results_lock
with results_lock({out!r}, "qkov holder", mode={mode!r}):
    print("held", flush=True)
    time.sleep(60)
"""


def _hold(out: Path, mode: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", _HOLDER.format(root=str(ROOT), out=str(out), mode=mode)],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


@pytest.mark.parametrize("holder_mode,taker_mode", [("lease", "flock"), ("flock", "lease")])
def test_mixed_lock_modes_see_each_other(tmp_path, holder_mode, taker_mode):
    """Before: a plain (flock) `qkov reproduce` took over a live QKOV_LOCK=lease holder ("its process is
    gone") and deleted its in-flight runs."""
    out = tmp_path / "out"
    holder = _hold(out, holder_mode)
    try:
        said: list[str] = []
        with pytest.raises(ResultsLocked, match=f"in use by qkov holder \\(pid {holder.pid} "):
            with results_lock(out, "qkov second", mode=taker_mode, announce=said.append):
                raise AssertionError("took a live holder's lock")
        assert said == [] and json.loads((out / LOCK_NAME).read_text())["mode"] == holder_mode
    finally:
        holder.kill()
        holder.wait()


def test_live_lease_without_flock_is_respected_by_flock_mode(tmp_path):
    """A lease written by a holder that could not flock (an older qkov, a filesystem without flock) whose
    process is alive on this host: flock mode finds the flock free but still refuses."""
    import psutil

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out = tmp_path / "out"
        out.mkdir()
        (out / LOCK_NAME).write_text(json.dumps({
            "host": socket.gethostname(), "pid": sleeper.pid, "mode": "lease", "command": "qkov reproduce",
            "pid_created": round(psutil.Process(sleeper.pid).create_time(), 2), "started": "2026-01-01"}))
        with pytest.raises(ResultsLocked, match=f"pid {sleeper.pid}"):
            with results_lock(out, mode="flock"):
                raise AssertionError("took a live lease")
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("content", ["", "garbage{", "[1, 2]"], ids=["empty", "garbage", "not-object"])
def test_empty_or_garbage_lock_is_recovered_or_refused_with_the_fix(tmp_path, content):
    """Before: an empty or garbage lease file (a disk-full failure at start) refused every later lease-mode
    command forever, with no hint. Now: flock mode (its flock is free) takes it over with a message; lease
    mode refuses a fresh one naming the file to remove, and takes over one older than the grace period."""
    from qkov.core import lock

    for mode in ("flock", "lease"):
        out = tmp_path / mode
        out.mkdir()
        (out / LOCK_NAME).write_text(content)
        said: list[str] = []
        if mode == "lease":
            with pytest.raises(ResultsLocked) as exc:
                with results_lock(out, mode=mode, announce=said.append):
                    pass
            assert f"if no qkov command is using it, remove {out / LOCK_NAME}" in str(exc.value)
            old = time.time() - lock.GRACE_S - 5
            os.utime(out / LOCK_NAME, (old, old))
        with results_lock(out, "qkov taker", mode=mode, announce=said.append) as path:
            assert json.loads(path.read_text())["command"] == "qkov taker"
        assert len(said) == 1 and "empty or unreadable" in said[0], said
        assert not (out / LOCK_NAME).exists()


def test_lock_write_failure_leaves_nothing_behind(tmp_path, monkeypatch, capsys):
    """Before: a disk-full failure writing the lock left OUT/ and an empty .qkov.lock behind."""
    from qkov.core import lock

    def full(fd, record):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(lock, "_write", full)
    for mode in ("flock", "lease"):
        out = tmp_path / mode / "deeper" / "out"
        with pytest.raises(lock.InputError, match="No space left on device"):
            with results_lock(out, mode=mode):
                raise AssertionError("held a lock it could not write")
        assert not (tmp_path / mode).exists()
    out = tmp_path / "with-runs"
    _run(out)
    rc, _, err = _report(out, capsys)
    assert rc == 2 and "No space left on device" in _one_error_line(err)
    assert sorted(p.name for p in out.iterdir()) == ["runs"]


def test_refusal_of_a_busy_lock_is_immediate(tmp_path, monkeypatch):
    """The lock API itself refuses a busy directory at once (the commands take it before any planning):
    every flock it tries is non-blocking (LOCK_NB) and it never sleeps to wait for the holder."""
    import fcntl

    flags: list[int] = []
    real_flock = fcntl.flock

    def recording_flock(fd, op):
        flags.append(op)
        return real_flock(fd, op)

    def no_sleep(seconds):
        raise AssertionError(f"the refusal waited ({seconds} s)")

    out = tmp_path / "out"
    holder = _hold(out, "flock")
    try:
        monkeypatch.setattr(fcntl, "flock", recording_flock)
        monkeypatch.setattr(time, "sleep", no_sleep)
        for _ in range(20):
            with pytest.raises(ResultsLocked):
                with results_lock(out, mode="flock"):
                    pass
        monkeypatch.undo()
        assert len(flags) >= 20 and all(op & fcntl.LOCK_NB for op in flags), flags
    finally:
        holder.kill()
        holder.wait()
