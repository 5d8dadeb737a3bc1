"""What ran: the preset (quick or full), sizes, seeds, machine, total and per-run times, what did not run.

The preset is not guessed from a flag: each stage's planned runs for ``quick`` and for ``full``
(``study_runs(quick, None)``, keyed as the engine keys them, ``<kind>-<config_key>``) are compared with
the run directories found; the preset is the one whose plan the runs belong to (``custom`` for a mix).
A run's time is its training wall time when the run records one (``wall_s`` in its metrics: the manifest
of a run that trains before opening its run writer spans only the writing), else the manifest's
``ended - started``.
"""

from __future__ import annotations

import collections
import datetime as _dt
from typing import Any

from qkov.core.schema import as_float
from qkov.report.collect import RunRecord, StudyResults


def _plans() -> dict[str, dict[str, str]]:
    """``{"quick"|"full": {run name: stage}}`` from each stage's ``study_runs`` (no data directory)."""
    from qkov.core.runstore import config_key
    from qkov.study.stages import default_stages

    out: dict[str, dict[str, str]] = {"quick": {}, "full": {}}
    for preset, quick in (("quick", True), ("full", False)):
        for st in default_stages():
            try:
                items = st.study_runs(quick, None)
            except Exception:  # noqa: BLE001 - a stage that cannot plan without data plans nothing here
                items = []
            for kind, cfg in items:
                out[preset][f"{kind}-{config_key(kind, cfg)}"] = st.name
    return out


def preset(results: StudyResults) -> str:
    """``quick``, ``full``, ``custom`` (runs of both or of neither plan) or ``""`` (no runs)."""
    names = {r.name for r in results.runs if r.stage != "real"}
    if not names:
        return ""
    plans = _plans()
    within = {p: names <= set(plan) for p, plan in plans.items()}  # runs both presets share (derive, the Adam
    for p in ("quick", "full"):                                      # breakdown run) decide nothing on their own
        other = "full" if p == "quick" else "quick"
        if within[p] and not within[other]:
            return p
    return "custom"


def full_adds() -> str:
    """What ``--full`` runs beyond ``--quick``: planned runs per stage, each preset."""
    plans = _plans()
    q = collections.Counter(plans["quick"].values())
    f = collections.Counter(plans["full"].values())
    return ", ".join(f"{s} {q.get(s, 0)} -> {f.get(s, 0)} runs" for s in sorted(set(q) | set(f)))


def _span_seconds(record: dict[str, Any]) -> float | None:
    """Seconds from ``record["started"]`` to ``record["ended"]`` (ISO times), ``None`` when either is missing or
    not a time: a run's manifest or the study's summary."""
    try:
        return (_dt.datetime.fromisoformat(record["ended"])
                - _dt.datetime.fromisoformat(record["started"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


def run_seconds(run: RunRecord) -> tuple[float | None, str]:
    """``(seconds, source)``: the longer of the manifest's span (``started`` to ``ended``: the whole run when the
    study engine ran it under :func:`qkov.core.runstore.run_clock`, only its writing when a command wrote it
    after computing) and the training wall time the run records (``metrics.wall_s``, a lower bound of the run's
    time). ``source`` is ``"run"`` or ``"training"``, whichever was longer; ``(None, "")`` with neither."""
    m = run.metrics.get("metrics") if isinstance(run.metrics.get("metrics"), dict) else {}
    wall = m.get("wall_s") if isinstance(m, dict) else None
    training = as_float(wall)  # issue 35: None for a bool, text or an integer beyond the float range
    training = training if training is not None and training >= 0 else None
    span = _span_seconds(run.manifest)
    if training is not None and (span is None or training > span):
        return training, "training"
    return (span, "run") if span is not None else (None, "")


def _sizes(cfg: dict[str, Any]) -> str:
    keys = ("K", "M", "steps", "ratios", "ratio", "seeds", "seed", "dataset", "model", "optimizer", "data", "param")
    return ", ".join(f"{k}={cfg[k]}" for k in keys if k in cfg and not isinstance(cfg[k], dict))[:160]


def study_lines(results: StudyResults) -> list[str]:
    """Plain lines for the top of the report: preset, totals, machine, sizes and seeds per run kind."""
    lines = []
    p = preset(results)
    if p:
        lines.append(f"Preset: {p}" + (" (qkov reproduce --quick: the subsampled study)" if p == "quick" else
                                       " (qkov reproduce --full: the paper-scale study)" if p == "full" else
                                       " (runs of more than one preset, or of neither)")
                     + f"; --quick vs --full: {full_adds()}.")
    summ = results.summary or {}
    total = _span_seconds(summ)
    if total is not None:
        lines.append(f"Total wall time of this reproduce call: {total:.0f} s (started {summ['started']}).")
    planned = {r.get("name") for r in summ.get("runs", []) if isinstance(r, dict)}
    ours = [r for r in results.runs if not planned or r.name in planned]   # this study's runs, not earlier calls'
    timed = [run_seconds(r) for r in ours]
    if any(s is not None for s, _ in timed):
        n_train = sum(1 for s, src in timed if s is not None and src == "training")
        extra = len(results.runs) - len(ours)
        lines.append(f"Sum of per-run times: {sum(s for s, _ in timed if s is not None):.0f} s over "
                     f"{len(ours)} runs (each run's start to end on its worker"
                     + (f"; {n_train} runs written after the fact count their recorded training time" if n_train
                        else "") + ")"
                     + (f"; {extra} more runs in the results directory from other calls are not counted" if extra
                        else "") + ".")
    machines = sorted({str(r.manifest.get("platform", "")) for r in results.runs if r.manifest.get("platform")})
    if machines:
        lines.append("Machine: " + "; ".join(machines) + ".")
    by_kind: dict[str, list[RunRecord]] = collections.defaultdict(list)
    for r in results.runs:
        by_kind[r.kind].append(r)
    for kind, rs in by_kind.items():
        sizes = sorted({_sizes(r.config) for r in rs if _sizes(r.config)})
        if sizes:
            lines.append(f"{kind} ({len(rs)} runs): " + " | ".join(sizes[:4]) + (" | ..." if len(sizes) > 4 else ""))
    return lines


__all__ = ["preset", "full_adds", "run_seconds", "study_lines"]
