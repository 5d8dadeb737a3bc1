"""A fault-injection study stage (same contract as ``qkov.study.*_stage``): instant runs, faults on request.

The plan is fixed (``QKOV_FAULT_RUNS`` runs, default 6, keyed by index and scratch directory only), so a
rerun after a fault is fixed plans the very same runs. What a run *does* is read at execution time from
``<scratch>/fault.json``, which a test edits between attempts:

- ``sleep``: seconds between a run's first file and the rest (so faults land mid-run);
- ``payload``: bytes of ``payload.bin`` each run writes (disk-full tests);
- ``oom``: run indices that raise ``MemoryError`` (a worker out of memory, Python side);
- ``die``: run indices whose worker process SIGKILLs itself every time (what the kernel's OOM killer does);
- ``die_once``: run indices whose worker SIGKILLs itself the first time only.

Each execution appends the worker's PID to ``<scratch>/counts/<run dir name>``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np

from qkov.core.runstore import RunWriter

KIND = "fault"


def study_runs(quick, data_dir):
    scratch = os.environ.get("QKOV_FAULT_DIR", "")
    return [(KIND, {"index": i, "scratch": scratch}) for i in range(int(os.environ.get("QKOV_FAULT_RUNS", "6")))]


def behaviour(scratch: str) -> dict:
    """The faults requested now (``<scratch>/fault.json``; empty when there is none)."""
    try:
        return json.loads((Path(scratch) / "fault.json").read_text())
    except (OSError, ValueError):
        return {}


def set_behaviour(scratch: Path, **faults) -> None:
    """Request faults for the next executions (the test side of :func:`behaviour`)."""
    (Path(scratch) / "fault.json").write_text(json.dumps(faults))


def executions(scratch: Path, name: str) -> int:
    """How many times run ``name`` started executing."""
    p = Path(scratch) / "counts" / name
    return len(p.read_text().splitlines()) if p.exists() else 0


def execute(kind: str, config: dict, run_dir: Path, ctx: object = None) -> None:
    scratch, i = config["scratch"], config["index"]
    b = behaviour(scratch)
    counts = Path(scratch) / "counts"
    counts.mkdir(parents=True, exist_ok=True)
    with open(counts / run_dir.name, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    if i in b.get("die", []):
        os.kill(os.getpid(), signal.SIGKILL)
    if i in b.get("die_once", []):
        marker = Path(scratch) / f"died-{run_dir.name}"
        if not marker.exists():
            marker.write_text("died once\n")
            os.kill(os.getpid(), signal.SIGKILL)
    if i in b.get("oom", []):
        raise MemoryError(f"fault injection: run {i} could not allocate its arrays")
    with RunWriter(run_dir, kind=kind, config=config, seed=i) as run:
        run.write_json("metrics.json", {"index": i, "value": float(np.random.default_rng(i).normal())})
        time.sleep(float(b.get("sleep", 0.0)))
        if b.get("payload"):
            run.write_bytes("payload.bin", np.random.default_rng(i).bytes(int(b["payload"])))
        run.write_json("claims.json", {"growth-rates": {"verdict": "supports", "evidence": f"fault run {i}"}})
