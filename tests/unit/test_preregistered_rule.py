"""Known answers of the pre-registered 2 x 2 rule (qkov.study.preregistered.judge_preregistered), one per verdict
(and per way of being insufficient), and the plan reader's refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qkov.study.preregistered import (judge_preregistered, load_preregistration, parse_preregistration,
                                      plan_cells)

pytestmark = pytest.mark.unit

LEGS = [{"id": "H1", "effect": "A|B=low", "side": "attention", "alternative": "greater",
         "label": "QK alone raises the mass", "reversed_means": "contradicts", "null": None},
        {"id": "H2", "effect": "B|A=low", "side": "task", "alternative": "greater",
         "label": "embedding alone raises the task metric", "reversed_means": "insufficient", "null": None},
        {"id": "H3", "effect": "B|A=low", "side": "attention", "alternative": "less",
         "label": "embedding alone raises the mass", "reversed_means": "contradicts", "null": None}]
OUTCOMES = {"supports": "S", "contradicts": "C", "inconclusive": "I", "insufficient": "N",
            "supports+positive": "S and not additive"}
DESIGN = {"dataset": "hatexplain", "model": "paper", "epochs": 30}


def plan_data(**kw):
    d = dict(id="t", dataset="hatexplain", statement="s", design=DESIGN, factor="embedding", low=1, high=30,
             reading="best_val", seeds=[100, 101, 102, 103, 104], alpha=0.025, power=0.8, attention_margin=0.01,
             task_metric="accuracy", task_margin=0.01, legs=LEGS, interaction_margin=0.01, code_commit="abc",
             outcomes=OUTCOMES)
    d.update(kw)
    return d


PLAN = parse_preregistration(plan_data())
NOISE = (0.0, 0.01, -0.01, 0.005, -0.005)


def cells(qk_mass, emb_mass, emb_acc, inter=0.0, seeds=(100, 101, 102, 103, 104), qk_acc=-0.04, noise=1.0):
    """Best-validation cells whose per-seed effects are QK alone ``qk_mass`` (+noise), the embedding alone
    ``emb_mass`` / ``emb_acc``, and the interaction on the mass ``inter``."""
    out = {(1.0, 1.0): {}, (30.0, 1.0): {}, (1.0, 30.0): {}, (30.0, 30.0): {}}
    for i, s in enumerate(seeds):
        e = NOISE[i % 5] * noise
        base = {"relevant_mass_mean": 0.4, "accuracy": 0.62}
        out[(1.0, 1.0)][s] = base
        out[(30.0, 1.0)][s] = {"relevant_mass_mean": 0.4 + qk_mass + e, "accuracy": 0.62 + qk_acc}
        out[(1.0, 30.0)][s] = {"relevant_mass_mean": 0.4 + emb_mass + e / 2, "accuracy": 0.62 + emb_acc + e / 2}
        out[(30.0, 30.0)][s] = {"relevant_mass_mean": 0.4 + qk_mass + emb_mass + inter + e / 3,
                                "accuracy": 0.65}
    return out


@pytest.mark.parametrize("c, verdict", [
    (cells(0.13, -0.02, 0.03), "supports"),
    (cells(0.13, 0.10, 0.03), "contradicts"),           # the better-predicting arm sharpens too
    (cells(-0.05, -0.02, 0.03), "contradicts"),         # QK alone does not sharpen
    (cells(0.13, -0.02, -0.03), "insufficient"),        # the embedding arm does not predict better
    (cells(0.015, -0.02, 0.03), "inconclusive"),        # QK alone's interval reaches below the margin
])
def test_known_answers(c, verdict):
    v = judge_preregistered(PLAN, c)
    assert v.verdict == verdict, v.line
    assert f"-> {verdict}" in v.line and v.line.startswith("pre-registered t:")


def test_the_plans_meaning_of_the_outcome_and_the_interaction_are_in_the_line():
    v = judge_preregistered(PLAN, cells(0.13, -0.02, 0.03, inter=0.25))
    assert v.verdict == "supports" and v.interaction == "positive" and v.line.endswith("(S and not additive)")
    v = judge_preregistered(PLAN, cells(0.13, -0.02, 0.03, inter=0.0, noise=0.5))
    assert v.interaction == "additive" and v.line.endswith("(S)")


def test_incomplete_seeds_are_insufficient_with_interim_numbers_that_decide_nothing():
    c = cells(0.13, -0.02, 0.03, seeds=(100, 101, 102))
    v = judge_preregistered(PLAN, c)
    assert v.verdict == "insufficient" and "incomplete: 3 of 5 pre-registered seeds complete (done: 100, 101, 102)" in v.line
    assert "interim numbers of the 3 seeds done (not a verdict)" in v.line
    del c[(30.0, 30.0)][102]                      # a seed missing one cell is not complete
    assert "incomplete: 2 of 5" in judge_preregistered(PLAN, c).line


def test_seeds_outside_the_plan_are_ignored_and_runs_not_of_the_plan_are_named(tmp_path):
    def run(seed, qk, emb, **cfg):
        rates = {"qk": qk, "embedding": emb}
        return {"config": {**DESIGN, "ratio": qk, "seed": seed, "data_dir": "/d", **cfg},
                "metrics": {"rates": rates, "relevant_mass_mean": 0.5, "accuracy": 0.6,
                            "best_val": {"relevant_mass_mean": 0.4 + 0.1 * (qk > 1), "accuracy": 0.62}},
                "dir": tmp_path / f"r{seed}-{qk}-{emb}"}
    runs = [run(s, q, e) for s in (0, 100) for q in (1.0, 30.0) for e in (1.0, 30.0)]
    got, problems, ignored = plan_cells(PLAN, runs + [run(101, 1.0, 1.0, epochs=5)])
    assert set(got["best_val"]) == {(1.0, 1.0), (30.0, 1.0), (1.0, 30.0), (30.0, 30.0)}
    assert all(set(v) == {100} for v in got["best_val"].values())
    assert len(ignored) == 4 and all("seed 0" in x for x in ignored)
    assert problems == ["r101-1.0-1.0: epochs=5 (plan 30)"]
    assert "runs that are not the plan's" in judge_preregistered(PLAN, got["best_val"], problems).line


@pytest.mark.parametrize("change, message", [
    ({"alpha": 0.05}, "alpha: 0.05: must be the rules' one level, one-sided 0.025"),
    ({"seeds": [1]}, "seeds: [1]: must be at least 2 distinct integers >= 0"),
    ({"seeds": [1, 1, 2]}, "seeds"),
    ({"outcomes": {"supports": "x"}}, "outcomes: needs a text for every verdict"),
    ({"design": {"seed": 3}}, "design: must not fix seed"),
    ({"legs": [dict(LEGS[0], side="loss")]}, "legs[0]: side: 'loss': must be one of attention, task"),
    ({"legs": [dict(LEGS[0], effect="A")]}, "legs[0]: effect: 'A': must be one of"),
    ({"bogus": 1}, "bogus: unknown field"),
    ({"low": "1"}, "low: '1': must be"),
])
def test_the_plan_reader_refuses_bad_fields_in_one_line(change, message):
    with pytest.raises(ValueError, match=None) as e:
        parse_preregistration(plan_data(**change))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_the_plan_is_never_read_through_a_link(tmp_path):
    real = tmp_path / "plan.json"
    real.write_text(json.dumps(plan_data()))
    assert load_preregistration(real).seeds == (100, 101, 102, 103, 104)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(ValueError, match="preregistration: .*link.json"):
        load_preregistration(link)
    with pytest.raises(ValueError, match="JSONDecodeError"):
        (tmp_path / "bad.json").write_text("{")
        load_preregistration(Path(tmp_path / "bad.json"))


def test_the_committed_plan_parses_and_its_n_is_its_power_calculation():
    """docs/preregistration/decoupling-hatexplain.json: n = the largest over its legs of seeds_for_power on the
    planning SD recovered from the exploratory interval; fresh seeds; the rules' one level."""
    from tests.paths import ROOT
    from validation.metrics.power import power_at, sd_from_interval, seeds_for_power

    path = ROOT / "docs" / "preregistration" / "decoupling-hatexplain.json"
    plan = load_preregistration(path)
    planning = json.loads(path.read_text())["planning"]
    ns = []
    for leg in planning["legs"]:
        sd = sd_from_interval(*leg["exploratory_interval_95"], leg["exploratory_seeds"])
        assert sd == pytest.approx(leg["planning_sd"], abs=5e-6)
        delta = abs(leg["planned_true_effect"] - leg["null"])
        assert seeds_for_power(sd, delta, plan.alpha, plan.power) == leg["seeds_for_power"]
        assert power_at(sd, plan.n, delta, plan.alpha) == pytest.approx(leg["power_at_n"], abs=1e-4)
        ns.append(leg["seeds_for_power"])
    assert plan.n == max(ns) == planning["n"] == 18
    assert not set(plan.seeds) & (set(range(5)) | set(range(1234, 1239)))      # fresh seeds
    assert [leg.id for leg in plan.legs] == ["H1", "H2", "H3"] and plan.alpha == 0.025
