"""Helpers of the fault-injection suite (imported by its tests; fixtures are in ``conftest.py``).

``faultkit`` rather than ``conftest``: several test directories have a ``conftest.py``, and ``from conftest
import ...`` would pick whichever was imported first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.paths import ROOT, child_env

PATHS = [str(ROOT)]
"""What a driver script puts on its path: the repository (the fault stage is ``tests.faults.faultstudy``)."""


def fault_stages():
    """The engine's stages for these tests: the fault stage alone, as a Stage object."""
    from qkov.study import engine
    from tests.faults import faultstudy

    return (engine.Stage.from_module("synthetic", faultstudy),)


def run_cli(group, args=None, prog_name="qkov"):
    """:func:`qkov.cli.main.run_cli` with the fault stage injected (``qkov reproduce`` runs it)."""
    from qkov.cli.main import run_cli as real

    return real(group, args, prog_name, obj={"stages": fault_stages()})


DRIVER = """
import sys
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # a launcher without job control (nohup cmd &)
# leaves SIGINT ignored, and Python keeps it so: the test's SIGINT would then be lost
sys.path[:0] = {paths!r}
from tests.faults.faultkit import fault_stages
from qkov.cli.main import main
if __name__ == "__main__":
    main(["reproduce", "--out", {out!r}, "--workers", "1", "--no-progress"], obj={{"stages": fault_stages()}})
"""


class Reproduce:
    """`qkov reproduce --out OUT` on the fault stage in a subprocess of its own session (own process group)."""

    def __init__(self, tmp: Path, out: Path):
        script = tmp / "driver.py"
        script.write_text(DRIVER.format(paths=PATHS, out=str(out)))
        self.out = out
        self.proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env=child_env(),
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
