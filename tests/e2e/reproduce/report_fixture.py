"""Build a study's results in-process (no Dask) from the fake stages, for the report tests."""

from __future__ import annotations

from pathlib import Path

from qkov.study import engine

from tests.e2e.reproduce.fakestudy import FAKE_STAGES


def fake_stages() -> tuple[engine.Stage, ...]:
    """The fake study's stages (engine Stage objects)."""
    return FAKE_STAGES


def build_fake_results(out: Path, data_dir: Path | None) -> engine.StudyPlan:
    """Plan the fake study into ``out`` and execute every run sequentially."""
    plan = engine.plan_study(out, True, data_dir, fake_stages())
    for run in plan.runs:
        run.execute(run.kind, run.config, run.run_dir)
    return plan


def add_figure2_runs(out: Path) -> None:
    """Four fake ``figure2`` runs (one per parametrization) with the metrics the Figure 2 grid reads."""
    import numpy as np

    from tests.e2e.reproduce.fakestudy.common import write_run
    from theory.parametrization import PARAMETRIZATIONS

    for i, p in enumerate(PARAMETRIZATIONS):
        rng = np.random.default_rng(i)
        settings = [{"name": n, "lr_qk": lq, "lr_ov": 0.1, "dtap_percent": (100 * (g := rng.random((5, 5))) / g.sum()).tolist()}
                    for n, lq in (("equal rates", 0.1), ("faster QK", 2.0))]
        write_run("figure2", {"param": p, "seed": 1234}, out / "runs" / f"figure2-fake{i}",
                  metrics={"param": p, "seeds": [1234], "wall_s": 40.0, "settings": settings},
                  figure="figure2_dtap")
