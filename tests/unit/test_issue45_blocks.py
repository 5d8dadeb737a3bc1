"""The two generated blocks of issue 45: the official presets' differences come from the presets themselves, and
the family across the real-data groups reduces to each group's own verdict when the family has one group."""

from __future__ import annotations

import re

import pytest

from qkov.docsgen import loader
from qkov.docsgen.family_tables import build_real_family
from qkov.docsgen.findings_table import REAL_SETS
from qkov.docsgen.official_tables import build_official_differences
from tests.paths import ROOT
from validation.real.datasets import DATASETS

pytestmark = pytest.mark.unit


def test_the_differences_block_is_every_presets_own_list_in_order():
    text = build_official_differences(lambda name: [])
    official = [k for k, d in DATASETS.items() if d.official]
    assert official and set(official) == set(re.findall(r"^\*\*(\w+)\*\* \(`--preset official`\):$", text, re.M))
    for name in official:
        section = text.split(f"**{name}** (`--preset official`):", 1)[1].split("\n\n**", 1)[0]
        bullets = [line[2:] for line in section.splitlines() if line.startswith("- ")]
        assert bullets == list(DATASETS[name].official_differences), name


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| group") and not line.startswith("| ---")]


@pytest.mark.parametrize("only", REAL_SETS)
def test_a_family_of_one_group_set_keeps_each_groups_own_verdict(only):
    """Holm over one group is the identity, so with one set (one or two groups) each counted group's family
    verdict equals its own only where the set has one group; with every set the family has one row per group."""
    records = loader(ROOT)
    rows = _rows(build_real_family(lambda name: records(name) if name == only else []))
    counted = [r for r in rows if not r[2].startswith("not in the family")]
    if len(counted) == 1:
        assert counted[0][2] == f"**{counted[0][1]}**"
    assert all(f"(`{only}`)" in r[0] for r in rows)


def test_the_family_over_every_set_has_one_row_per_group():
    from qkov.records import real_runs
    from qkov.study.real_summary import summarise_groups

    records = loader(ROOT)
    rows = _rows(build_real_family(records))
    assert len(rows) == sum(len(summarise_groups(real_runs(records(s)))) for s in REAL_SETS)
    assert all(r[2].startswith("**") or r[2].startswith("not in the family") for r in rows)
