"""Per run kind, the compact metrics a record keeps (:data:`EXTRACTORS`: kind -> ``f(run_dir) -> dict``).

A record keeps what the generated tables read and no array beyond :data:`LIST_LIMIT` numbers: scalars,
short strings, small nested lists (a 5 x 5 DTAP heatmap), and for a real-data run its per-checkpoint training
curve with the summary's metrics (what matched-loss levels are read from) and the test labels' class counts
(what the majority-class baseline is read from). Anything larger (per-item arrays, long loss curves, ERASER
files) stays in the run directory; the dotted names of what was left out are listed in ``omitted``.

One entry per run kind; a kind without an entry is not exported (:func:`qkov.records.export_runs` says so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from qkov.core.runstore import load_run

LIST_LIMIT = 300
"""The most numbers a kept list may hold (nested lists counted in full)."""
TEXT_LIMIT = 500
"""The longest string kept."""


def _numbers(x: Any) -> int | None:
    """How many numbers the (nested) list ``x`` holds, or ``None`` if it holds anything else."""
    if isinstance(x, bool) or x is None:
        return 1
    if isinstance(x, (int, float)):
        return 1
    if isinstance(x, str):
        return 1 if len(x) <= TEXT_LIMIT else None
    if isinstance(x, list):
        total = 0
        for item in x:
            n = _numbers(item)
            if n is None:
                return None
            total += n
        return total
    return None


def compact(obj: dict[str, Any], omitted: list[str], prefix: str = "") -> dict[str, Any]:
    """``obj`` without lists of more than :data:`LIST_LIMIT` numbers, strings over :data:`TEXT_LIMIT` characters
    and lists of objects (recursing into dicts); each dropped entry's dotted name is appended to ``omitted``."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out[k] = compact(v, omitted, name + ".")
        elif isinstance(v, list):
            n = _numbers(v)
            if n is not None and n <= LIST_LIMIT:
                out[k] = v
            else:
                omitted.append(name)
        elif isinstance(v, str) and len(v) > TEXT_LIMIT:
            omitted.append(name)
        else:
            out[k] = v
    return out


def _evidence(run: Any) -> list[dict[str, str]]:
    """The run's ``claims.json`` evidence, each as claim, stage, verdict, number, numbers, scope and caveat (the
    report's longer ``text`` and ``figure`` stay in the run)."""
    from qkov.study.claims import CLAIMS_FILE

    raw = run.json.get(CLAIMS_FILE)
    entries = raw.get("evidence", raw) if isinstance(raw, dict) else raw
    out = []
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, dict):
            out.append({k: e[k] for k in ("claim", "stage", "verdict", "number", "numbers", "scope", "caveat") if k in e})
    return out


def generic_metrics(run_dir: Path) -> dict[str, Any]:
    """A study run's compact ``metrics.json`` (:func:`compact`) and its claims evidence (``evidence``)."""
    run = load_run(run_dir)
    omitted: list[str] = []
    out = compact(dict(run.metrics), omitted)
    ev = _evidence(run)
    if ev:
        out["evidence"] = ev
    if omitted:
        out["omitted"] = sorted(omitted)
    return out


def derive_metrics(run_dir: Path) -> dict[str, Any]:
    """A ``derive`` run: :func:`generic_metrics` plus ``ledger``: each claim's derivation ``status`` and ``holds``
    (``"in part"`` where only part of the claim survives; the report's outcome reads it)."""
    out = generic_metrics(run_dir)
    d = load_run(run_dir).json.get("derivation.json")
    ledger = d.get("ledger") if isinstance(d, dict) else None
    out["ledger"] = [{"id": str(e.get("id")), "status": str(e.get("status") or ""), "holds": str(e.get("holds") or "")}
                     for e in ledger or [] if isinstance(e, dict)]
    return out


CHECKPOINT_FIELDS = ("step", "epoch", "train_loss", "val_loss")
"""The scalar fields a kept checkpoint carries besides its ``test`` metrics."""


