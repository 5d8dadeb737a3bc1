"""The integrators' side-by-side table of docs/performance.md, generated from the committed benchmark records
``benchmarks/results/integrators-<P>-side-by-side.json`` (written by ``benchmarks/bench_integrators.py --json``, one
per parametrization P), with issue 43's speed targets and whether each holds. It reads no record set of
``records/``; every number is the record's."""

from __future__ import annotations

import json
import math
from pathlib import Path

from qkov.docsgen import GeneratedBlock, Loader   # defined before the registry imports this module
from theory.parametrization import PARAMETRIZATIONS

PARAMS = PARAMETRIZATIONS
"""MODEL.md's four, one record each."""
RECORD = "benchmarks/results/integrators-{param}-side-by-side.json"
BATCHES = ("1", "10", "100", "1000", "10000")
LSODA_TARGET = 300.0
"""Issue 43: at least 300x plain log-time LSODA at 10,000 trajectories, on all four."""
DIFFRAX_AT_ONE = 0.5
"""Issue 43: within 2x of diffrax at one trajectory (diffrax / qkov >= 0.5)."""
DIFFRAX = ("diffrax-Tsit5", "diffrax-Dopri8")


def _load(param: str) -> dict:
    return json.loads((Path(__file__).resolve().parents[2] / RECORD.format(param=param)).read_text(encoding="utf-8"))


def _horizon(rec: dict) -> tuple[str, dict]:
    (t1, h), = rec["horizons"].items()          # the side-by-side runs time one horizon
    return t1, h


def _cpu(row: dict, name: str) -> float:
    cell = row.get(name)
    return float(cell["cpu_s"]) if cell else math.nan


def _ratio(row: dict, name: str) -> float:
    """CPU time of ``name`` over qkov's on the same trajectories (> 1: qkov faster)."""
    return _cpu(row, name) / _cpu(row, "qkov")


def _best_diffrax(row: dict) -> float:
    """The faster diffrax solver's CPU time over qkov's."""
    return min((_ratio(row, n) for n in DIFFRAX if row.get(n)), default=math.nan)


def _blocks(row: dict, name: str) -> list[float]:
    """Every timed block's CPU seconds per call (``cpu_blocks``; a record without them: its one time)."""
    cell = row.get(name)
    if not cell:
        return [math.nan]
    return [float(x) for x in cell.get("cpu_blocks") or [cell["cpu_s"]]]


def _least(row: dict, names) -> float:
    """The least favourable ratio to qkov within the measurements' spread: the fastest block of the fastest of
    ``names`` over qkov's slowest block (an extrapolated scipy cell keeps its one scaled time)."""
    return min((min(_blocks(row, n)) for n in names if row.get(n)), default=math.nan) / max(_blocks(row, "qkov"))


def _verdict(best: float, least: float, threshold: float, strict: bool) -> str:
    """met: even the least favourable pairing of blocks clears ``threshold``; missed: the best does not; between:
    not decided (the blocks' spread decides it, not the code). ``strict``: ``>`` instead of ``>=``."""
    def clears(r: float) -> bool:
        return r > threshold if strict else r >= threshold
    if clears(least):
        return "met"
    return "**not decided**" if clears(best) else "**missed**"


def _x(r: float) -> str:
    return "n/a" if math.isnan(r) else f"{r:.3g}x"


def _rung(h: dict, name: str) -> str:
    if name == "qkov":
        return f"qkov clock-free (no rtol), p99 {h['p99'][name]:.1e}"
    mark = "" if h["reached"][name] else f" (does not reach: p99 {h['p99'][name]:.1e}, timed at its most accurate rung)"
    return f"{name} rtol {h['rtol'][name]:g}{mark}"


def build_side_by_side(load: Loader) -> str:
    """The block from the committed records (:data:`RECORD`, one per parametrization of :data:`PARAMS`)."""
    return side_by_side({p: _load(p) for p in PARAMS})


