"""The real-data stage of ``qkov reproduce`` (contract in ``docs/architecture.md``).

One run = one ``(dataset, ratio, seed, optimizer, model)`` with the dataset's default settings.
Quick: the small models, AdamW, ratios ``QUICK_RATIOS`` (1, an intermediate one and the paper's;
SQuAD 1 and 20) x seeds {0, 1, 2}, subsampled data. Full: the paper models with the paper's
optimizer, ratios ``RATIOS`` (including the paper's 30 / 100 / 20) x seeds {0..4} on the full splits.
"""

from __future__ import annotations

from pathlib import Path

import json
import warnings

from qkov.core.config import parse_config
from qkov.core.runstore import RESUME_DIR, RUNS_DIR, RunWriter
from qkov.study.context import DEFAULT_CONTEXT, RunContext

from validation.real.config import DATASETS, RealRunConfig, default_config, default_ratios, default_seeds
from validation.real import datasets, resume
from validation.real.errors import DataError
from validation.real.glove import GloveMissingWarning, glove_missing
from validation.real.run import load_dataset, train_and_evaluate, train_and_evaluate_many

KIND = "validate-real"
NO_DATA = "real data: no data directory (give --data-dir or set $QKOV_DATA_DIR; see docs/data.md)"


def missing_data(dataset: str, data_dir: Path) -> str | None:
    """``None`` when the files of ``dataset`` are there, else one line saying what is wrong or what to fetch
    (:meth:`validation.real.datasets.Dataset.missing`).

    A directory, symlink loop or empty file in place of a data file is named as such (not as
    "missing"); the records themselves are validated when the dataset is loaded.
    """
    try:
        entry = datasets.get(dataset)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    return entry.missing(Path(data_dir))


def sweep_configs(datasets, ratios, seeds, optimizers, quick: bool, data_dir: Path,
                  **overrides) -> list[RealRunConfig]:
    """Every run configuration of a sweep, datasets outermost (``data_dir`` made absolute, so a
    run does not depend on the working directory of the process that executes it). ``ratios``,
    ``seeds`` or ``optimizers`` ``None`` take each dataset's defaults; ``overrides`` (e.g. ``model``,
    ``param``, ``layers``) replace dataset defaults in every run."""
    data_dir = Path(data_dir).resolve()
    out = []
    for ds in datasets:
        preset = overrides.get("preset", "sized")
        rs = ratios if ratios is not None else default_ratios(ds, quick, overrides.get("model"), preset)
        ss = seeds if seeds is not None else default_seeds(quick, overrides.get("model"), preset)
        for opt in (optimizers if optimizers is not None else (None,)):
            for r in rs:
                for s in ss:
                    out.append(default_config(ds, ratio=float(r), seed=int(s), optimizer=opt, quick=quick,
                                              data_dir=str(data_dir), **overrides))
    return out


def check_data_dir(data_dir: Path | None) -> list[str]:
    """The datasets present under a given data directory; a :class:`DataError` (one line, the CLI exits 2)
    when a directory is given (``--data-dir`` or ``$QKOV_DATA_DIR``) but holds none of them
    (``docs/data.md``: a data directory that lacks the files stops the command). ``None`` -> ``[]``."""
    if data_dir is None:
        return []
    d = Path(data_dir)
    if not d.is_dir():
        raise DataError(f"data-dir: {d}: is not a directory (see docs/data.md for the layout)")
    present = [ds for ds in DATASETS if missing_data(ds, d) is None]
    if not present:
        first = missing_data(DATASETS[0], d)
        raise DataError(f"data-dir: {d}: holds none of {', '.join(DATASETS)} (e.g. {first}); "
                        "fetch them with `qkov data fetch --data-dir DIR`, or give no data directory to skip real data")
    return present


def prevalidate(datasets_present: list[str], data_dir: Path) -> None:
    """Load and validate every record of each dataset (:func:`validation.real.run.load_dataset`), so a
    corrupted file is one :class:`DataError` line before any run starts, not one failure per run."""
    for ds in datasets_present:
        load_dataset(ds, str(Path(data_dir).resolve()))


def study_runs(quick: bool, data_dir: Path | None) -> list[tuple[str, dict]]:
    """(kind, config) of every real-data run whose data is present; none without a data directory.

    Called while the study is planned (before any work): a given data directory holding no dataset
    (:func:`check_data_dir`) or a present dataset with a bad record (:func:`prevalidate`) raises a
    :class:`DataError` here, which ``qkov reproduce`` prints as one line with exit status 2."""
    present = check_data_dir(data_dir)
    if not present or data_dir is None:  # check_data_dir(None) is []
        return []
    prevalidate(present, Path(data_dir))
    return [(KIND, c.to_json_dict()) for c in sweep_configs(present, None, None, None, quick, Path(data_dir))]


def skipped_runs(quick: bool, data_dir: Path | None) -> list[str]:
    """One line per dataset that is not run, with the reason; and, once, GloVe when a generation run is
    planned without it (its runs start from random embeddings; each worker's warning is silenced)."""
    if data_dir is None:
        return [NO_DATA]
    lines = [f"real data {ds}: {why}" for ds in DATASETS if (why := missing_data(ds, data_dir)) is not None]
    generation = [ds for ds in DATASETS if datasets.DATASETS[ds].task == "generation"
                  and missing_data(ds, data_dir) is None]
    if generation and (why := glove_missing()) is not None:
        lines.append(f"GloVe initialisation of {', '.join(generation)}: {why}")
    return lines


