"""``qkov data fetch`` and ``qkov data check``: get the real-data sets and verify a data directory.

Thin command layer over :mod:`validation.real.fetch` (which does the work and never prints).
Bad input and failures: one line ``qkov: error: ...`` on stderr, exit status 2.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from qkov.cli.support import CONTEXT_SETTINGS

from validation.real import fetch as _fetch
from validation.real.fetch import COUNTS, SOURCES, FetchError, check, fetch


def _fail(message: str) -> None:
    """One line ``qkov: error: <message>`` and exit 2 (``--data-dir: x: ...`` is shown as ``data-dir: x: ...``)."""
    line = message.removeprefix("--")
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)  # one line, whatever a path holds
    click.echo(f"qkov: error: {line}", err=True)
    raise SystemExit(2)


def _data_dir(value: str | None) -> Path:
    from qkov.core.config import ConfigError, check_path

    if value is not None and value.strip() == "":
        _fail("--data-dir: '': must be a directory path, not empty")
    raw = value or os.environ.get("QKOV_DATA_DIR")
    if not raw:
        _fail("--data-dir: (none): give a directory or set QKOV_DATA_DIR")
    try:
        path = check_path("data-dir", raw)  # a component over 255 bytes: one line, not ENAMETOOLONG
    except ConfigError as exc:
        _fail(str(exc))
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
@click.option("--mirror", default=None, metavar="URL",
              help="Fetch every file from URL/<path in the data directory> instead of the official hosts "
                   "(default: $QKOV_DATA_MIRROR). The pinned checksums are checked all the same.")
@click.option("--deadline", default=3600.0, type=float, metavar="SECONDS", show_default=True,
              help="Give up (keeping what was downloaded, to resume) when the whole fetch takes longer.")
def fetch_cmd(datasets: tuple[str, ...], data_dir: str | None, required_only: bool, mirror: str | None,
              deadline: float) -> None:
    """Download, verify (SHA-256) and place each file; resumes interrupted downloads."""
    import math

    root = _data_dir(data_dir)
    names = _datasets(datasets)
    if not (math.isfinite(deadline) and deadline > 0):
        _fail(f"--deadline: {deadline}: must be a positive number of seconds")
    mirror = mirror if mirror is not None else (os.environ.get(_fetch.MIRROR_ENV) or None)
    try:
        if mirror is not None:
            _fetch.check_mirror(mirror)
    except FetchError as exc:
        _fail(str(exc))
    try:
        done = fetch(root, names, include_optional=not required_only, sources=SOURCES, counts=COUNTS,
                     mirror=mirror, deadline=deadline)
    except FetchError as exc:
        _fail(str(exc).splitlines()[0])
    except OSError as exc:  # a filesystem error the downloader did not foresee: still one line
        _fail(f"{exc.filename or root}: {exc.strerror or exc}")
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
    except (FetchError, OSError, ValueError, RecursionError) as exc:
        _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    for r in results:
        click.echo(f"{r.status:13} {r.dataset:10} {r.path}  {r.detail}")
    bad = [r for r in results if not r.ok]
    if bad:
        _fail(f"--data-dir: {root}: {len(bad)} of {len(results)} entries failed the check "
              f"(first: {bad[0].path}: {bad[0].status}); "
              + ("run `qkov data fetch`" if bad[0].status in ("missing", "bad checksum", "bad count", "unreadable")
                 else "move that entry away, then run `qkov data fetch`"))
