"""Read the run directories of a study (``<out>/runs/*``) into :class:`RunRecord` objects.

Only complete runs (:func:`qkov.core.runstore.is_complete`) are read; the others are
listed as incomplete so the report can say so. A run's stage comes from the engine's
summary (``<out>/reproduce.json``) when there is one, else from its kind.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from qkov.core.runstore import COMPLETE_MARKER, is_complete

STAGE_ORDER: tuple[str, ...] = ("derive", "simulate", "synthetic", "real")
STAGE_TITLES: dict[str, str] = {
    "derive": "derivation", "simulate": "simulation", "synthetic": "synthetic training",
    "real": "real data", "other": "other runs",
}
_RESERVED = {"config.json", "manifest.json", "claims.json", "derivation.json", COMPLETE_MARKER}


@dataclasses.dataclass
class Figure:
    """One figure of a run: ``stem`` with its PNG and/or SVG file."""

    stem: str
    png: Path | None
    svg: Path | None

    @property
    def is_dtap(self) -> bool:
        """True for a DTAP heatmap (attention mass x true-token probability histogram)."""
        return "dtap" in self.stem.lower()


@dataclasses.dataclass
class RunRecord:
    """A complete run as the report sees it."""

    path: Path
    kind: str
    stage: str
    config: dict[str, Any]
    manifest: dict[str, Any]
    metrics: dict[str, Any]
    claims: dict[str, Any]
    derivation: dict[str, Any] | None
    figures: list[Figure]

    @property
    def name(self) -> str:
        """The run directory's name, ``<kind>-<key>``."""
        return self.path.name


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"run file {path}: not readable JSON ({exc})") from None


def stage_of_kind(kind: str) -> str:
    """Best guess of a run's stage from its kind, used when no engine summary exists."""
    k = kind.lower()
    if k.startswith(("derive", "theory")) or "derivation" in k:
        return "derive"
    if k.startswith("sim") or "simulat" in k:
        return "simulate"
    if "synthetic" in k or k.startswith("synth"):
        return "synthetic"
    if re.search(r"real|hatexplain|sva|squad", k):
        return "real"
    return "other"


def _stage_map(out: Path) -> dict[str, str]:
    summary = out / "reproduce.json"
    if not summary.is_file():
        return {}
    try:
        data = json.loads(summary.read_text())
        return {r["name"]: r["stage"] for r in data.get("runs", [])}
    except (ValueError, KeyError, TypeError):
        return {}


def _listed(path: Path) -> set[str]:
    """The files ``COMPLETE`` lists (hash-checked by ``is_complete``); anything else in the run is ignored."""
    try:
        return set(json.loads((path / COMPLETE_MARKER).read_text())["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def _figures(path: Path) -> list[Figure]:
    listed = _listed(path)
    stems = sorted({p.stem for p in path.iterdir() if p.suffix in (".png", ".svg") and p.name in listed})
    return [Figure(s, path / f"{s}.png" if f"{s}.png" in listed else None,
                   path / f"{s}.svg" if f"{s}.svg" in listed else None) for s in stems]


def read_run(path: Path, stage: str | None = None) -> RunRecord:
    """Read one complete run directory."""
    config = _load_json(path / "config.json") if (path / "config.json").is_file() else {}
    manifest = _load_json(path / "manifest.json") if (path / "manifest.json").is_file() else {}
    kind = str(manifest.get("kind") or path.name.rsplit("-", 1)[0])
    metrics: dict[str, Any] = {}
    listed = _listed(path)
    for f in sorted(path.glob("*.json")):
        if f.name not in _RESERVED and f.name in listed:  # an extra file dropped in later is not a result
            metrics[f.stem] = _load_json(f)
    claims = _load_json(path / "claims.json") if (path / "claims.json").is_file() else {}
    derivation = _load_json(path / "derivation.json") if (path / "derivation.json").is_file() else None
    if derivation is not None and stage is None:
        stage = "derive"
    return RunRecord(path, kind, stage or stage_of_kind(kind), config, manifest, metrics,
                     claims if isinstance(claims, dict) else {}, derivation, _figures(path))


@dataclasses.dataclass
class StudyResults:
    """All complete runs of a study, the incomplete directories, and the engine summary."""

    out: Path
    runs: list[RunRecord]
    incomplete: list[str]
    summary: dict[str, Any] | None

    def stage(self, name: str) -> list[RunRecord]:
        """The runs of one stage, in directory order."""
        return [r for r in self.runs if r.stage == name]

    @property
    def derivation(self) -> dict[str, Any] | None:
        """The theory run's ``derivation.json`` (the first one found), if any."""
        for r in self.runs:
            if r.derivation is not None:
                return r.derivation
        return None


def collect_runs(out: str | Path) -> StudyResults:
    """Read every run under ``<out>/runs``; incomplete ones are listed, not read."""
    out = Path(out)
    runs_dir = out / "runs"
    stages = _stage_map(out)
    runs: list[RunRecord] = []
    incomplete: list[str] = []
    if runs_dir.is_dir():
        for path in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
            if not is_complete(path):
                incomplete.append(path.name)
                continue
            runs.append(read_run(path, stages.get(path.name)))
    summary = None
    if (out / "reproduce.json").is_file():
        try:
            summary = json.loads((out / "reproduce.json").read_text())
        except ValueError:
            summary = None
    order = {s: i for i, s in enumerate(STAGE_ORDER)}
    runs.sort(key=lambda r: (order.get(r.stage, len(order)), r.kind, r.name))
    return StudyResults(out, runs, incomplete, summary)
