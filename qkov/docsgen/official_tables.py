"""The official presets' remaining differences from PAPER.md, generated from the code that holds them: each
dataset's registry entry (:mod:`validation.real.datasets`, ``official_differences``: the tuples of
:mod:`validation.real.official`), so the list a reader sees in docs/real-data.md is the list the preset declares
and the report prints beside an official group's verdict (:func:`qkov.report.real_table.setting_text`). It reads
no record set."""

from __future__ import annotations

from qkov.docsgen import GeneratedBlock, Loader   # defined before the registry imports this module


def build_official_differences(load: Loader) -> str:
    """One bullet list per dataset with official settings: every difference its preset lists (the registry's
    ``official_differences``, in order)."""
    from validation.real.datasets import DATASETS

    lines = ["What each official preset still does differently from PAPER.md, or reads where PAPER.md is silent "
             "(`validation.real.official`, through each dataset's registry entry `official_differences`; the report "
             "prints the same list beside every official group's verdict):"]
    for name, entry in DATASETS.items():
        if not entry.official:
            continue
        lines += ["", f"**{name}** (`--preset official`):", ""]
        lines += [f"- {d}" for d in entry.official_differences]
    return "\n".join(lines)


BLOCKS: tuple[GeneratedBlock, ...] = (
    GeneratedBlock("official-differences", "docs/real-data.md", build_official_differences, ()),
)

__all__ = ["BLOCKS", "build_official_differences"]
