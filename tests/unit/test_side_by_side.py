"""Known answers of the exploratory-beside-confirmatory block (qkov.study.real_summary.side_by_side_markdown, the
docs block ``confirm-side-by-side``): incomplete confirmatory input reads ``interim: k of n seeds`` and decides
nothing; complete input gives the rule's verdict, for every verdict the pre-registered rule can return; the
records re-exported from two results directories regenerate the same block."""

from __future__ import annotations

import pytest

from qkov.study.real_summary import side_by_side_markdown
from tests.unit.test_preregistered_rule import DESIGN, NOISE, plan_data
from qkov.study.preregistered import parse_preregistration

pytestmark = pytest.mark.unit

SEEDS = tuple(range(100, 118))
PLAN = parse_preregistration(plan_data(seeds=list(SEEDS)))


def runs(qk_mass, emb_mass, emb_acc, inter=0.0, seeds=SEEDS, skip=()):
    """Run dicts (as :func:`qkov.records.real_runs` gives them) of a 2 x 2 whose per-seed effects are QK alone
    ``qk_mass``, the embedding alone ``emb_mass`` / ``emb_acc`` and the interaction on the mass ``inter`` (each
    with a small seed-level noise); cells in ``skip`` (``(seed, qk, emb)``) are left out."""
    out = []
    for i, s in enumerate(seeds):
        e = NOISE[i % 5]
        cells = {(1.0, 1.0): (0.4, 0.62), (30.0, 1.0): (0.4 + qk_mass + e, 0.58),
                 (1.0, 30.0): (0.4 + emb_mass + e / 2, 0.62 + emb_acc + e / 2),
                 (30.0, 30.0): (0.4 + qk_mass + emb_mass + inter + e / 3, 0.65)}
        for (a, b), (mass, acc) in cells.items():
            if (s, a, b) in skip:
                continue
            m = {"relevant_mass_mean": mass, "accuracy": acc}
            out.append({"config": {**DESIGN, "ratio": a, "seed": s, "data_dir": "/d",
                                   **({"rates": {"embedding": b}} if b != 1 else {})},
                        "metrics": {"rates": {"qk": a, "embedding": b}, **m, "best_val": m},
                        "dir": __import__("pathlib").Path(f"validate-real-{s}-{a:g}-{b:g}")})
    return out


EXPLORATORY = runs(0.09, -0.02, 0.03, inter=0.2, seeds=(0, 1, 2, 3))


def test_incomplete_input_reads_interim_and_decides_nothing():
    md = side_by_side_markdown(PLAN, EXPLORATORY, runs(0.13, -0.02, 0.03, seeds=SEEDS[:6]), "hx-2x2", "hx-confirm")
    assert md.startswith("**Confirmatory verdict: none yet (interim: 6 of 18 seeds;")
    assert "confirmatory (interim: 6 of 18 seeds): seeds 100-105 (`records/hx-confirm.jsonl`)" in md
    assert "exploratory: seeds 0-3 (`records/hx-2x2.jsonl`)" in md
    assert "| insufficient (interim: 6 of 18 seeds: no verdict before all 18 seeds) |" in md
    assert "(decides)" not in md and "What the outcome means" not in md
    # a seed missing one cell is not complete: 17 complete seeds are still interim
    md = side_by_side_markdown(PLAN, EXPLORATORY, runs(0.13, -0.02, 0.03, skip={(117, 30.0, 30.0)}))
    assert "interim: 17 of 18 seeds" in md and "(decides)" not in md


@pytest.mark.parametrize("effects, verdict, interaction", [
    ((0.13, -0.02, 0.03, 0.25), "supports", "positive"),
    ((0.13, -0.02, 0.03, 0.0), "supports", "additive"),
    ((0.13, -0.02, 0.03, -0.25), "supports", "negative"),
    ((0.13, 0.10, 0.03, 0.0), "contradicts", "additive"),       # the better-predicting arm sharpens too
    ((-0.05, -0.02, 0.03, 0.0), "contradicts", "additive"),     # QK alone does not sharpen
    ((0.13, -0.02, -0.03, 0.0), "insufficient", "additive"),    # the embedding arm does not predict better
    ((0.0115, -0.02, 0.03, 0.0), "inconclusive", "additive"),   # QK alone's interval reaches below the margin
])
def test_complete_input_gives_the_rules_verdict_in_the_deciding_column(effects, verdict, interaction):
    md = side_by_side_markdown(PLAN, EXPLORATORY, runs(*effects))
    assert md.startswith(f"**Confirmatory verdict (18 of 18 seeds): {verdict}; interaction on the mass: "
                         f"{interaction}**"), md.splitlines()[0]
    assert f"| **{verdict}; {interaction}** (decides) |" in md and "interim" not in md
    assert "| inconclusive; positive (does not decide) |" in md or "(does not decide)" in md
    meaning = PLAN.outcomes.get(f"{verdict}+{interaction}", PLAN.outcomes[verdict])
    assert md.rstrip().endswith(f"What the outcome means (the plan's text): {meaning}")


def test_runs_not_of_the_plan_keep_it_undecided():
    bad = runs(0.13, -0.02, 0.03)
    bad[0] = {**bad[0], "config": {**bad[0]["config"], "epochs": 5}}
    md = side_by_side_markdown(PLAN, EXPLORATORY, bad)
    assert "none yet" in md and "(decides)" not in md


def test_records_exported_from_two_results_dirs_regenerate_the_same_block(tmp_path):
    """The lead re-exports hx-confirm from two results directories (``qkov export --out A --out B``): the block
    reads the record set, not the directories, so the records of both give the block of all the runs."""
    from qkov.records import Record, real_runs

    def record(r):
        name = r["dir"].name
        return Record(set="hx-confirm", run=name, kind="validate-real", config=r["config"], metrics=r["metrics"],
                      provenance={"wall_s": 60.0})

    every = runs(0.13, -0.02, 0.03, inter=0.25)
    half_a = [record(r) for r in every if r["config"]["seed"] % 2 == 0]
    half_b = [record(r) for r in every if r["config"]["seed"] % 2 == 1]
    merged = sorted(half_a + half_b, key=lambda x: x.run)
    md = side_by_side_markdown(PLAN, EXPLORATORY, real_runs(merged))
    assert md == side_by_side_markdown(PLAN, EXPLORATORY, every)
    assert "(18 of 18 seeds): supports; interaction on the mass: positive" in md
