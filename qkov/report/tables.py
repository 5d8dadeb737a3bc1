"""Metric tables: runs grouped by configuration across seeds, each cell ``mean ± std``.

Runs of one kind whose configs differ only in a seed field are one group. For a
scalar metric :math:`x_s` over the group's seeds :math:`s = 1..n`, the cell shows
:math:`\\bar x = \\frac1n\\sum_s x_s` and the sample standard deviation
:math:`\\sqrt{\\frac{1}{n-1}\\sum_s (x_s-\\bar x)^2}` (``0`` when ``n = 1``). A metric that is
already a ``{"mean", "std"}`` pair (a run that averaged its own seeds) is shown as is.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Iterable

from qkov.core.schema import as_float
from qkov.report.collect import RunRecord

SEED_FIELDS = frozenset({"seed", "seeds", "run_seed"})
MAX_COLUMNS = 12


@dataclasses.dataclass(frozen=True)
class Cell:
    """``mean ± std`` over ``n`` values."""

    mean: float
    std: float
    n: int

    def text(self) -> str:
        """``mean ± std`` with four significant digits (``mean`` alone when there is no spread to show)."""
        if not math.isfinite(self.mean):
            return str(self.mean)
        return f"{self.mean:.4g} ± {self.std:.2g}" if self.n > 1 or self.std else f"{self.mean:.4g}"


@dataclasses.dataclass
class MetricTable:
    """One table: a kind, its row labels (the config fields that vary), metric columns, cells."""

    kind: str
    label_fields: list[str]
    columns: list[str]
    rows: list[tuple[list[str], dict[str, Cell], int]]  # (labels, cells, n runs)
    omitted_columns: int = 0


def _is_number(v: Any) -> bool:
    return as_float(v) is not None  # issue 35: an integer beyond the float range is a bad value, not a number


def flatten_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """Flatten nested metric files to ``{"file.key.subkey": number | (mean, std)}``.

    Lists are dropped, and so is a ``config`` entry of ``metrics.json`` (the run's config is in ``config.json``).
    """
    flat: dict[str, Any] = {}

    def walk(prefix: str, obj: Any) -> None:
        if _is_number(obj):
            flat[prefix] = float(obj)
        elif isinstance(obj, dict):
            if _is_number(obj.get("mean")) and _is_number(obj.get("std")):
                flat[prefix] = (float(obj["mean"]), float(obj["std"]))
                return
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)

    for stem, content in metrics.items():
        if stem == "metrics" and isinstance(content, dict):  # a copy of the config is not a result
            content = {k: v for k, v in content.items() if k != "config"}
        walk("" if stem == "metrics" else stem, content)
    return flat


def _label_value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _sort_key(labels: list[str]) -> tuple:
    out = []
    for x in labels:
        try:
            out.append((0, float(x), ""))
        except ValueError:
            out.append((1, 0.0, x))
    return tuple(out)


def _cell(values: list[Any]) -> Cell:
    pairs = [v for v in values if isinstance(v, tuple)]
    if pairs and len(values) == 1:
        return Cell(pairs[0][0], pairs[0][1], 1)
    xs = [v[0] if isinstance(v, tuple) else v for v in values]
    n = len(xs)
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    if std <= 1e-12 * max(1.0, abs(mean)):  # rounding noise of equal values
        std = 0.0
    return Cell(mean, std, n)


def metric_tables(runs: Iterable[RunRecord]) -> list[MetricTable]:
    """One :class:`MetricTable` per kind, rows grouped over seeds, sorted by their labels."""
    by_kind: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_kind.setdefault(r.kind, []).append(r)
    tables = []
    for kind, rs in by_kind.items():
        groups: dict[str, list[RunRecord]] = {}
        configs: dict[str, dict[str, Any]] = {}
        for r in rs:
            cfg = {k: v for k, v in r.config.items() if k not in SEED_FIELDS}
            g = json.dumps(cfg, sort_keys=True, default=str)
            groups.setdefault(g, []).append(r)
            configs[g] = cfg
        fields = sorted({k for c in configs.values() for k in c})
        varying = [f for f in fields if len({json.dumps(c.get(f), sort_keys=True, default=str)
                                             for c in configs.values()}) > 1]
        flats = {r.name: flatten_metrics(r.metrics) for r in rs}
        columns: list[str] = []
        for r in rs:
            columns += [c for c in flats[r.name] if c not in columns]
        omitted = max(0, len(columns) - MAX_COLUMNS)
        columns = columns[:MAX_COLUMNS]
        rows = []
        for g, members in groups.items():
            cells = {}
            for c in columns:
                vals = [flats[m.name][c] for m in members if c in flats[m.name]]
                if vals:
                    cells[c] = _cell(vals)
            labels = [_label_value(configs[g].get(f)) for f in varying] or [kind]
            rows.append((labels, cells, len(members)))
        rows.sort(key=lambda row: _sort_key(row[0]))
        if columns:
            tables.append(MetricTable(kind, varying or ["run"], columns, rows, omitted))
    return tables
