"""One owner per results directory: concurrent writers, SIGKILL and SIGINT mid-study, stale locks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.faults.faultkit import assert_complete_runs_are_whole, complete_runs, run_cli
from tests.faults.faultstudy import executions, set_behaviour
from qkov.cli.main import cli

LOCK = ".qkov.lock"


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_second_writer_exits_2_at_once_naming_the_holder(tmp_path, scratch, shared_cluster, reproduce_process,
                                                         capsys):
    """Promise: while `qkov reproduce` writes OUT, a second `qkov reproduce --out OUT` exits 2 at once
    (without waiting for the lock: the first study is still running when it returns) with one line naming
    the holder (its PID and host) and touches nothing, and so does `qkov report --out OUT`; the first study
    then completes with every run executed exactly once (before the lock, the second one deleted the first
    one's in-progress runs and ran them again)."""
    set_behaviour(scratch, sleep=0.6)
    out = tmp_path / "out"
    first = reproduce_process(out)
    first.wait_complete(1)
    rc = run_cli(cli, ["reproduce", "--out", str(out), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 2, (rc, cap)
    # it did not wait for the lock: a second writer that blocked until the first released would find the
    # first study finished (and would then run, not exit 2)
    assert first.proc.poll() is None, "the second writer returned only after the first study ended"
    line = _one_error_line(cap.err)
    assert line.startswith(f"qkov: error: out: {out}: in use by qkov reproduce")
    assert f"pid {first.proc.pid} on host {socket.gethostname()}" in line
    assert cap.out == ""
    # `qkov report --out OUT` writes into OUT too: the same lock, the same one-line refusal.
    assert run_cli(cli, ["report", "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "in use by qkov reproduce" in line and f"pid {first.proc.pid}" in line
    assert first.proc.poll() is None, "the first study must still be running"
    fout, ferr = first.communicate(90)
    assert first.proc.returncode == 0, ferr
    done = complete_runs(out)
    assert len(done) == 6 and all(executions(scratch, name) == 1 for name in done)
    assert not (out / LOCK).exists()


def test_sigkill_mid_study_then_rerun_takes_over_the_stale_lock(tmp_path, scratch, shared_cluster,
                                                                reproduce_process, capsys):
    """Promise: SIGKILL of a study (driver, scheduler and workers) mid-study leaves no run that reads
    complete and is not; the rerun takes over the dead holder's lock with one message, redoes only the
    unfinished runs and completes."""
    set_behaviour(scratch, sleep=0.6, payload=4096)
    out = tmp_path / "out"
    first = reproduce_process(out)
    first.wait_complete(2)
    first.kill_group()
    holder = json.loads((out / LOCK).read_text())        # the dead holder's record is left behind
    assert holder["pid"] == first.proc.pid and holder["host"] == socket.gethostname()
    assert_complete_runs_are_whole(out, payload=4096)
    finished = complete_runs(out)
    assert 2 <= len(finished) < 6

    assert run_cli(cli, ["reproduce", "--out", str(out), "--no-progress"]) == 0
    cap = capsys.readouterr()
    took_over = [x for x in cap.err.splitlines() if "taking over the lock" in x]
    assert len(took_over) == 1 and f"pid {first.proc.pid}" in took_over[0], cap.err
    runs_line = next(x for x in cap.out.splitlines() if x.startswith("runs:"))
    assert runs_line.startswith(f"runs: {6 - len(finished)} executed, {len(finished)} reused")
    after = complete_runs(out)
    assert len(after) == 6 and all(after[n] == m for n, m in finished.items())
    assert all(executions(scratch, n) == 1 for n in finished)
    assert_complete_runs_are_whole(out, payload=4096)
    assert not (out / LOCK).exists()


def test_sigint_mid_study_stops_releases_the_lock_and_rerun_finishes(tmp_path, scratch, shared_cluster,
                                                                     reproduce_process, capsys):
    """Promise: SIGINT mid-study stops with a message and no traceback, releases OUT's lock at once (a
    rerun needs no takeover), leaves no false complete run, and the rerun redoes only what was not done."""
    set_behaviour(scratch, sleep=0.6)
    out = tmp_path / "out"
    first = reproduce_process(out)
    first.wait_complete(2)
    first.proc.send_signal(signal.SIGINT)
    _, err = first.communicate(60)
    assert first.proc.returncode != 0 and "interrupted:" in err and "Traceback" not in err, err
    assert not (out / LOCK).exists()
    assert_complete_runs_are_whole(out)
    finished = complete_runs(out)
    assert run_cli(cli, ["reproduce", "--out", str(out), "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert "taking over" not in cap.err
    assert len(complete_runs(out)) == 6 and all(executions(scratch, n) == 1 for n in finished)


_HOLDER = """
import sys, time
sys.path.insert(0, {root!r})
from qkov.core.lock import results_lock
with results_lock({out!r}, "qkov test-holder", mode={mode!r}):
    print("held", flush=True)
    time.sleep(60)
"""


def _hold(tmp_path: Path, out: Path, mode: str) -> subprocess.Popen:
    root = str(Path(__file__).resolve().parents[2])
    p = subprocess.Popen([sys.executable, "-c", _HOLDER.format(root=root, out=str(out), mode=mode)],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_lock_modes_refuse_a_live_holder_and_take_over_a_dead_one(tmp_path):
    """Promise (both lock modes, flock and the lease file for filesystems without flock): a live holder
    in another process is refused with its name; once it is SIGKILLed its lock is taken over with one
    message; a lock released cleanly leaves no lock file."""
    from qkov.core.lock import ResultsLocked, results_lock

    for mode in ("flock", "lease"):
        out = tmp_path / mode
        holder = _hold(tmp_path, out, mode)
        try:
            try:
                with results_lock(out, "qkov second", mode=mode):
                    raise AssertionError("a second holder got the lock")
            except ResultsLocked as exc:
                assert f"in use by qkov test-holder (pid {holder.pid} on host {socket.gethostname()}" in str(exc)
        finally:
            holder.kill()
            holder.wait()
        said: list[str] = []
        with results_lock(out, "qkov second", mode=mode, announce=said.append) as lock_path:
            assert json.loads(lock_path.read_text())["pid"] == os.getpid()
        assert len(said) == 1 and f"from qkov test-holder (pid {holder.pid}" in said[0], said
        assert not (out / LOCK).exists()


def test_lease_held_from_another_host_is_not_taken_over(tmp_path):
    """Promise (lease mode, shared filesystem): a lease from another host cannot be checked from here, so
    it is never taken over automatically; the message names that host and how to clear it."""
    from qkov.core.lock import ResultsLocked, results_lock

    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text(json.dumps({"host": "node-17.cluster", "pid": 4242, "started": "2026-01-01T00:00:00",
                                        "command": "qkov reproduce"}))
    try:
        with results_lock(out, mode="lease"):
            raise AssertionError("took another host's lease")
    except ResultsLocked as exc:
        assert "pid 4242 on host node-17.cluster" in str(exc) and f"remove {out / LOCK}" in str(exc)
    assert (out / LOCK).exists()