def side_by_side(recs: dict[str, dict]) -> str:
    """Per parametrization and batch size (1..10,000): qkov's CPU seconds and every baseline's CPU time over qkov's
    at matched accuracy; then the targets, each marked met or missed from the same numbers. ``recs``: parametrization
    -> benchmark record (``bench_integrators.py --json``), in order."""
    first = next(iter(recs.values()))
    lines = [f"Generated from `{RECORD.format(param='<P>')}` (P = {', '.join(recs)}) by `qkov docs`; each record: "
             f"`{first['command'].replace(first['param'], '<P>')}`, "
             f"problem `{first['problem']}` (starts, K, M and ratios drawn over the whole admissible range), final "
             "state at one horizon. Cells: CPU seconds of qkov (`integrate_states`, the clock-free path) and each "
             "baseline's CPU time over qkov's (> 1: qkov faster); `~`: scipy timed on the first "
             "trajectories and scaled linearly. diffrax: `jax.jit(jax.vmap(diffeqsolve))`, compile excluded.", ""]
    for p, rec in recs.items():
        t1, h = _horizon(rec)
        lines.append(f"- {p}, t1 = {t1}, commit {rec.get('commit') or '?'}, started {rec.get('started_utc', '?')} UTC, load average "
                     f"{h['load_avg_start'][0]:.1f} -> {h['load_avg_end'][0]:.1f} on {rec['cpus']} CPUs; matched at "
                     f"p99 <= {h['match']:.1e} (relative, per coordinate, against Radau): "
                     + "; ".join(_rung(h, n) for n in h["rtol"]))
    names = ("scipy-LSODA", "scipy-DOP853", *DIFFRAX)
    lines += ["", "| param | B | qkov CPU-s | " + " | ".join(f"{n} / qkov" for n in names) + " |",
              "| --- | ---: | ---: |" + " ---: |" * len(names)]
    for p, rec in recs.items():
        _, h = _horizon(rec)
        for B in BATCHES:
            row = h["times"][B]
            cells = [("~" if row.get(n) and row[n]["extrapolated"] else "") + _x(_ratio(row, n)) for n in names]
            lines.append(f"| {p} | {int(B):,} | {_cpu(row, 'qkov'):.3g} | " + " | ".join(cells) + " |")
    lines += ["", "| target (issue 43) | " + " | ".join(recs) + " |", "| --- |" + " --- |" * len(recs)]

    def cell(rows: list[dict], names, threshold: float, strict: bool) -> str:
        best = [min((_ratio(r, n) for n in names if r.get(n)), default=math.nan) for r in rows]
        least = [_least(r, names) for r in rows]
        verdicts = [_verdict(b, lo, threshold, strict) for b, lo in zip(best, least)]
        worst = next((v for v in ("**missed**", "**not decided**") if v in verdicts), "met")
        return ", ".join(f"{_x(b)} (least {_x(lo)})" for b, lo in zip(best, least)) + f": {worst}"

    times = {p: _horizon(r)[1]["times"] for p, r in recs.items()}
    lines.append(f"| >= {LSODA_TARGET:g}x plain LSODA at 10,000 | "
                 + " | ".join(cell([times[p]["10000"]], ("scipy-LSODA",), LSODA_TARGET, False) for p in recs) + " |")
    lines.append("| ahead of diffrax from 10 (best diffrax / qkov at 10, 100, 1,000, 10,000 all > 1) | "
                 + " | ".join(cell([times[p][B] for B in BATCHES[1:]], DIFFRAX, 1.0, True) for p in recs) + " |")
    lines.append(f"| within 2x of diffrax at 1 (best diffrax / qkov >= {DIFFRAX_AT_ONE:g}) | "
                 + " | ".join(cell([times[p]["1"]], DIFFRAX, DIFFRAX_AT_ONE, False) for p in recs) + " |")
    walls = {p: min((_horizon(r)[1]["times"]["10000"][n]["s"] / _horizon(r)[1]["times"]["10000"]["qkov"]["s"]
                     for n in DIFFRAX if _horizon(r)[1]["times"]["10000"].get(n)), default=math.nan)
             for p, r in recs.items()}
    lines += ["", "At wall time instead of CPU time (diffrax's CPU time counts XLA's threads at large batches; qkov "
              "runs on one), best diffrax / qkov at 10,000: " + ", ".join(f"{p} {_x(w)}" for p, w in walls.items())
              + "."]
    lines += ["", "Each target cell: the ratio of the best blocks, and in brackets the least favourable to qkov within "
              "the measurements (the fastest block of the faster baseline over qkov's slowest block; every block is "
              "kept in the record). **met** when even that clears the target, **missed** when the best does not, "
              "**not decided** between: a ratio that the spread of the blocks decides is not a result."]
    return "\n".join(lines)


BLOCKS = (GeneratedBlock("integrators-side-by-side", "docs/performance.md", build_side_by_side, ()),)

__all__ = ["BLOCKS", "build_side_by_side", "side_by_side"]
