"""The README main command's end-to-end measurement in docs/performance.md, generated from the committed record
``benchmarks/results/main-command.json`` (written by ``benchmarks/bench_main_command.py``). Every number in the
block is the record's; a field the record lacks reads "not recorded", never a guess."""

from __future__ import annotations

import json
from pathlib import Path

from qkov.docsgen import GeneratedBlock, Loader   # defined before the registry imports this module

RECORD = "benchmarks/results/main-command.json"
COMMAND = "python benchmarks/bench_main_command.py"


def _load() -> dict | None:
    path = Path(__file__).resolve().parents[2] / RECORD
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _minutes(s: float | None) -> str:
    if s is None:
        return "not recorded"
    m, sec = divmod(round(s), 60)
    return f"{m} min {sec} s" if m else f"{sec} s"


def _num(x, fmt: str, unit: str = "") -> str:
    return "not recorded" if x is None else f"{x:{fmt}}{unit}"


def main_command(rec: dict | None) -> str:
    """The block for one record of :data:`RECORD` (``None``: no record yet, and the command that makes one)."""
    if rec is None:
        return f"No record yet: `{COMMAND}` writes `{RECORD}`; `qkov docs` renders it here."
    user, sys_ = rec.get("user_s"), rec.get("sys_s")
    wall = rec.get("wall_s")
    share = (f"{100 * (user + sys_) / wall:.0f} % of a core"
             if user is not None and sys_ is not None and wall else "share of a core not recorded")
    rep = rec.get("reproduce") or {}
    statuses = ", ".join(f"{n} {s}" for s, n in sorted((rep.get("by_status") or {}).items())) or "none recorded"
    missing = rep.get("manifests_missing") or 0
    load0, load1 = rec.get("load_start") or [None], rec.get("load_end") or [None]
    lines = [
        f"Generated from `{RECORD}` by `qkov docs`; the record is written by `{COMMAND}`, which clones the "
        "committed HEAD into a scratch folder and runs exactly the README's main command there in a fresh virtual "
        f"environment (`{rec.get('command', 'not recorded')}`), with the machine's environment "
        f"({'pip reads a local wheel folder' if rec.get('pip_find_links') else 'no local pip wheel folder'}).",
        "",
        f"- Commit {str(rec.get('commit', '?'))[:7]}, started {rec.get('started', '?')}, {rec.get('cpus', '?')} CPUs "
        f"({rec.get('machine', '?')}), load average {_num(load0[0], '.1f')} at the start and "
        f"{_num(load1[0], '.1f')} at the end.",
        f"- **{_minutes(wall)} wall, install included**, exit status {rec.get('returncode', '?')}; CPU "
        f"{_num(user, '.0f', ' s')} user + {_num(sys_, '.0f', ' s')} system over the whole process tree ({share}); "
        f"peak resident set of the largest process {_num(rec.get('max_rss_mb'), '.0f', ' MB')}.",
        f"- The reproduce call itself: {_minutes(rep.get('span_s'))} wall; {rep.get('runs', 0)} runs ({statuses}); "
        f"{_num(rep.get('run_s_sum'), '.0f', ' s')} summed over the runs' own spans"
        + (f" ({missing} runs without a readable manifest)" if missing else "") + ".",
        f"- The report's headline: \"{rec.get('headline') or 'not recorded'}\"; "
        f"{_num(rec.get('against_lines'), 'd')} evidence-against lines, "
        f"{_num(rec.get('undecided_lines'), 'd')} undecided lines.",
    ]
    return "\n".join(lines)


def build_main_command(load: Loader) -> str:
    """The block from the committed record (:data:`RECORD`)."""
    return main_command(_load())


BLOCKS = (GeneratedBlock("main-command", "docs/performance.md", build_main_command, ()),)

__all__ = ["BLOCKS", "RECORD", "build_main_command", "main_command"]
