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


def _value(v: object) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={float(x):g}" for k, x in sorted(v.items())) or "-"
    if isinstance(v, (tuple, list)):
        return ", ".join(map(str, v)) or "-"
    return "-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def build_official_settings(load: Loader) -> str:
    """Per dataset with official settings, the run configuration ``--preset official`` resolves to
    (:func:`validation.real.config.default_config` at the preset's claim ratio) beside the sized paper model's
    (the default preset, the same model, optimizer and ratio): every field that differs, then each optimizer
    group's rate factor (:func:`validation.real.config.group_rates`; a group's rate is factor x ``lr_ov``)."""
    import dataclasses

    from validation.real.config import RATE_GROUPS, claim_ratio, default_config, group_rates
    from validation.real.datasets import DATASETS

    lines = ["What `--preset official` sets, read from the code (`validation.real.config.default_config(..., "
             "preset=\"official\")` at the paper's ratio) beside the sized paper model (`--preset sized --model "
             "paper`, the same optimizer and ratio); every field not named is the same in both. The rate factors "
             "are each optimizer group's (`group_rates`: a group's rate is factor x `lr_ov`; frozen parameters are "
             "in no group; `-`: not set, the code's default):"]
    for name, entry in DATASETS.items():
        if not entry.official:
            continue
        ratio = claim_ratio(name, "official")
        off = default_config(name, ratio=ratio, seed=0, quick=False, data_dir="DATA", preset="official")
        sized = default_config(name, ratio=ratio, seed=0, quick=False, data_dir="DATA", model=off.model,
                               optimizer=off.optimizer)
        lines += ["", f"**{name}**, ratio {ratio:g} ({off.model} model, {off.optimizer}):", "",
                  "| setting | `--preset official` | `--preset sized` |", "| --- | --- | --- |"]
        for f in dataclasses.fields(off):
            a, b = getattr(off, f.name), getattr(sized, f.name)
            if a != b and f.name != "preset":
                lines.append(f"| `{f.name}` | {_value(a)} | {_value(b)} |")
        ro, rs = group_rates(off), group_rates(sized)
        lines.append("| rate factor per group | " + ", ".join(f"{g} {ro[g]:g}" for g in RATE_GROUPS) + " | "
                     + ", ".join(f"{g} {rs[g]:g}" for g in RATE_GROUPS) + " |")
    return "\n".join(lines)


BLOCKS: tuple[GeneratedBlock, ...] = (
    GeneratedBlock("official-differences", "docs/real-data.md", build_official_differences, ()),
    GeneratedBlock("official-settings", "docs/real-data.md", build_official_settings, ()),
)

__all__ = ["BLOCKS", "build_official_differences", "build_official_settings"]
