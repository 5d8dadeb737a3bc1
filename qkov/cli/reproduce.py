"""``qkov reproduce``: the whole study (derive -> simulate -> validate synthetic -> validate real)
as independent runs on Dask, resumable, ending in one report.

Everything is validated before anything is written: a bad option is a
:class:`qkov.core.config.ConfigError` (one line, exit status 2, no files), and so is a ``--scheduler``
that does not answer as a Dask scheduler within 10 s (:mod:`qkov.study.connect`). ``--out`` has one owner
at a time (:func:`qkov.core.lock.results_lock`): a second writer exits 2 at once naming the holder. Runs
already complete under ``--out`` are reused, half-written ones are redone (see :mod:`qkov.study.engine`).
A run that fails (disk full, read-only or vanished ``--out``, a worker out of memory) is listed with a
one-line reason; the report is still built from the complete runs, or one line says why it could not be
written. The last line printed is ``report: <path of report.html>``.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from qkov.cli.executor import scheduler_option
from qkov.cli.options import device_option, out_option
from qkov.cli.support import CONTEXT_SETTINGS, injected
from qkov.core.config import ConfigError, as_choice_list, clip, field_error
from qkov.study.stages import STAGE_NAMES


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--quick/--full", default=True, help="Quick subsampled study (default, minutes) or the paper-scale one.")
@out_option()
@click.option("--data-dir", type=str, default=None, help="Real-data directory (else $QKOV_DATA_DIR).")
@scheduler_option("Address of an existing Dask scheduler (tcp://host:8786); default: a local cluster.")
@click.option("--workers", type=str, default=None, help="Worker processes of the local cluster [default: CPU count].")
@click.option("--retries", type=str, default="2", show_default=True, help="Resubmissions of a failed or lost run.")
@click.option("--stages", type=str, default="all", show_default=True,
              help="Comma-separated stages to run: derive, simulate, synthetic, real (or all).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar over runs.")
@device_option(default=None)
def reproduce(quick: bool, out: Path, data_dir: str | None, scheduler: str | None, workers: str | None,
              retries: str, stages: str, progress: bool, device: str | None, bf16: bool) -> None:
    """Run every stage of the study that exists, resumably, and build the report."""
    from qkov.study.reproduce_study import reproduce as run_study

    if device is None:  # the environment is read here, at the edge, once: runs get the device in their context
        device = _device_from_env()
    study = injected("stages")  # the registry's stages unless the caller passed others (tests: fake stages)
    names = STAGE_NAMES if study is None else tuple(s.name for s in study)
    result = run_study("quick" if quick else "full", out, data_dir=data_dir, scheduler=scheduler, workers=workers,
                       retries=retries, only=as_choice_list("stages", stages, names), stages=study,
                       progress=progress, echo=click.echo, device=device, bf16=bf16)
    if result.report is None:
        failed = f"{len(result.failed)} runs failed and " if result.failed else ""
        raise click.ClickException(f"{failed}the report could not be written; fix the cause and rerun the same "
                                   "command, complete runs are kept")
    if result.failed:
        raise click.ClickException(f"{len(result.failed)} runs failed (listed above); rerun the same command "
                                   "to retry them, finished runs are kept")


def _device_from_env() -> str | None:
    """``$QKOV_DEVICE`` (None if unset or empty), refused in one line naming the variable when it is no device
    spelling, before anything starts (``QKOV_DEVICE=garbage`` once failed 24 runs in 25 lines)."""
    text = os.environ.get("QKOV_DEVICE") or None
    if text is not None:
        from validation.device import DeviceError, parse_device

        try:
            parse_device(text)
        except DeviceError as exc:
            raise field_error("device", clip(text, 80), f"{exc.why} (from $QKOV_DEVICE)") from None
    return text


__all__ = ["reproduce", "ConfigError"]
