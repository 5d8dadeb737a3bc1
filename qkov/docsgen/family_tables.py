"""One family across the real-data groups behind README's ``real-data`` row: each configuration group's own
verdict (its two legs at the one level, :func:`qkov.study.rules.real_data_evidence`) beside its verdict after Holm
over the groups (:func:`qkov.study.real_inference.family_verdicts`), the reading a reader may quote when picking
one group out of several. A group the report does not count (a model below the paper's level) stays out of the
family."""

from __future__ import annotations

from qkov.docsgen import GeneratedBlock, Loader   # defined before the registry imports this module
from qkov.docsgen.findings_table import REAL_SETS
from qkov.records import real_runs


def build_real_family(load: Loader) -> str:
    """The family table over :data:`qkov.docsgen.findings_table.REAL_SETS` (the README row's sets)."""
    from qkov.study.real_inference import family_verdicts
    from qkov.study.real_summary import group_evidence, summarise_groups
    from qkov.study.rules import below_paper_level, real_data_evidence

    rows, evidence = [], []
    for set_name in REAL_SETS:
        groups = summarise_groups(real_runs(load(set_name)))
        for (name, g), e in zip(groups.items(), real_data_evidence(groups)):
            key = f"{name} (`{set_name}`)"
            gap = below_paper_level(g)
            rows.append((key, e.verdict, gap))
            if not gap:
                evidence.append(group_evidence(key, g))
    family = family_verdicts(evidence)
    lines = [f"One family across the {len(evidence)} counted real-data groups of "
             + ", ".join(f"`records/{s}.jsonl`" for s in REAL_SETS)
             + " (each group: its claim ratio vs 1 at best validation; in the family each group's supports and "
             "contradicts p are Holm-adjusted over the groups at one-sided 2.5 %):", "",
             "| group (record set) | its own verdict (counted by the report) | in the family across the groups |",
             "| --- | --- | --- |"]
    for key, own, gap in rows:
        fam = f"not in the family ({gap})" if gap else f"**{family[key]}**"
        lines.append(f"| {key} | {own} | {fam} |")
    return "\n".join(lines)


BLOCKS: tuple[GeneratedBlock, ...] = (
    GeneratedBlock("real-family", "docs/real-data.md", build_real_family, REAL_SETS),
)

__all__ = ["BLOCKS", "build_real_family"]
