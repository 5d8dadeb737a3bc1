"""Resource faults mid-study: disk full, read-only or vanished --out, a worker out of memory.

Each case: the failing runs are reported failed with a one-line reason, no run reads complete that is
not, the report is built from what is complete (or one line says why it could not be written), no
traceback, and a rerun after the fault is fixed completes the study without redoing finished runs.
The filesystem cases mount a small tmpfs as --out (root only; skipped with the reason otherwise).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.faults.faultkit import assert_complete_runs_are_whole, complete_runs, run_cli
from tests.faults.faultstudy import executions, set_behaviour
from qkov.cli.main import cli


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    """A tmpfs of ``size`` mounted at ``path`` (skips the test where mounting is not permitted)."""
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "qkov-faults", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a {size} tmpfs as --out ({(r.stderr or r.stdout).strip()[:100]}); "
                    "this case needs root (run `sudo pytest -m faults`, see docs/reliability.md)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount(path: Path, opts: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{opts}", str(path)], check=True, capture_output=True)


def make_read_only(path: Path) -> None:
    """Turn ``path`` read-only under running writers: a read-only bind mount of it over itself.

    (A plain ``remount,ro`` is refused while files are open for writing, as the lock file is.)
    """
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True, capture_output=True)
    for attempt in range(20):  # libmount reads the mount table, which other processes may be changing
        r = subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True, text=True)
        if r.returncode == 0:
            return
        time.sleep(0.05)
    raise RuntimeError(f"mount -o remount,bind,ro {path}: {r.stderr.strip()}")


def can_mount(tmp: Path) -> str | None:
    """None where this process may mount (a tmpfs probe), else why not."""
    probe = tmp / "probe"
    probe.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "qkov-probe", str(probe)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return (r.stderr or r.stdout).strip()[:100] or f"mount exit status {r.returncode}"
    subprocess.run(["umount", str(probe)], capture_output=True)
    return None


@contextlib.contextmanager
def when_complete(out: Path, n: int, action):
    """Run ``action()`` in a thread once ``n`` runs of ``out`` are complete (the study is then mid-way)."""
    done = threading.Event()

    def watch():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(list(out.glob("runs/*/COMPLETE"))) < n:
            time.sleep(0.02)
        action()
        done.set()

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    yield done
    t.join(70)


def _study(out: Path, capsys) -> tuple[int, str, str]:
    rc = run_cli(cli, ["reproduce", "--out", str(out), "--no-progress"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _check_failed_run_lines(err: str, reason: str) -> list[str]:
    """Every failed run is one stderr line carrying ``reason``; no traceback anywhere."""
    assert "Traceback" not in err, err[-3000:]
    failed = [x for x in err.splitlines() if x.startswith("failed ")]
    assert failed, err
    assert all(reason in x for x in failed), failed
    return failed


def _report_built_or_one_line(out_text: str, err: str, out: Path) -> bool:
    """The report was built (its path printed and there), or exactly one line says why not."""
    printed = [x for x in out_text.splitlines() if x.startswith("report: ")]
    why_not = [x for x in err.splitlines() if x.startswith("report: not written: ")]
    assert len(printed) + len(why_not) == 1, (out_text, err)
    if printed:
        assert Path(printed[0].split(": ", 1)[1]).is_file()
    return bool(printed)


def _rerun_completes(out: Path, capsys, scratch: Path, finished: dict[str, int], n: int = 6) -> None:
    """The rerun after the fix exits 0 with the report, all runs complete, finished ones not run again."""
    before = {k: executions(scratch, k) for k in finished}
    rc, text, err = _study(out, capsys)
    assert rc == 0, err
    assert any(x.startswith("report: ") for x in text.splitlines())
    after = complete_runs(out)
    assert len(after) == n and all(after[k] == m for k, m in finished.items())
    assert all(executions(scratch, k) == before[k] for k in finished)


def fill(fs: Path) -> Path:
    """Fill the filesystem ``fs`` to the last byte with one file; return it (delete it to free the space)."""
    filler = fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for block in (1 << 16, 512):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * block)
    finally:
        os.close(fd)
    return filler


def test_disk_full_mid_study(tmp_path, scratch, shared_cluster, capsys):
    """Promise: when --out's filesystem fills up mid-study (a 4 MiB tmpfs filled once 2 runs are done),
    the runs that cannot be written fail with one line each (`No space left on device`), none reads
    complete that is not, the report is built from the complete runs or one line says why not (so does
    the summary) -- before the fix this crashed with a double traceback and no `report:` line -- and once space is freed
    the rerun completes without redoing finished runs."""
    with tmpfs(tmp_path / "fs", "4m") as fs:
        out = fs / "out"
        set_behaviour(scratch, sleep=0.5, payload=100_000)
        with when_complete(out, 2, lambda: fill(fs)):
            rc, text, err = _study(out, capsys)
        assert rc == 1
        _check_failed_run_lines(err, "No space left on device")
        _report_built_or_one_line(text, err, out)  # the few kB the failed runs free may or may not hold it
        assert_complete_runs_are_whole(out, payload=100_000)
        finished = complete_runs(out)
        assert 2 <= len(finished) < 6
        (fs / "filler").unlink()
        _rerun_completes(out, capsys, scratch, finished)
        assert_complete_runs_are_whole(out, payload=100_000)


def test_read_only_out_mid_study(tmp_path, scratch, shared_cluster, capsys):
    """Promise: when --out turns read-only mid-study (a read-only bind mount over it), the remaining runs
    fail with one line (`Read-only file system`), none reads complete that is not, the summary and the
    report each say in one line that they could not be written, and once it is writable again the rerun
    completes without redoing finished runs."""
    why = can_mount(tmp_path)
    if why:
        pytest.skip(f"cannot bind-mount --out read-only ({why}); this case needs root (see docs/reliability.md)")
    out = tmp_path / "out"
    set_behaviour(scratch, sleep=0.5)
    try:
        with when_complete(out, 2, lambda: make_read_only(out)):
            rc, text, err = _study(out, capsys)
        assert rc == 1
        _check_failed_run_lines(err, "Read-only file system")
        assert not _report_built_or_one_line(text, err, out)
        assert any(x.startswith("summary not written:") for x in err.splitlines())
        assert_complete_runs_are_whole(out)
        finished = complete_runs(out)
        assert 2 <= len(finished) < 6
    finally:
        subprocess.run(["umount", str(out)], capture_output=True)  # writable again
    _rerun_completes(out, capsys, scratch, finished)


def test_out_vanishes_mid_study(tmp_path, scratch, shared_cluster, capsys):
    """Promise: when --out is removed mid-study, the runs still to write fail with one line each and the
    directory is not silently made again by the workers; the report says in one line that it cannot be
    written; a rerun then does the whole study."""
    out = tmp_path / "out"
    set_behaviour(scratch, sleep=0.5)

    def remove():
        while out.exists():
            shutil.rmtree(out, ignore_errors=True)

    with when_complete(out, 2, remove):
        rc, text, err = _study(out, capsys)
    assert rc == 1
    failed = _check_failed_run_lines(err, "")
    assert all("vanished" in x or "No such file or directory" in x for x in failed), failed
    assert not _report_built_or_one_line(text, err, out)
    assert not any((out / "runs").glob("*/COMPLETE")) if out.exists() else True
    _rerun_completes(out, capsys, scratch, {})


@pytest.mark.parametrize("fault, reason", [
    ({"oom": [1]}, "MemoryError: out of memory in the worker"),
    ({"die": [1]}, "KilledWorker: the worker process running it died every time it was tried"),
])
def test_worker_out_of_memory(tmp_path, scratch, shared_cluster, capsys, fault, reason):
    """Promise: a run whose worker runs out of memory -- a MemoryError in the task, or the worker process
    killed each time it runs it, as the kernel's OOM killer does -- is reported failed with one line
    saying so, the other runs complete, the report is built from them, and the rerun after the fix runs
    that run alone."""
    out = tmp_path / "out"
    set_behaviour(scratch, **fault)
    rc, text, err = _study(out, capsys)
    assert rc == 1
    failed = _check_failed_run_lines(err, reason)
    assert _report_built_or_one_line(text, err, out)
    finished = complete_runs(out)
    # The run asked to fail fails; a run queued on the same dying worker may be counted with it by Dask
    # (KilledWorker), but a run that is complete on disk is never reported failed.
    assert len(failed) >= 1 and len(finished) == 6 - len(failed), (text, err)
    set_behaviour(scratch)  # the fault is fixed (more memory)
    _rerun_completes(out, capsys, scratch, finished)


def test_read_only_out_from_the_start_is_one_line(tmp_path, scratch, shared_cluster, capsys):
    """Promise: on a --out that is read-only before the command starts, `qkov reproduce` and `qkov report`
    each print one line saying they cannot write there (exit 2, no traceback) and change nothing."""
    why = can_mount(tmp_path)
    if why:
        pytest.skip(f"cannot bind-mount --out read-only ({why}); this case needs root (see docs/reliability.md)")
    out = tmp_path / "out"
    set_behaviour(scratch)
    assert _study(out, capsys)[0] == 0
    before = complete_runs(out)
    make_read_only(out)
    try:
        for args in (["reproduce", "--out", str(out), "--no-progress"], ["report", "--out", str(out)]):
            rc = run_cli(cli, args)
            err = capsys.readouterr().err
            lines = [x for x in err.splitlines() if x.strip()]
            assert rc == 2 and len(lines) == 1 and "Read-only file system" in lines[0], (args, err)
            assert lines[0].startswith(f"qkov: error: out: {out}: cannot write")
    finally:
        subprocess.run(["umount", str(out)], capture_output=True)
    assert complete_runs(out) == before
