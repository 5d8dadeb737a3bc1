"""Record sets: the committed, compact trace of the runs behind a published number (docs/records.md).

A record set is one file ``records/<set>.jsonl`` at the repository root: one JSON object per line, one line per
run, sorted by run name, written atomically. A :class:`Record` holds the run's name (its directory name,
``<kind>-<key>``), kind, configuration (``config.json`` verbatim), the compact metrics a registered extractor
(:data:`qkov.records.extractors.EXTRACTORS`) chose for its kind, and its provenance (from ``manifest.json``).
Floats are written with Python's shortest round-trip repr, so a statistic computed from a record equals the one
computed from the run directory bit for bit; a non-finite value is written as ``NaN``/``Infinity`` (Python's
JSON), as the run store writes it.

Only complete runs (:func:`qkov.core.runstore.completeness`) are exported; an incomplete or malformed run, or
one of a kind without an extractor, is skipped with a :class:`SkippedRun` warning naming it and why.
Nothing is read or written through a symbolic link.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import re
import stat
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping

from qkov.core.runstore import completeness, load_run
from theory.errors import InputError
from theory.files import atomic_write_bytes, read_nofollow

RECORDS_DIR = Path("records")
"""Where record sets live, relative to the repository root."""

SET_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\Z")
"""A set name: lowercase letters, digits and '-', 1-64 characters, not starting or ending with '-'."""

PROVENANCE_FIELDS = ("git_commit", "qkov_version", "torch", "python", "started", "finished", "wall_s", "machine")
RECORD_FIELDS = ("set", "run", "kind", "config", "metrics", "provenance")


class SkippedRun(UserWarning):
    """A run directory that :func:`export_runs` did not export (incomplete, malformed, no extractor)."""


@dataclasses.dataclass(frozen=True)
class Record:
    """One run's committed record: ``set``, ``run`` (``<kind>-<key>``), ``kind``, ``config`` (its config.json),
    ``metrics`` (the compact metrics of its kind's extractor) and ``provenance`` (:data:`PROVENANCE_FIELDS`)."""

    set: str
    run: str
    kind: str
    config: Mapping[str, Any]
    metrics: Mapping[str, Any]
    provenance: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in RECORD_FIELDS}

    @classmethod
    def from_json(cls, obj: Any) -> "Record":
        """Validate one JSON object; ``ValueError`` naming the field that is wrong."""
        if not isinstance(obj, dict) or set(obj) != set(RECORD_FIELDS):
            got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            raise ValueError(f"a record needs exactly the fields {', '.join(RECORD_FIELDS)} (got {got})")
        for name in ("set", "run", "kind"):
            if not isinstance(obj[name], str) or not obj[name]:
                raise ValueError(f"record {name}: {obj[name]!r:.60}: must be a non-empty string")
        for name in ("config", "metrics", "provenance"):
            if not isinstance(obj[name], dict):
                raise ValueError(f"record {obj['run']}: {name} must be an object")
        return cls(**{name: obj[name] for name in RECORD_FIELDS})


def check_set_name(name: str) -> str:
    """``name`` if it is a valid set name (:data:`SET_NAME`), else :class:`InputError` (one line, exit 2)."""
    if not isinstance(name, str) or not SET_NAME.match(name):
        raise InputError(f"set: {name!r}: a record set name is 1-64 lowercase letters, digits and '-' "
                         "(not starting or ending with '-')")
    return name


def set_path(set_name: str, root: str | os.PathLike[str] = RECORDS_DIR) -> Path:
    """``root/<set>.jsonl``."""
    return Path(root) / f"{check_set_name(set_name)}.jsonl"


def _check_root(root: Path, make: bool) -> None:
    """Refuse a records folder that is a symbolic link or not a directory; make it when ``make``."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        if make:
            root.mkdir(parents=True)
        return
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise InputError(f"records: {root}: must be a real directory (not a symbolic link); qkov never writes or "
                         "reads records through a link")


def _wall_seconds(started: Any, finished: Any) -> float | None:
    try:
        a, b = _dt.datetime.fromisoformat(str(started)), _dt.datetime.fromisoformat(str(finished))
    except ValueError:
        return None
    return (b - a).total_seconds()


def provenance(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The record's provenance from a run's ``manifest.json``: commit, versions, start and end (UTC ISO),
    ``wall_s`` (end - start, seconds at the manifest's resolution) and ``machine`` (platform, and the device a
    real-data run trained on)."""
    device = manifest.get("device")
    machine = str(manifest.get("platform") or "")
    if isinstance(device, dict) and device.get("name"):
        machine += f"; device {device['name']}"
    return {"git_commit": manifest.get("git_commit"), "qkov_version": manifest.get("qkov_version"),
            "torch": manifest.get("torch"), "python": manifest.get("python"), "started": manifest.get("started"),
            "finished": manifest.get("ended"), "wall_s": _wall_seconds(manifest.get("started"), manifest.get("ended")),
            "machine": machine}


