"""The real-data blocks of docs/real-data.md, built from record sets by :mod:`qkov.study.real_summary`'s own
statistics (groups, paired comparisons, Holm, the verdict rule, the 2 x 2 effects): a block never restates a
number, it calls the function that computes it on the records (:func:`qkov.records.real_runs`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from qkov.docsgen import GeneratedBlock, Loader
from qkov.records import Record, real_runs

REAL_DATA = "docs/real-data.md"


def _minutes(seconds: list[float]) -> str:
    lo, hi = min(seconds) / 60, max(seconds) / 60
    return f"{lo:.1f} min" if round(lo, 1) == round(hi, 1) else f"{lo:.1f}-{hi:.1f} min"


def provenance_line(records: list[Record]) -> str:
    """One line: how many runs, their wall time per run (min-max), the code commit(s) and machine(s), from the
    records' provenance."""
    walls = [float(r.provenance["wall_s"]) for r in records if isinstance(r.provenance.get("wall_s"), (int, float))]
    commits = sorted({str(r.provenance.get("git_commit") or "unknown")[:7] for r in records})
    devices = sorted({str(r.provenance.get("machine") or "").rsplit("; device ", 1)[-1] or "?" for r in records})
    torch = sorted({str(r.provenance.get("torch")) for r in records})
    parts = [f"{len(records)} runs"]
    if walls:
        parts.append(f"wall {_minutes(walls)} per run")
    parts.append(f"code {', '.join(commits)}, torch {', '.join(torch)}, device {', '.join(devices)}")
    return "; ".join(parts)


def _cell(rec: Record) -> tuple[float, float]:
    rates = rec.metrics.get("rates") or {}
    return float(rates.get("qk", rec.config.get("ratio", 1.0))), float(rates.get("embedding", 1.0))


def design_runs(set_name: str, planned: int, factor: str = "embedding") -> Callable[[Loader], str]:
    """Builder: per seed and 2 x 2 cell, the wall time of the run (``planned``: the runs the design calls for)."""

    def build(load: Loader) -> str:
        recs = [r for r in load(set_name) if r.kind == "validate-real"]
        by_seed: dict[int, dict[tuple[float, float], Record]] = defaultdict(dict)
        for r in recs:
            by_seed[int(r.config["seed"])][_cell(r)] = r
        cells = sorted({c for s in by_seed.values() for c in s})
        head = " | ".join(f"QK {a:g}x / {factor} {b:g}x" for a, b in cells)
        lines = [f"**{len(recs)} of {planned} runs complete** (seeds {', '.join(map(str, sorted(by_seed)))}; "
                 f"record set `records/{set_name}.jsonl`; {provenance_line(recs)}). Wall time per run:", "",
                 f"| seed | {head} |", "| --- | " + " | ".join("---" for _ in cells) + " |"]
        for seed in sorted(by_seed):
            row = [_wall(by_seed[seed].get(c)) for c in cells]
            lines.append(f"| {seed} | " + " | ".join(row) + " |")
        return "\n".join(lines)

    return build


def _wall(rec: Record | None) -> str:
    if rec is None:
        return "-"
    w = rec.provenance.get("wall_s")
    return f"{float(w) / 60:.1f} min" if isinstance(w, (int, float)) else "?"


def design_table(set_name: str, factor: str = "embedding") -> Callable[[Loader], str]:
    """Builder: the 2 x 2 cells, effects and decoupling verdict
    (:func:`qkov.study.real_summary.decoupling_markdown_of` on the set's records)."""

    def build(load: Loader) -> str:
        from qkov.study.real_summary import decoupling_markdown_of

        runs = real_runs(load(set_name))
        return ("Per cell (best validation; mean ± sample std over the seeds listed) and the paired effects with their "
                "seed-level 95 % t-intervals, n and MDE (one-sided 2.5 %, power 0.8), then the decoupling rule's "
                f"verdict (`records/{set_name}.jsonl`):\n\n" + decoupling_markdown_of(runs, factor))

    return build


