"""Command timings in docs/performance.md, generated from committed records: the README main command end to end
(``benchmarks/results/main-command.json``, written by ``benchmarks/bench_main_command.py``) and the first commands'
start-up (``benchmarks/results/cli-startup.json``, written by ``benchmarks/bench_cli.py --json``). Every number in a
block is its record's; a field the record lacks reads "not recorded", never a guess."""

from __future__ import annotations

import json
from pathlib import Path

from qkov.docsgen import GeneratedBlock, Loader   # defined before the registry imports this module

RECORD = "benchmarks/results/main-command.json"
COMMAND = "python benchmarks/bench_main_command.py"
CLI_RECORD = "benchmarks/results/cli-startup.json"
CLI_COMMAND = f"python benchmarks/bench_cli.py --json {CLI_RECORD}"


def _load(record: str = RECORD) -> dict | None:
    path = Path(__file__).resolve().parents[2] / record
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


def _target(wall: float, target: float | None, idle: bool) -> str:
    """Issue 10's targets are on an idle machine's wall time: met / **missed** there; on a loaded machine the wall
    time cannot decide a miss (``not decided``), only a pass."""
    if target is None:
        return ""
    if wall < target:
        return f"< {target:g} s: met"
    return f"< {target:g} s: **missed**" if idle else f"< {target:g} s: **not decided** (machine loaded)"


IDLE_LOAD = 1.0
"""A run whose load average stayed below this (start and end) counts as taken on an idle machine."""


def cli_startup(rec: dict | None) -> str:
    """The start-up table for one record of :data:`CLI_RECORD` (``None``: no record yet, and the command)."""
    if rec is None:
        return f"No record yet: `{CLI_COMMAND}` writes it; `qkov docs` renders it here."
    rows = rec.get("rows") or []
    load0, load1 = rec.get("load_start"), rec.get("load_end")
    idle = load0 is not None and load1 is not None and max(load0, load1) < IDLE_LOAD
    base = rows[0]["wall_s"] if rows else None
    lines = [f"Generated from `{CLI_RECORD}` by `qkov docs`; the record is written by `{CLI_COMMAND}` (commit "
             f"{str(rec.get('commit') or '?')[:7]}, started {rec.get('started', '?')}, {rec.get('cpus', '?')} CPUs, "
             f"load average {_num(load0, '.1f')} at the start and {_num(load1, '.1f')} at the end: "
             f"{'idle' if idle else 'not idle'} by the < {IDLE_LOAD:g} rule). Each command in a fresh process with an "
             "empty derivation cache; wall and CPU (user + sys of the child) seconds, best of the stated repeats.",
             "", "| command | best of | wall s | CPU s | wall / baseline | target (issue 10, idle wall) |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        ratio = f"{r['wall_s'] / base:.1f}x" if base else "n/a"
        lines.append(f"| {r['command']} | {r.get('best_of', '?')} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {ratio} | "
                     f"{_target(r['wall_s'], r.get('target_wall_s'), idle)} |")
    return "\n".join(lines)


def build_cli_startup(load: Loader) -> str:
    """The block from the committed record (:data:`CLI_RECORD`)."""
    return cli_startup(_load(CLI_RECORD))


BLOCKS = (GeneratedBlock("main-command", "docs/performance.md", build_main_command, ()),
          GeneratedBlock("cli-startup", "docs/performance.md", build_cli_startup, ()))

__all__ = ["BLOCKS", "RECORD", "CLI_RECORD", "build_main_command", "main_command", "build_cli_startup", "cli_startup"]