def checkpoint_columns(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Checkpoint rows ``[{step, epoch, train_loss, val_loss, test: {metric: value}}, ...]`` (length ``C``) as
    columns ``{field: [C values], "test": {metric: [C values]}}``: the same numbers without the field names
    repeated per row (a 31-checkpoint HateXplain run's curve shrinks about 2x). A field or metric a row lacks is
    ``null`` in its column; :func:`checkpoint_rows` inverts this exactly."""
    fields = [f for f in CHECKPOINT_FIELDS if any(f in r for r in rows)]
    metrics = sorted({k for r in rows for k in (r.get("test") or {})})
    cols: dict[str, Any] = {f: [r.get(f) for r in rows] for f in fields}
    cols["test"] = {k: [(r.get("test") or {}).get(k) for r in rows] for k in metrics}
    return cols


def checkpoint_rows(cols: Any) -> list[dict[str, Any]]:
    """The rows of :func:`checkpoint_columns` back (a list of rows is returned as it is: records exported before
    the columnar form); ``ValueError`` when the columns differ in length."""
    if isinstance(cols, list):
        return cols
    if not isinstance(cols, dict):
        raise ValueError(f"checkpoints: {type(cols).__name__}: must be a list of rows or an object of columns")
    test = cols.get("test") or {}
    scalar = {f: v for f, v in cols.items() if f != "test"}
    lengths = {len(v) for v in (*scalar.values(), *test.values()) if isinstance(v, list)}
    if len(lengths) > 1 or any(not isinstance(v, list) for v in (*scalar.values(), *test.values())):
        raise ValueError(f"checkpoints: columns must be lists of one length (got lengths {sorted(lengths)})")
    n = lengths.pop() if lengths else 0
    return [{**{f: v[i] for f, v in scalar.items() if v[i] is not None},
             "test": {k: v[i] for k, v in test.items() if v[i] is not None}} for i in range(n)]


def real_metrics(run_dir: Path) -> dict[str, Any]:
    """A real-data run (``validate-real``): its compact ``metrics.json`` (views, baselines, DTAP, rates),
    ``checkpoints`` as columns (:func:`checkpoint_columns`) of ``{step, epoch, train_loss, val_loss, test:
    {metric: value}}`` with the metrics the summary compares at matched loss
    (:data:`qkov.study.real_summary.PAIRED`, the task metric, the answer probability), and ``label_counts``
    ``{"labels": [...], "counts": [...]}`` of the test split (classifiers)."""
    from qkov.study.real_summary import PAIRED, task_metric

    run = load_run(run_dir)
    m = dict(run.metrics)
    names = {*PAIRED, task_metric(str(run.config.get("dataset", m.get("dataset", "")))), "answer_prob_geomean"}
    omitted: list[str] = []
    out = compact({k: v for k, v in m.items() if k != "checkpoints"}, omitted)
    ckpts = []
    for c in m.get("checkpoints") or []:
        test = c.get("test") or {}
        ckpts.append({**{k: c[k] for k in ("step", "epoch", "train_loss", "val_loss") if k in c},
                      "test": {k: v for k, v in test.items() if k in names
                               and isinstance(v, (int, float)) and not isinstance(v, bool)}})
    if ckpts:
        out["checkpoints"] = checkpoint_columns(ckpts)
        omitted.append("checkpoints.test (all but the metrics compared at matched loss)")
    labels = run.arrays.get("instances.npz", {}).get("labels")
    if labels is not None and np.asarray(labels).size:
        values, counts = np.unique(np.asarray(labels), return_counts=True)
        out["label_counts"] = {"labels": values.tolist(), "counts": counts.tolist()}
    if omitted:
        out["omitted"] = sorted(omitted)
    return out


def _adam(name: str) -> Callable[[Path], dict[str, Any]]:
    """:mod:`qkov.records.adam`'s extractor ``name`` (imported when called)."""
    def extract(run_dir: Path) -> dict[str, Any]:
        from qkov.records import adam

        return getattr(adam, name)(run_dir)

    extract.__name__ = name
    return extract


DERIVED_KINDS: frozenset[str] = frozenset({"real-sweep-summary", "validate-real-summary"})
"""Summaries computed from other runs: not exported (their tables are rebuilt from the runs' records), and not
named as skipped."""

EXTRACTORS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "validate-real": real_metrics,
    "derive": derive_metrics,
    "simulate-reduction": generic_metrics,
    "simulate-asymptotics": generic_metrics,
    "simulate-sharpness": generic_metrics,
    "simulate-paper": generic_metrics,
    "simulate": generic_metrics,
    "figure2": generic_metrics,
    "adam": generic_metrics,
    "synthetic-optimizer": _adam("optimizer_metrics"),
    "adam-phase": _adam("phase_metrics"),
    "synthetic": generic_metrics,
}
"""run kind -> extractor of its record's metrics; kinds not listed are not exported."""

__all__ = ["CHECKPOINT_FIELDS", "DERIVED_KINDS", "EXTRACTORS", "LIST_LIMIT", "checkpoint_columns", "checkpoint_rows", "compact", "derive_metrics", "generic_metrics", "real_metrics"]
