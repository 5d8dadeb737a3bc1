"""Study stage of the synthetic validation (docs/architecture.md): independent runs for ``qkov reproduce``.

Runs (kind ``synthetic``): full-batch GD on the exact population from the symmetric start (against
the ODE and closed forms), the same from a small random start, AdamW on the population, SGD on
sampled data and SGD on the paper's Figure-2 preset. Quick mode shortens each run so the stage takes
about a minute on 2 cores; each run writes ``claims.json`` for the ids it tests.
"""

from __future__ import annotations

import pathlib

from qkov.core.config import parse_config
from qkov.core.runstore import RunWriter
from validation.synthetic.experiment import SyntheticConfig, run_grid
from validation.synthetic.report import write_run


def study_runs(quick: bool, data_dir: pathlib.Path | None) -> list[tuple[str, dict]]:
    """The ``(kind, config)`` pairs of the stage; configs are plain JSON data with their seed."""
    s = 1 if quick else 8
    ratios = (1.0, 10.0) if quick else (1.0, 3.0, 10.0, 30.0)
    cfgs = [
        SyntheticConfig(ratios=ratios, steps=1000 * s, log_every=20 * s, dt=0.05),
        SyntheticConfig(ratios=ratios, init="random", init_std=0.05, steps=1000 * s, log_every=20 * s),
        SyntheticConfig(ratios=ratios, optimizer="adamw", dt=0.01, steps=500 * s, log_every=10 * s),
        SyntheticConfig(ratios=ratios, data="sampled", optimizer="sgd", init="random", init_std=0.1,
                        steps=400 * s, log_every=20 * s, test_size=1000),
        SyntheticConfig(ratios=ratios, data="paper", optimizer="sgd", dt=0.5, float64=False,
                        steps=100 * s * s, log_every=10 * s, test_size=500),
    ]
    return [("synthetic", c.to_json_dict()) for c in cfgs]


def execute(kind: str, config: dict, run_dir: pathlib.Path) -> None:
    """Perform one run of :func:`study_runs` into ``run_dir``."""
    if kind != "synthetic":
        raise ValueError(f"kind {kind!r}: qkov.study.synthetic_stage only runs 'synthetic'")
    cfg = parse_config(SyntheticConfig, **config)
    runs = run_grid(cfg, progress=False)
    with RunWriter(run_dir, kind=kind, config=config, seed=cfg.seed) as run:
        write_run(cfg, runs, run)
