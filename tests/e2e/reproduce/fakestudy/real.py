"""Fake real-data stage: runs only with a data directory; otherwise says what it skipped."""

from __future__ import annotations

from pathlib import Path

from .common import behaviour, ev, numbers, write_run


def study_runs(quick, data_dir):
    if data_dir is None:
        return []
    return [("real-sva", {"dataset": "sva", "ratio": r, "seed": s, "behaviour": behaviour()})
            for r in (1.0, 30.0) for s in (1, 2, 3)]


def skipped_runs(quick, data_dir):
    if data_dir is None:
        return ["real-sva (6 runs): no data directory"]
    return []


def execute(kind: str, config: dict, run_dir: Path, ctx: object = None) -> None:
    x = numbers(config["seed"])
    write_run(kind, config, run_dir, metrics={"accuracy": 0.9 + x[0] / 100, "ac": 0.1 * config["ratio"] ** 0.3},
              claims=[ev("real-data", "real", "supports", "AC rises with the ratio", "dtap_real")], figure="dtap_real")
