"""Fixtures of the fault-injection suite: the fault stage, one shared Dask cluster, subprocess drivers.

Every test here is marked ``faults`` (``pytest -m faults`` runs the suite alone). Worker processes import
the stage modules by name, so ``tests/faults`` and ``tests/reproduce`` go on ``PYTHONPATH`` for them too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
_PATHS = [str(HERE), str(HERE.parent / "reproduce"), str(ROOT)]
for _p in reversed(_PATHS):
    if _p not in sys.path:
        sys.path.insert(0, _p)
os.environ["PYTHONPATH"] = os.pathsep.join(
    _PATHS + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in _PATHS])


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).parent == HERE:
            item.add_marker(pytest.mark.faults)


def fault_stages():
    """The engine's stages for these tests: the fault stage alone, as a Stage object."""
    import faultstudy
    from qkov.study import engine

    return (engine.Stage.from_module("synthetic", faultstudy),)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """Point the engine at the fault stage; return the scratch directory (fault.json, execution counts)."""
    from qkov.study import engine

    d = tmp_path / "scratch"
    d.mkdir()
    monkeypatch.setattr(engine, "STAGES", fault_stages())
    monkeypatch.setenv("QKOV_FAULT_DIR", str(d))
    monkeypatch.delenv("QKOV_LOCK", raising=False)
    monkeypatch.delenv("QKOV_DATA_DIR", raising=False)
    return d


@pytest.fixture(scope="session")
def dask_client():
    """One LocalCluster (2 single-threaded worker processes) for the in-process tests of the suite.

    ``allowed-failures: 1``: a task whose worker dies twice is given up (KilledWorker) after two tries,
    not four, so the out-of-memory-killer case stays quick.
    """
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, silence_logs=50)
        client = Client(cluster)
        yield client
        client.close()
        cluster.close()


@pytest.fixture
def shared_cluster(dask_client, monkeypatch):
    """Make `qkov reproduce` (in this process) use the session's cluster instead of starting its own."""
    from qkov.study import engine

    @contextlib.contextmanager
    def use_shared(scheduler=None, workers=1):
        yield dask_client

    monkeypatch.setattr(engine, "StudyCluster", use_shared)
    return dask_client


DRIVER = """
import sys
sys.path[:0] = {paths!r}
from qkov.study import engine
import faultstudy
engine.STAGES = (engine.Stage.from_module("synthetic", faultstudy),)
from qkov.cli.main import main
if __name__ == "__main__":
    main(["reproduce", "--out", {out!r}, "--workers", "1", "--no-progress"])
"""


class Reproduce:
    """`qkov reproduce --out OUT` on the fault stage in a subprocess of its own session (own process group)."""

    def __init__(self, tmp: Path, out: Path):
        script = tmp / "driver.py"
        script.write_text(DRIVER.format(paths=_PATHS, out=str(out)))
        self.out = out
        self.proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env=dict(os.environ),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)

    def wait_complete(self, n: int, timeout: float = 60.0) -> None:
        """Wait until ``n`` runs are complete (the study is then mid-way)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if len(list(self.out.glob("runs/*/COMPLETE"))) >= n:
                return
            time.sleep(0.05)
        raise AssertionError(f"reproduce did not reach {n} complete runs: {self.communicate(5)}")

    def communicate(self, timeout: float = 60.0) -> tuple[str, str]:
        return self.proc.communicate(timeout=timeout)

    def kill_group(self) -> None:
        """SIGKILL the whole process group: the driver, its scheduler and its worker processes."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.communicate(timeout=30)


@pytest.fixture
def reproduce_process(tmp_path):
    """Start subprocess studies; every one still running at the end is killed with its group."""
    started: list[Reproduce] = []

    def start(out: Path) -> Reproduce:
        r = Reproduce(tmp_path, out)
        started.append(r)
        return r

    yield start
    for r in started:
        r.kill_group()


def complete_runs(out: Path) -> dict[str, int]:
    """Complete runs under ``out/runs`` -> mtime (ns) of their COMPLETE marker."""
    from qkov.core.runstore import is_complete

    runs = out / "runs"
    if not runs.is_dir():
        return {}
    return {p.name: (p / "COMPLETE").stat().st_mtime_ns for p in runs.iterdir() if is_complete(p)}


def assert_complete_runs_are_whole(out: Path, payload: int = 0) -> None:
    """Every run that reads as complete holds everything a run writes, with the right content.

    ``is_complete`` is what the engine and the report trust; this checks it independently: config, manifest,
    metrics (the run's deterministic value), claims and, with ``payload``, a payload of that many bytes.
    """
    import json

    import numpy as np

    from qkov.core.runstore import is_complete

    runs = out / "runs"
    for p in (runs.iterdir() if runs.is_dir() else ()):
        if not is_complete(p):
            continue
        listed = set(json.loads((p / "COMPLETE").read_text())["files"])
        want = {"config.json", "manifest.json", "metrics.json", "claims.json"} | ({"payload.bin"} if payload else set())
        assert want <= listed, (p.name, listed)
        i = json.loads((p / "config.json").read_text())["index"]
        assert json.loads((p / "metrics.json").read_text())["value"] == float(np.random.default_rng(i).normal())
        if payload:
            assert (p / "payload.bin").stat().st_size == payload
