"""Build a study's results in-process (no Dask) from the fake stages, for the report tests."""

from __future__ import annotations

from pathlib import Path

from qkov.study import engine

from fakestudy import FAKE_STAGES


def fake_stages() -> tuple[engine.Stage, ...]:
    """The fake study's stages (engine Stage objects)."""
    return FAKE_STAGES


def build_fake_results(out: Path, data_dir: Path | None) -> engine.StudyPlan:
    """Plan the fake study into ``out`` and execute every run sequentially."""
    plan = engine.plan_study(out, True, data_dir, fake_stages())
    for run in plan.runs:
        run.execute(run.kind, run.config, run.run_dir)
    return plan