def group_verdicts(set_name: str) -> Callable[[Loader], str]:
    """Builder: the ``real-data`` rule on every configuration group of the set
    (:func:`qkov.study.real_summary.verdicts`)."""

    def build(load: Loader) -> str:
        from qkov.study.real_summary import summarise_groups, verdicts

        groups = summarise_groups(real_runs(load(set_name)))
        ratios = sorted({f"{g['claim_ratio']:g}" for g in groups.values()})
        lines = [f"The `real-data` rule on the {len(groups)} configuration groups (each: ratio "
                 f"{'/'.join(ratios)} vs 1 at best validation; `records/{set_name}.jsonl`):", ""]
        lines += [f"- **{v.verdict}** — {v.line}" for v in verdicts(groups)]
        return "\n".join(lines)

    return build


def ratio_sweep(set_name: str) -> Callable[[Loader], str]:
    """Builder: the ratio sweep of every group of the set at best validation with its verdict
    (:func:`qkov.study.real_summary.sweep_markdown`)."""

    def build(load: Loader) -> str:
        from qkov.study.real_summary import summarise_groups, sweep_markdown

        recs = load(set_name)
        groups = summarise_groups(real_runs(recs))
        return (f"{provenance_line(recs)} (`records/{set_name}.jsonl`):\n\n" + sweep_markdown(groups).rstrip()
                + "\n\n" + counted_verdicts(groups))

    return build


def counted_verdicts(groups: dict) -> str:
    """What the report counts for each group: the ``real-data`` evidence of :func:`qkov.study.rules.real_data_evidence`
    (the group's rule, and ``insufficient`` for a model below the paper's level, with the reason)."""
    from qkov.study.rules import real_data_evidence

    lines = ["The `real-data` evidence the report counts (qkov.study.rules):", ""]
    for name, e in zip(groups, real_data_evidence(groups)):
        why = f" ({e.caveat})" if e.caveat else ""
        lines.append(f"- {name}: **{e.verdict}**{why}")
    return "\n".join(lines)


def sweep_with_views(set_name: str, what: str) -> Callable[[Loader], str]:
    """Builder: :func:`ratio_sweep` of the set (best validation, paired with ratio 1, the group's verdict), then
    every view of every group (fixed epoch, best validation, matched loss, uniform attention, the untrained
    model: :func:`qkov.study.real_summary.markdown_tables`) folded under ``what``."""

    def build(load: Loader) -> str:
        from qkov.study.real_summary import markdown_tables, summarise_groups

        groups = summarise_groups(real_runs(load(set_name)))
        return (ratio_sweep(set_name)(load) + f"\n\n<details><summary>{what}: every view (mean ± sample std over "
                "seeds)</summary>\n\n" + markdown_tables(groups).strip() + "\n\n</details>")

    return build


BLOCKS: tuple[GeneratedBlock, ...] = (
    GeneratedBlock("hx-2x2-runs", REAL_DATA, design_runs("hx-2x2", planned=20), ("hx-2x2",)),
    GeneratedBlock("hx-2x2-table", REAL_DATA, design_table("hx-2x2"), ("hx-2x2",)),
    GeneratedBlock("hx-2x2-verdicts", REAL_DATA, group_verdicts("hx-2x2"), ("hx-2x2",)),
    GeneratedBlock("hx-recipe-sweep", REAL_DATA, ratio_sweep("hx-recipe"), ("hx-recipe",)),
    GeneratedBlock("quick-real", REAL_DATA, sweep_with_views("quick-real", "The quick study's real-data runs"),
                   ("quick-real",)),
    GeneratedBlock("sva-paper-quick", REAL_DATA, sweep_with_views("sva-paper-quick", "sva/sgd/paper, quick size"),
                   ("sva-paper-quick",)),
    GeneratedBlock("sva-paper", REAL_DATA, sweep_with_views("sva-paper", "sva/sgd/paper, full"), ("sva-paper",)),
    GeneratedBlock("squad-paper", REAL_DATA, sweep_with_views("squad-paper", "squad/adamw/paper, quick size"),
                   ("squad-paper",)),
)
"""The generated blocks of docs/real-data.md."""

__all__ = ["BLOCKS", "design_runs", "design_table", "group_verdicts", "provenance_line", "ratio_sweep"]

