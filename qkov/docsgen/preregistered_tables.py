"""The generated blocks of pre-registered tests: each built from its committed plan (docs/preregistration/) and
its record set by :func:`qkov.study.real_summary.preregistered_markdown` (the rule,
:func:`qkov.study.preregistered.judge_preregistered`, decides; the builder restates nothing)."""

from __future__ import annotations

from typing import Callable

from qkov.docsgen import GeneratedBlock, Loader   # defined before the registry imports this module

PLANS = {"confirm-decoupling": ("docs/preregistration/decoupling-hatexplain.json", "hx-confirm")}
"""Block id -> (the plan's JSON, relative to the repository root; the record set of its runs)."""
SIDE_BY_SIDE = {"confirm-side-by-side": ("docs/preregistration/decoupling-hatexplain.json", "hx-2x2", "hx-confirm")}
"""Block id -> (the plan's JSON; the exploratory study's record set; the confirmatory record set): the two read by
the plan's rule beside each other, the confirmatory deciding (:func:`qkov.study.real_summary.side_by_side_markdown`)."""


def _builder(plan_path: str, set_name: str) -> Callable[[Loader], str]:
    def build(load: Loader) -> str:
        from qkov.docsgen import repo_root
        from qkov.records import real_runs
        from qkov.study.preregistered import load_preregistration
        from qkov.study.real_summary import preregistered_markdown

        records = load(set_name)
        wall = {r.run: float(r.provenance["wall_s"]) for r in records
                if isinstance(r.provenance.get("wall_s"), (int, float))}
        return preregistered_markdown(load_preregistration(repo_root() / plan_path), real_runs(records), wall)

    return build


def _side_by_side(plan_path: str, exploratory: str, confirmatory: str) -> Callable[[Loader], str]:
    def build(load: Loader) -> str:
        from qkov.docsgen import repo_root
        from qkov.records import real_runs
        from qkov.study.preregistered import load_preregistration
        from qkov.study.real_summary import side_by_side_markdown

        return side_by_side_markdown(load_preregistration(repo_root() / plan_path), real_runs(load(exploratory)),
                                     real_runs(load(confirmatory)), exploratory, confirmatory)

    return build


BLOCKS: tuple[GeneratedBlock, ...] = (
    *(GeneratedBlock(block_id, "docs/real-data.md", _builder(plan, records), (records,))
      for block_id, (plan, records) in PLANS.items()),
    *(GeneratedBlock(block_id, "docs/real-data.md", _side_by_side(plan, ex, co), (ex, co))
      for block_id, (plan, ex, co) in SIDE_BY_SIDE.items()))

__all__ = ["BLOCKS", "PLANS", "SIDE_BY_SIDE"]
