"""``qkov data fetch`` and ``qkov data check``: get the real-data sets and verify a data directory.

Thin command layer over :mod:`validation.real.fetch` (which does the work and never prints).
Bad input and failures: one line ``qkov: error: ...`` on stderr, exit status 2.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from qkov.cli.support import CONTEXT_SETTINGS

from validation.real.fetch import COUNTS, SOURCES, FetchError, check, fetch


def _fail(message: str) -> None:
    """One line ``qkov: error: <message>`` and exit 2 (``--data-dir: x: ...`` is shown as ``data-dir: x: ...``)."""
    click.echo(f"qkov: error: {message.removeprefix('--')}", err=True)
    raise SystemExit(2)


def _data_dir(value: str | None) -> Path:
    raw = value or os.environ.get("QKOV_DATA_DIR")
    if not raw:
        _fail("--data-dir: (none): give a directory or set QKOV_DATA_DIR")
    path = Path(raw)
    if path.exists() and not path.is_dir():
        _fail(f"--data-dir: {raw}: must be a directory")
    return path


def _datasets(values: tuple[str, ...]) -> list[str] | None:
    bad = [v for v in values if v not in SOURCES]
    if bad:
        _fail(f"--dataset: {bad[0]}: must be one of {', '.join(SOURCES)}")
    return list(values) or None


@click.group("data", context_settings=CONTEXT_SETTINGS)
def data() -> None:
    """Get the real-data sets from their official sources and verify a data directory."""


@data.command("fetch", context_settings=CONTEXT_SETTINGS)
@click.option("--dataset", "datasets", multiple=True, metavar="NAME",
              help=f"Data set to fetch (repeatable): {', '.join(SOURCES)}. Default: all.")
@click.option("--data-dir", default=None, metavar="DIR",
              help="Where to put the files (default: $QKOV_DATA_DIR).")
@click.option("--required-only", is_flag=True,
              help="Skip files qkov does not read (the SQuAD training set).")
def fetch_cmd(datasets: tuple[str, ...], data_dir: str | None, required_only: bool) -> None:
    """Download, verify (SHA-256) and place each file; resumes interrupted downloads."""
    root = _data_dir(data_dir)
    names = _datasets(datasets)
    try:
        done = fetch(root, names, include_optional=not required_only, sources=SOURCES)
    except FetchError as exc:
        _fail(str(exc))
    for path, how in done:
        click.echo(f"{how:10} {path}")


@data.command("check", context_settings=CONTEXT_SETTINGS)
@click.option("--dataset", "datasets", multiple=True, metavar="NAME",
              help=f"Data set to check (repeatable): {', '.join(SOURCES)}. Default: all.")
@click.option("--data-dir", default=None, metavar="DIR", help="Data directory (default: $QKOV_DATA_DIR).")
def check_cmd(datasets: tuple[str, ...], data_dir: str | None) -> None:
    """Verify files, pinned checksums and record counts of a data directory."""
    root = _data_dir(data_dir)
    names = _datasets(datasets)
    if not root.is_dir():
        _fail(f"--data-dir: {root}: no such directory")
    try:
        results = check(root, names, sources=SOURCES, counts=COUNTS)
    except (FetchError, OSError, ValueError) as exc:
        _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    for r in results:
        click.echo(f"{r.status:13} {r.dataset:10} {r.path}  {r.detail}")
    bad = [r for r in results if not r.ok]
    if bad:
        _fail(f"--data-dir: {root}: {len(bad)} of {len(results)} entries failed the check "
              f"(first: {bad[0].path}: {bad[0].status}); run `qkov data fetch`")
