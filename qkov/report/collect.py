"""Read the run directories of a study (``<out>/runs/*``) into :class:`RunRecord` objects.

Only complete runs (:func:`qkov.core.runstore.completeness`, the one definition ``reproduce`` uses too)
are read, and of a complete run only the files its ``COMPLETE`` marker lists (with their SHA-256): a file
that is in the directory but not in that list is ignored -- never read, never named, and the run stays
complete. A run directory that is a symbolic link is never followed. The others are listed as incomplete,
with a one-line reason, so the report can say so. ``claims.json`` is parsed
into :class:`qkov.study.claims.Evidence` objects; entries that do not validate are listed as problems.
A run's stage comes from the engine's
summary (``<out>/reproduce.json``) when there is one, else from its kind.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from qkov.core.runstore import COMPLETE_MARKER, completeness
from qkov.study.claims import Evidence, read_evidence

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
    evidence: list[Evidence]
    derivation: dict[str, Any] | None
    figures: list[Figure]
    problems: list[str] = dataclasses.field(default_factory=list)

    def figure(self, stem: str) -> Figure | None:
        """The run's figure named ``stem``, if it has one."""
        return next((f for f in self.figures if f.stem == stem), None)

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
    if "synthetic" in k or k.startswith(("synth", "figure2", "adam")):
        return "synthetic"
    if "real" in k:  # validate-real, real-sweep-summary
        return "real"
    return "other"


_SUMMARY_KEYS: dict[str, type] = {"stages": list, "runs": list, "skipped": list, "cluster": str}


def read_summary(out: Path) -> tuple[dict[str, Any] | None, str]:
    """The engine summary ``<out>/reproduce.json`` as ``(summary, problem)``.

    Never through a symbolic link. A summary that is not an object, or whose known keys have the wrong
    type (``stages``/``runs``/``skipped`` lists, ``runs`` entries objects with string ``name``/``stage``)
    is dropped whole and ``problem`` says why in one line; ``(None, "")`` when there is no summary.
    """
    from qkov.core.runstore import read_nofollow

    path = out / "reproduce.json"
    try:
        raw = read_nofollow(path, 1 << 26)
    except FileNotFoundError:
        return None, ""
    except OSError:
        return None, "reproduce.json: not a readable regular file (ignored)"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None, "reproduce.json: not valid JSON (ignored)"
    if not isinstance(data, dict):
        return None, "reproduce.json: not a JSON object (ignored)"
    for key, kind in _SUMMARY_KEYS.items():
        if key in data and (not isinstance(data[key], kind) or isinstance(data[key], bool)):
            return None, f"reproduce.json: {key}: must be a {'list' if kind is list else 'string'} (ignored)"
    for st in data.get("stages", []):
        if not (isinstance(st, dict) and isinstance(st.get("name"), str)):
            return None, "reproduce.json: stages: each entry must be an object with a name (ignored)"
    for r in data.get("runs", []):
        if not (isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("stage"), str)):
            return None, "reproduce.json: runs: each entry must be an object with a name and a stage (ignored)"
    return data, ""


def _stage_map(summary: dict[str, Any] | None) -> dict[str, str]:
    return {r["name"]: r["stage"] for r in (summary or {}).get("runs", [])}


def listed_files(path: Path) -> set[str] | None:
    """Names the run's ``COMPLETE`` marker lists, when the run is complete (else None)."""
    listing, _ = completeness(path)
    return None if listing is None else set(listing)


def _figures(path: Path, listed: set[str]) -> list[Figure]:
    names = {n for n in listed if n.endswith((".png", ".svg")) and not n.startswith(".")}
    stems = sorted({n.rsplit(".", 1)[0] for n in names})
    return [Figure(s, path / f"{s}.png" if f"{s}.png" in names else None,
                   path / f"{s}.svg" if f"{s}.svg" in names else None) for s in stems]


def read_run(path: Path, stage: str | None = None, listed: set[str] | None = None) -> RunRecord:
    """Read one complete run directory: only the files its ``COMPLETE`` lists."""
    listed = (listed_files(path) or set()) if listed is None else listed

    def load(name: str) -> Any:
        return _load_json(path / name) if name in listed else None

    config = load("config.json") or {}
    manifest = load("manifest.json") or {}
    kind = str(manifest.get("kind") or path.name.rsplit("-", 1)[0]) if isinstance(manifest, dict) else path.name
    metrics: dict[str, Any] = {}
    for name in sorted(listed):
        if name.endswith(".json") and name not in _RESERVED:
            metrics[name[:-5]] = _load_json(path / name)
    evidence, problems = ([], []) if "claims.json" not in listed else read_evidence(load("claims.json"))
    derivation = load("derivation.json")
    if derivation is not None and not isinstance(derivation, dict):
        derivation, problems = None, problems + ["derivation.json: not an object"]
    if derivation is not None and stage is None:
        stage = "derive"
    stage = stage or stage_of_kind(kind)
    figures = _figures(path, listed)
    kept = []
    for e in evidence:
        if e.stage != stage:
            problems.append(f"evidence for {e.claim} names stage {e.stage} but the run belongs to {stage}")
        else:
            kept.append(e if not e.figure or any(f.stem == e.figure for f in figures)
                        else dataclasses.replace(e, figure=""))
    return RunRecord(path, kind, stage, config if isinstance(config, dict) else {},
                     manifest if isinstance(manifest, dict) else {}, metrics, kept, derivation, figures, problems)


@dataclasses.dataclass
class StudyResults:
    """All complete runs of a study, the incomplete directories, and the engine summary."""

    out: Path
    runs: list[RunRecord]
    incomplete: list[str]
    summary: dict[str, Any] | None
    unreadable: list[str] = dataclasses.field(default_factory=list)

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
    summary, problem = read_summary(out)
    stages = _stage_map(summary)
    runs: list[RunRecord] = []
    incomplete: list[str] = []
    if runs_dir.is_dir() and not runs_dir.is_symlink():
        for path in sorted(runs_dir.iterdir()):
            if path.is_symlink():
                if path.is_dir():
                    incomplete.append(f"{path.name} (a symbolic link: not read)")
                continue
            if not path.is_dir():
                continue
            listing, why = completeness(path)
            if listing is None:
                incomplete.append(f"{path.name} ({why})")
                continue
            try:
                runs.append(read_run(path, stages.get(path.name), set(listing)))
            except (ValueError, RecursionError) as exc:
                incomplete.append(f"{path.name} ({str(exc).splitlines()[0] if str(exc) else 'unreadable'})")
    order = {s: i for i, s in enumerate(STAGE_ORDER)}
    runs.sort(key=lambda r: (order.get(r.stage, len(order)), r.kind, r.name))
    return StudyResults(out, runs, incomplete, summary, [problem] if problem else [])
