"""Runs of kind ``adam-phase``: one cell of the phase diagram of Adam's ratio effect off the symmetric set (issue 41).

Each run is one :class:`validation.synthetic.phase_diagram.AdamPhaseConfig` (a parametrization, ``K, M``, a
learning rate, its symmetric starts and ratios) and writes ``metrics.json``
(:func:`validation.synthetic.phase_diagram.phase_cell`: per start, ratio and matched loss the seeded ensemble's
P(de-sharpen) with its Wilson interval and the predicted probability, with their CPU times). No evidence: the
diagram is read from its records (``records/adam-phase.jsonl``, the tables of docs/synthetic-validation.md,
:mod:`qkov.docsgen.adam_tables`). :func:`run_phase_diagram` runs every cell of
:data:`~validation.synthetic.phase_diagram.PHASE_GRID` through the study engine, one run per cell: a complete run
is reused, so an interrupted diagram resumes where it stopped. ``qkov reproduce`` plans none of them.

    python -m qkov.study.adam_phase_run --out RESULTS [--only CACO] [--max-cells N]
"""

from __future__ import annotations

import argparse
import pathlib
import time
from typing import Any

from qkov.core.config import parse_config
from qkov.core.runstore import RunWriter
from validation.synthetic.experiment import torch_threads
from validation.synthetic.phase_diagram import PHASE_GRID, PHASE_PARAMS, AdamPhaseConfig, phase_cell

KIND = "adam-phase"


def study_configs(quick: bool) -> list[AdamPhaseConfig]:
    """None: the phase diagram is run on its own (:func:`run_phase_diagram`), not by ``qkov reproduce``."""
    return []


def execute(config: dict, run_dir: pathlib.Path) -> dict[str, Any]:
    """Train and predict one cell into ``run_dir`` (one thread: the models are tiny)."""
    cfg = parse_config(AdamPhaseConfig, **config)
    with torch_threads(1):
        metrics = phase_cell(cfg)
    with RunWriter(run_dir, kind=KIND, config=config, seed=cfg.seed) as run:
        run.write_json("metrics.json", metrics)
    return metrics


def run_phase_diagram(out: pathlib.Path, *, only: str | None = None, max_cells: int | None = None,
                      echo=print) -> list[pathlib.Path]:
    """Every cell of :data:`PHASE_GRID` (``only``: one parametrization's) as one ``adam-phase`` run under
    ``out/runs/`` through the study engine (complete runs reused); ``max_cells``: stop after that many cells were
    trained in this call (a piece of the diagram). Returns the run directories done so far, in grid order."""
    from qkov.study.command_run import run_command

    done, trained = [], 0
    for cfg in PHASE_GRID:
        if only and cfg.param != only:
            continue
        if max_cells is not None and trained >= max_cells:
            break
        t0 = time.perf_counter()
        res = run_command(KIND, cfg.to_json_dict(), out, "qkov adam phase diagram")
        trained += 0 if res.reused else 1
        echo(f"{cfg.label()}: {'reused' if res.reused else f'{time.perf_counter() - t0:.0f} s'} {res.run_dir}")
        done.append(res.run_dir)
    return done


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m qkov.study.adam_phase_run", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, required=True, help="results directory (runs under OUT/runs)")
    ap.add_argument("--only", choices=PHASE_PARAMS, default=None, help="one parametrization's cells")
    ap.add_argument("--max-cells", type=int, default=None, help="train at most this many cells in this call")
    a = ap.parse_args(argv)
    run_phase_diagram(a.out, only=a.only, max_cells=a.max_cells)


if __name__ == "__main__":
    main()


__all__ = ["KIND", "execute", "main", "run_phase_diagram", "study_configs"]
