"""Shared behaviour of the fake stages (see the package docstring)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

from qkov.core.runstore import RunWriter


def behaviour() -> dict[str, Any]:
    """The test behaviour requested through the environment, as plain JSON."""
    return {
        "scratch": os.environ.get("QKOV_FAKE_DIR", ""),
        "sleep": float(os.environ.get("QKOV_FAKE_SLEEP", "0")),
        "kill": os.environ.get("QKOV_FAKE_KILL") == "1",
        "fail": os.environ.get("QKOV_FAKE_FAIL") == "1",
    }


def count_path(scratch: str, run_dir: Path) -> Path:
    """Where executions of ``run_dir`` are counted."""
    return Path(scratch) / "counts" / run_dir.name


def executions(scratch: str | Path, name: str) -> int:
    """How many times run ``name`` was executed."""
    p = Path(scratch) / "counts" / name
    return len(p.read_text().splitlines()) if p.exists() else 0


def before_writing(config: dict[str, Any], run_dir: Path) -> None:
    """Count the execution; kill the worker or raise when the config asks for it."""
    b = config.get("behaviour", {})
    if b.get("scratch"):
        p = count_path(b["scratch"], run_dir)
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    if config.get("kill_me") and b.get("scratch"):
        marker = Path(b["scratch"]) / f"killed-{run_dir.name}"
        if not marker.exists():
            marker.write_text("killed once\n")
            os.kill(os.getpid(), signal.SIGKILL)
    if config.get("fail_me"):
        raise RuntimeError("fake stage failure requested by QKOV_FAKE_FAIL")


def numbers(seed: int, n: int = 4) -> list[float]:
    """Deterministic 'results' of a seed."""
    return [float(x) for x in np.random.default_rng(seed).normal(size=n)]


def ev(claim: str, stage: str, verdict: str, numbers: str, figure: str = "", text: str = "") -> dict[str, str]:
    """One evidence entry of ``claims.json`` (qkov.study.claims.Evidence as JSON)."""
    return {"claim": claim, "stage": stage, "verdict": verdict, "numbers": numbers, "figure": figure, "text": text}


def write_run(kind: str, config: dict[str, Any], run_dir: Path, *, metrics: dict[str, Any],
              claims: list[dict[str, str]] | None = None, figure: str | None = None, extra: dict[str, Any] | None = None):
    """Write one run; sleeps (if asked) after the first file so an interrupt leaves it half-written."""
    before_writing(config, run_dir)
    with RunWriter(run_dir, kind=kind, config=config, seed=config.get("seed")) as run:
        run.write_json("metrics.json", metrics)
        time.sleep(config.get("behaviour", {}).get("sleep", 0.0))
        if claims is not None:
            run.write_json("claims.json", {"evidence": claims})
        for name, obj in (extra or {}).items():
            run.write_json(name, obj)
        if figure is not None:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(4, 3))
            if "dtap" in figure:
                grid = np.random.default_rng(config.get("seed", 0)).random((5, 5))
                im = ax.imshow(100 * grid / grid.sum(), origin="lower", extent=(0, 1, 0, 1), cmap="viridis")
                fig.colorbar(im, ax=ax, label="% of instances")
                ax.set_xlabel("attention on relevant tokens")
                ax.set_ylabel("p(true token)")
            else:
                t = np.linspace(0, 5, 50)
                ax.plot(t, np.log1p(t) * config.get("ratio", 1.0), label="theory")
                ax.plot(t, np.log1p(t) * config.get("ratio", 1.0) + 0.05, "--", label="training")
                ax.set_xlabel("t")
                ax.legend()
            run.write_figure(figure, fig)
            plt.close(fig)
