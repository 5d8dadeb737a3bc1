"""A worker killed mid-task under a real `dask scheduler` + `dask worker` started on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.faultkit import assert_complete_runs_are_whole, complete_runs, run_cli
from tests.paths import child_env
from tests.faults.faultstudy import executions, set_behaviour
from qkov.cli.main import cli

DASK = Path(sys.executable).with_name("dask")


@contextlib.contextmanager
def dask_cluster(tmp: Path):
    """`dask scheduler` on 127.0.0.1 (random port) and one `dask worker` (with its nanny, which restarts it)."""
    if not DASK.exists():
        pytest.skip(f"no `dask` command next to {sys.executable}")
    sfile = tmp / "scheduler.json"
    common = dict(cwd=tmp, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                  start_new_session=True)
    procs = [subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sfile)], **common)]
    try:
        deadline = time.monotonic() + 60
        while not sfile.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(sfile.read_text())["address"]
        procs.append(subprocess.Popen([str(DASK), "worker", address, "--nthreads", "1", "--nworkers", "1",
                                       "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "0"], **common))
        from distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(1, timeout=60)
        yield address
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_worker_killed_mid_task_under_a_real_scheduler(tmp_path, scratch, capsys):
    """Promise: with `--scheduler` pointing at a real `dask scheduler` + `dask worker` on 127.0.0.1, a
    worker process killed mid-task (SIGKILL while writing a run) is restarted by its nanny, the task is run
    again, and the study completes: the killed run executed twice, every other run once, all complete."""
    set_behaviour(scratch, die_once=[2])
    out = tmp_path / "out"
    with dask_cluster(tmp_path) as address:
        rc = run_cli(cli, ["reproduce", "--out", str(out), "--scheduler", address, "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 0, err
    done = complete_runs(out)
    assert len(done) == 6
    victim = next(n for n in done if (scratch / f"died-{n}").exists())
    assert executions(scratch, victim) == 2
    assert all(executions(scratch, n) == 1 for n in done if n != victim)
    assert_complete_runs_are_whole(out)
