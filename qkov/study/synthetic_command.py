"""The body of ``qkov validate synthetic`` as library calls: the presets of each data kind, and one run.

:func:`build_config` fills what the user left out from the presets (:data:`DEFAULT_STEPS`,
:data:`DEFAULT_DT`, the paper data's settings); :func:`validate_synthetic` trains the grid and writes
``OUT/runs/synthetic-<key>/`` holding ``OUT``'s lock (taken before training).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from qkov.core.config import field_error, parse_config
from validation.synthetic.experiment import SyntheticConfig

DEFAULT_STEPS = {"population": 4000, "sampled": 3000, "paper": 2000}
"""Steps per (param, ratio) when ``steps`` is not given."""
DEFAULT_DT = {"gd": 0.05, "sgd": 0.05, "adamw": 0.01}
"""Per-step rate multiplier ``dt`` (rates are eta * dt) when ``dt`` is not given."""
PAPER_DATA = {"eta_ov": 1.0, "dt": 0.5, "float64": False, "test_size": 1000}
"""What ``data="paper"`` (the paper's Figure 2 data) sets besides the defaults."""


def build_config(params, ratios, data: str, optimizer: str, steps: int | None, dt: float | None,
                 init: str | None, seed: int, K: int, M: int) -> SyntheticConfig:
    """Validated :class:`SyntheticConfig` from parsed options (``ConfigError`` names the bad field).

    ``steps``/``dt``/``init`` left as ``None`` take the defaults of ``data`` and ``optimizer``.
    """
    init = init or ("symmetric" if data in ("population", "paper") else "random")
    if data == "sampled" and init == "symmetric":
        raise field_error("init", "symmetric", "sampled data needs 'random' (its vocabulary is not MODEL.md's)")
    extra = dict(PAPER_DATA) if data == "paper" else {}
    steps = DEFAULT_STEPS[data] if steps is None else steps
    values = {"params": tuple(params), "ratios": tuple(ratios), "data": data, "optimizer": optimizer, "init": init,
              "steps": steps, "seed": seed, "K": K, "M": M,
              "dt": extra.pop("dt", DEFAULT_DT[optimizer]) if dt is None else dt, **extra}
    values["log_every"] = max(1, values["steps"] // 200)
    return parse_config(SyntheticConfig, **values)


@dataclasses.dataclass(frozen=True)
class SyntheticResult:
    """What :func:`validate_synthetic` wrote: the run directory, its metrics and its claim evidence."""

    run_dir: Path
    metrics: dict[str, Any]
    evidence: list


def validate_synthetic(cfg: SyntheticConfig, out: Path, progress: bool | None = None) -> SyntheticResult:
    """Train every (parametrization, ratio) of ``cfg`` and write the run ``out/runs/synthetic-<key>/``."""
    from qkov.core.lock import results_lock
    from qkov.core.runstore import RunWriter, run_dir_for
    from qkov.study.synthetic_stage import write_synthetic_run
    from validation.synthetic.experiment import run_grid

    config = cfg.to_json_dict()
    run_dir = run_dir_for(out, "synthetic", config)
    with results_lock(out, "qkov validate synthetic"):  # one writer per results directory, before training
        runs = run_grid(cfg, progress=progress)
        with RunWriter(run_dir, kind="synthetic", config=config, seed=cfg.seed) as run:
            res = write_synthetic_run(cfg, runs, run)
    return SyntheticResult(run_dir, res["metrics"], res["evidence"])


def validate_optimizer_map(params, ratios, data: str, optimizer: str, steps: int | None, dt: float | None,
                           init: str | None, seed: int, K: int, M: int, out: Path, betas: tuple[float, float],
                           eps: float, weight_decay: float, u0: float = 0.5, v0: float = 0.5,
                           levels: tuple[float, ...] = (), stop_loss: float | None = None) -> tuple[Path, list[dict]]:
    """``validate synthetic --optimizer adam|momentum``: from the symmetric start, the measured ``1 - p`` and the
    distance from the symmetric set at matched loss, against the optimizer's exact reduced map
    (:func:`validation.synthetic.adam_compare.optimizer_matched_loss`), from the symmetric start ``u0, v0``, at the
    matched losses ``levels`` (empty: chosen inside the runs' range; then with the broken-set prediction), each run
    stopping below ``stop_loss`` (default the lowest level; default steps 1000, or 200000 with ``levels``).
    Writes the run; returns ``(run_dir, runs)``."""
    from qkov.core.lock import results_lock
    from qkov.core.runstore import RunWriter, run_dir_for

    if data != "population":
        raise field_error("data", data, f"--optimizer {optimizer} trains MODEL.md's population: use population")
    if init not in (None, "symmetric"):
        raise field_error("init", init, f"--optimizer {optimizer} starts on the symmetric set: use symmetric")
    from qkov.study import optimizer_run
    from validation.synthetic.optimizer_map_run import OptimizerMapConfig, without_curves

    cfg = parse_config(OptimizerMapConfig, optimizer=optimizer, betas=tuple(betas), eps=eps,
                       weight_decay=weight_decay, params=tuple(params), ratios=tuple(ratios),
                       steps=(200_000 if levels else 1000) if steps is None else steps, dt=0.01 if dt is None else dt,
                       K=K, M=M, seed=seed, u0=u0, v0=v0, levels=tuple(levels), stop_loss=stop_loss)
    config = cfg.to_json_dict()
    run_dir = run_dir_for(out, optimizer_run.KIND, config)
    from validation.synthetic.experiment import torch_threads

    with results_lock(out, "qkov validate synthetic"):
        with torch_threads(1):   # as the study's runs: tiny float64 ops, where torch's threads only spin
            runs = cfg.data(curves=True)
        with RunWriter(run_dir, kind=optimizer_run.KIND, config=config, seed=seed) as run:
            optimizer_run.write_run(cfg, runs, run)
    res = without_curves(runs)
    return run_dir, res


__all__ = ["validate_optimizer_map", "build_config", "validate_synthetic", "SyntheticResult", "DEFAULT_STEPS", "DEFAULT_DT", "PAPER_DATA"]
