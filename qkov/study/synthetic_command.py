"""The body of ``qkov validate synthetic`` as library calls: the presets of each data kind, and one run.

:func:`build_config` fills what the user left out from the presets (:data:`DEFAULT_STEPS`,
:data:`DEFAULT_DT`, the paper data's settings); :func:`validate_synthetic` trains the grid and writes
``OUT/runs/synthetic-<key>/`` holding ``OUT``'s lock (taken before training), through the study engine
(:func:`run_one`: the run is planned and executed like a study's by :func:`qkov.study.command_run.run_command`,
in this process by default, on Dask when asked), with the same stage code (:func:`qkov.study.synthetic_stage.execute`).
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
                 init: str | None, seed: int, K: int, M: int, weight_decay: float = 0.0) -> SyntheticConfig:
    """Validated :class:`SyntheticConfig` from parsed options (``ConfigError`` names the bad field).

    ``steps``/``dt``/``init`` left as ``None`` take the defaults of ``data`` and ``optimizer``; ``weight_decay``:
    AdamW's (refused for another optimizer, which has none).
    """
    if weight_decay and optimizer != "adamw":
        raise field_error("weight-decay", weight_decay, f"does not apply to --optimizer {optimizer} (only to adamw)")
    init = init or ("symmetric" if data in ("population", "paper") else "random")
    if data == "sampled" and init == "symmetric":
        raise field_error("init", "symmetric", "sampled data needs 'random' (its vocabulary is not MODEL.md's)")
    extra = dict(PAPER_DATA) if data == "paper" else {}
    steps = DEFAULT_STEPS[data] if steps is None else steps
    values: dict[str, Any] = {"params": tuple(params), "ratios": tuple(ratios), "data": data, "optimizer": optimizer, "init": init,
              "steps": steps, "seed": seed, "K": K, "M": M,
              "dt": extra.pop("dt", DEFAULT_DT[optimizer]) if dt is None else dt, **extra}
    if weight_decay:
        values["weight_decay"] = weight_decay
    values["log_every"] = max(1, steps // 200)
    return parse_config(SyntheticConfig, **values)


@dataclasses.dataclass(frozen=True)
class SyntheticRunResult:
    """What :func:`validate_synthetic` wrote: the run directory, its metrics and its claim evidence."""

    run_dir: Path
    metrics: dict[str, Any]
    evidence: list


def run_one(kind: str, config: dict[str, Any], out: Path, progress: bool | None, executor: Any = None,
            scheduler: str | None = None, workers: int | None = None) -> Path:
    """Plan the run ``(kind, config)`` into ``out`` and execute it through the study engine
    (:func:`qkov.study.command_run.run_command`: ``out``'s lock taken before training, a complete run reused,
    in this process unless ``executor``, ``scheduler`` or ``workers`` say otherwise). Returns its directory;
    a failed run raises :class:`qkov.study.engine.RunsFailed`."""
    from qkov.study.command_run import run_command

    return run_command(kind, config, out, "qkov validate synthetic", progress=progress, executor=executor,
                       scheduler=scheduler, workers=workers).run_dir


def validate_synthetic(cfg: SyntheticConfig, out: Path, progress: bool | None = None, *, executor: Any = None,
                       scheduler: str | None = None, workers: int | None = None) -> SyntheticRunResult:
    """Train every (parametrization, ratio) of ``cfg`` and write the run ``out/runs/synthetic-<key>/`` through the
    study engine (:func:`run_one`: in this process by default; a complete run is reused); return what it holds."""
    from qkov.core.runstore import load_run
    from qkov.study.claims import CLAIMS_FILE, read_evidence

    run_dir = run_one("synthetic", cfg.to_json_dict(), out, progress, executor, scheduler, workers)
    run = load_run(run_dir)
    return SyntheticRunResult(run_dir, run.metrics, read_evidence(run.json.get(CLAIMS_FILE, {}))[0])


def validate_optimizer_map(params, ratios, data: str, optimizer: str, steps: int | None, dt: float | None,
                           init: str | None, seed: int, K: int, M: int, out: Path, betas: tuple[float, float],
                           eps: float, weight_decay: float, u0: float = 0.5, v0: float = 0.5,
                           levels: tuple[float, ...] = (), stop_loss: float | None = None, *, executor: Any = None,
                           scheduler: str | None = None, workers: int | None = None) -> tuple[Path, list[dict]]:
    """``validate synthetic --optimizer adam|momentum``: from the symmetric start, the measured ``1 - p`` and the
    distance from the symmetric set at matched loss, against the optimizer's exact reduced map
    (:func:`validation.synthetic.adam_compare.optimizer_matched_loss`), from the symmetric start ``u0, v0``, at the
    matched losses ``levels`` (empty: chosen inside the runs' range; then with the broken-set prediction), each run
    stopping below ``stop_loss`` (default the lowest level; default steps 1000, or 200000 with ``levels``).
    Planned and executed through the study engine (in process by default; ``executor``/``scheduler``/``workers``:
    Dask). Writes the run; returns ``(run_dir, runs)``."""
    from qkov.core.runstore import load_run

    if data != "population":
        raise field_error("data", data, f"--optimizer {optimizer} trains MODEL.md's population: use population")
    if init not in (None, "symmetric"):
        raise field_error("init", init, f"--optimizer {optimizer} starts on the symmetric set: use symmetric")
    from qkov.study import optimizer_run
    from validation.synthetic.optimizer_map_run import OptimizerMapConfig

    cfg = parse_config(OptimizerMapConfig, optimizer=optimizer, betas=tuple(betas), eps=eps,
                       weight_decay=weight_decay, params=tuple(params), ratios=tuple(ratios),
                       steps=(200_000 if levels else 1000) if steps is None else steps, dt=0.01 if dt is None else dt,
                       K=K, M=M, seed=seed, u0=u0, v0=v0, levels=tuple(levels), stop_loss=stop_loss)
    run_dir = run_one(optimizer_run.KIND, cfg.to_json_dict(), out, False, executor, scheduler, workers)
    res = load_run(run_dir).metrics["runs"]
    return run_dir, res


__all__ = ["validate_optimizer_map", "build_config", "validate_synthetic", "SyntheticRunResult", "DEFAULT_STEPS", "DEFAULT_DT", "PAPER_DATA"]