def execute(kind: str, config: dict, run_dir: Path, ctx: RunContext = DEFAULT_CONTEXT) -> None:
    """Perform one run (``kind`` must be :data:`KIND`) on ``ctx.device`` at ``ctx.precision`` (checked by
    whoever built the context: :func:`qkov.study.context.device_context`); torch threads are the engine's
    (``ctx.thread_scope``)."""
    if kind != KIND:
        raise ValueError(f"kind {kind!r}: qkov.study.real_stage runs only {KIND!r}")
    with warnings.catch_warnings():  # said once above the progress bar (skipped_runs), not once per run
        warnings.simplefilter("ignore", GloveMissingWarning)
        execute_run(parse_config(RealRunConfig, **config), Path(run_dir), kind=kind, progress=bool(ctx.progress),
                    device=ctx.device, bf16=ctx.bf16)


def execute_group(kind: str, configs: list[dict], run_dirs: list[Path], ctx: RunContext = DEFAULT_CONTEXT) -> None:
    """Perform the runs ``configs`` together (:func:`execute_runs_stacked`; one :func:`group_key`) on ``ctx.device``."""
    if kind != KIND:
        raise ValueError(f"kind {kind!r}: qkov.study.real_stage runs only {KIND!r}")
    execute_runs_stacked([parse_config(RealRunConfig, **c) for c in configs], [Path(d) for d in run_dirs], kind=kind,
                         device=ctx.device)




def training_state_path(run_dir: Path) -> Path:
    """Where run ``run_dir`` keeps its training state while it trains (:mod:`validation.real.resume`):
    ``OUT/resume/<run name>.pt`` for ``OUT/runs/<run name>`` (else ``<parent>/resume/<run name>.pt``). Outside
    the run directory, which the engine removes before it runs an incomplete run again and after a failure;
    nothing else is in ``OUT/resume/``, and the file goes once the run is written."""
    run_dir = Path(run_dir)
    out = run_dir.parent.parent if run_dir.parent.name == RUNS_DIR else run_dir.parent
    return out / RESUME_DIR / f"{run_dir.name}.pt"


def execute_run(cfg: RealRunConfig, run_dir: Path, *, kind: str = KIND, progress: bool = True,
                device: str = "cpu", bf16: bool = False) -> dict:
    """Perform one run and write it with :class:`RunWriter` (``metrics.json``, ``instances.npz``,
    ``eraser_results.jsonl``, ``eraser_annotations.jsonl``, ``eraser_docs.jsonl`` for classification,
    ``predictions.json`` for SQuAD). ``device`` and ``bf16`` (see :func:`validation.real.run.train_and_evaluate`)
    are recorded in ``manifest.json`` under ``"device"`` (and in ``metrics.json``), not in the config, so
    the run's directory is the same on every device. Resumable inside the run: the training state is written
    at the end of every epoch to :func:`training_state_path` (its directory checked for links before any work),
    an interrupted run started again continues after its last complete epoch, and the file is deleted once
    the run is written."""
    state = training_state_path(run_dir)
    resume.prepare_dir(state.parent)
    out = train_and_evaluate(cfg, progress=progress, device=device, bf16=bf16, resume=state)
    write_run(cfg, out, Path(run_dir), kind=kind)
    resume.remove(state)
    return out["metrics"]


def execute_runs_stacked(cfgs: list[RealRunConfig], run_dirs: list[Path], *, kind: str = KIND,
                         device: str = "cpu") -> list[dict]:
    """Train the runs ``cfgs`` together in this process (:func:`validation.real.run.train_and_evaluate_many`;
    they must share everything but ratio, seed and recipe) and write each to its own directory."""
    outs = train_and_evaluate_many(list(cfgs), device=device)
    for cfg, out, d in zip(cfgs, outs, run_dirs):
        write_run(cfg, out, Path(d), kind=kind)
    return [o["metrics"] for o in outs]


def group_key(kind: str, config: dict) -> str:
    """What runs trained together must share: the config without ``ratio``, ``seed`` and ``recipe`` (JSON text)."""
    d = dict(config)
    for k in ("ratio", "seed", "recipe"):
        d.pop(k, None)
    return json.dumps(d, sort_keys=True)


def stack_groups(cfgs: list[RealRunConfig]) -> list[list[int]]:
    """Indices of ``cfgs`` grouped by :func:`group_key` (the runs that :func:`execute_runs_stacked` can train
    together), in first-seen order."""
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(cfgs):
        groups.setdefault(group_key(KIND, c.to_json_dict()), []).append(i)
    return list(groups.values())


def write_run(cfg: RealRunConfig, out: dict, run_dir: Path, *, kind: str = KIND) -> None:
    """Write one run's results (``out`` from ``train_and_evaluate``) into ``run_dir``, ``COMPLETE`` last."""
    with RunWriter(run_dir, kind=kind, config=cfg.to_json_dict(), seed=cfg.seed,
                   manifest_extra={"device": out["metrics"]["device"], "recipe": cfg.recipe,
                                   "stacked_runs": out["metrics"].get("stacked_runs", 1),
                                   "resumed_from_epoch": out["metrics"].get("resumed_from_epoch"),
                                   "fused_adamw": cfg.fused,
                                   # where the run's time went (issue 34: checkpoints must not outweigh training)
                                   "seconds": {"training": out["metrics"].get("train_seconds"),
                                               "checkpoints": out["metrics"].get("checkpoint_seconds")}}) as run:
        run.write_json("metrics.json", out["metrics"])
        run.write_arrays("instances.npz", **out["arrays"])
        for name, obj in out["extras"].items():
            run.write_json(name, obj)
        if out["eraser"] is not None:
            run.write_text("eraser_results.jsonl", "".join(json.dumps(r) + "\n" for r in out["eraser"]))
        for name, text in out.get("extras_text", {}).items():  # ERASER data side: see export_eraser_data_dir
            run.write_text(name, text)
