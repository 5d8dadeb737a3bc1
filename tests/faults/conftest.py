"""Fixtures of the fault-injection suite: the fault stage, one shared Dask cluster, subprocess drivers.

Every test here is marked ``faults`` (``pytest -m faults`` runs the suite alone). The fault stage is the
module ``tests.faults.faultstudy``: importable from the repository root, which pytest puts on ``sys.path``
(``tests`` is a package) and Dask's spawned worker processes inherit; subprocesses get it through
:func:`tests.paths.child_env`. Nothing here edits ``sys.path`` or the environment. Helpers the tests import
are in ``faultkit.py``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.faults.faultkit import Reproduce

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).parent == HERE:
            item.add_marker(pytest.mark.faults)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """Set up the fault stage's environment; return the scratch directory (fault.json, execution counts).

    The tests pass the stage itself (``faultkit.run_cli`` injects it into the CLI).
    """
    d = tmp_path / "scratch"
    d.mkdir()
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


