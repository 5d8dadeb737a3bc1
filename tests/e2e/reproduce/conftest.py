"""Fixtures of the reproduce tests: fake stage modules, one shared Dask cluster per test module.

The fake stages are the package ``tests.e2e.reproduce.fakestudy``: importable from the repository root, which
pytest puts on ``sys.path`` (``tests`` is a package) and Dask's spawned workers inherit; nothing here edits
``sys.path`` or the environment.
"""

from __future__ import annotations

import contextlib

import pytest

from tests.e2e.reproduce.browser import chromium_missing, open_driver


@pytest.fixture
def fake_stages(tmp_path, monkeypatch):
    """Set up the fake stages' environment; return the scratch directory (execution counters).

    The tests pass the stages themselves (``FAKE_STAGES``; ``tests.e2e.reproduce.fakestudy.run_cli`` injects them into the CLI).
    """
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("QKOV_FAKE_DIR", str(scratch))
    for var in ("QKOV_FAKE_SLEEP", "QKOV_FAKE_KILL", "QKOV_FAKE_FAIL", "QKOV_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    return scratch


@pytest.fixture(scope="module")
def dask_client():
    """One LocalCluster (2 single-threaded worker processes) shared by a test module."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=50)
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def shared_cluster(dask_client, monkeypatch):
    """Make `qkov reproduce` use the module's cluster instead of starting its own."""
    from qkov.study import engine

    @contextlib.contextmanager
    def use_shared(scheduler=None, workers=1):
        yield dask_client

    monkeypatch.setattr(engine, "StudyCluster", use_shared)
    return dask_client


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    """Headless Chromium (one per test module), or a skip naming what is missing."""
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    driver = open_driver(tmp_path_factory.mktemp("profile"))
    yield driver
    driver.quit()