def record_of(run_dir: str | os.PathLike[str], set_name: str) -> Record:
    """The record of the complete run ``run_dir``; ``ValueError`` (one line) when it is incomplete, malformed or
    of a kind without an extractor."""
    from qkov.records.extractors import EXTRACTORS

    run_dir = Path(run_dir)
    listing, why = completeness(run_dir)
    if listing is None:
        raise ValueError(f"incomplete ({why})")
    run = load_run(run_dir)
    kind = run.manifest.get("kind") if isinstance(run.manifest.get("kind"), str) else run.kind
    if kind not in EXTRACTORS:
        raise ValueError(f"kind {kind!r} has no record extractor (qkov.records.EXTRACTORS has {', '.join(EXTRACTORS)})")
    if not isinstance(run.config, dict):
        raise ValueError("config.json is not an object")
    try:
        metrics = EXTRACTORS[kind](run_dir)
    except (KeyError, TypeError, ValueError, OSError) as exc:
        raise ValueError(f"malformed {kind} run: {type(exc).__name__}: {exc}") from None
    return Record(set_name, run_dir.name, kind, run.config, metrics, provenance(run.manifest))


def _line(rec: Record) -> str:
    return json.dumps(rec.to_json(), sort_keys=True, separators=(",", ":"), allow_nan=True)


def export_runs(run_dirs: Iterable[str | os.PathLike[str]], set_name: str, root: str | os.PathLike[str] = RECORDS_DIR,
                *, kinds: Iterable[str] | None = None) -> Path:
    """Write the record set ``set_name`` (``root/<set>.jsonl``) from the complete runs among ``run_dirs``
    (restricted to ``kinds`` when given) and return its path. The set is replaced, not merged: it holds exactly
    the runs exported now. A run that is incomplete, malformed or of a kind without an extractor is skipped with
    a :class:`SkippedRun` warning naming it; two runs of one name (copies in two results directories) count once
    (a warning when their records differ). ``InputError`` for a bad set name, an unknown kind or a records folder
    that is a link, before anything is written; ``ValueError`` when no run is left to export (nothing written)."""
    from qkov.records.extractors import DERIVED_KINDS, EXTRACTORS

    check_set_name(set_name)
    wanted = None if kinds is None else tuple(kinds)
    for k in wanted or ():
        if k not in EXTRACTORS:
            raise InputError(f"kind: {k!r}: not a kind with a record extractor ({', '.join(EXTRACTORS)})")
    root = Path(root)
    _check_root(root, make=False)
    records: dict[str, Record] = {}
    for d in map(Path, run_dirs):
        if wanted is not None and not any(d.name.startswith(f"{k}-") and len(d.name) == len(k) + 13 for k in wanted):
            continue
        if any(d.name.startswith(f"{k}-") for k in DERIVED_KINDS):
            continue
        try:
            rec = record_of(d, set_name)
        except ValueError as exc:
            warnings.warn(f"{d}: not exported: {exc}", SkippedRun, stacklevel=2)
            continue
        if wanted is not None and rec.kind not in wanted:
            continue
        if rec.run in records:
            if _line(records[rec.run]) != _line(rec):
                warnings.warn(f"{d}: not exported: a run of the same name with other contents came first",
                              SkippedRun, stacklevel=2)
            continue
        records[rec.run] = rec
    if not records:
        raise ValueError(f"set {set_name}: no complete run to export (nothing written)")
    _check_root(root, make=True)
    text = "".join(_line(records[name]) + "\n" for name in sorted(records))
    return atomic_write_bytes(set_path(set_name, root), text.encode(), parents=False)


def load_set(set_name: str, root: str | os.PathLike[str] = RECORDS_DIR) -> list[Record]:
    """The records of set ``set_name`` in file order (sorted by run name); ``FileNotFoundError`` when the set does
    not exist, ``ValueError`` naming ``file:line`` for a line that is not a record of this set."""
    root = Path(root)
    _check_root(root, make=False)
    path = set_path(set_name, root)
    text = read_nofollow(path).decode("utf-8")
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = Record.from_json(json.loads(line))
        except ValueError as exc:
            raise ValueError(f"{path}:{i}: {exc}") from None
        if rec.set != set_name:
            raise ValueError(f"{path}:{i}: record of set {rec.set!r} in set {set_name!r}")
        out.append(rec)
    return out


__all__ = ["RECORDS_DIR", "Record", "SkippedRun", "export_runs", "load_set", "record_of", "set_path",
           "check_set_name", "provenance"]
