"""Every claim's rule (qkov.study.rules) on hand-built evidence, one case for every verdict it can return; every
claim and stage of theory.claims.CLAIMS has a rule; the exact-population case of issue 30 reaches its rule."""

from __future__ import annotations

import math

import pytest

from qkov.study import evidence_types as et
from qkov.study import rules
from theory.claims import CLAIMS

pytestmark = pytest.mark.unit

S, P, C, I, N = "supports", "supports in part", "contradicts", "inconclusive", "insufficient"
PAIRS_OK = ("CACO", "FACO", "CAFO", "FAFO")


def _fig2(eq, fq, *, start=0.349, spread=0.01, p_true=0.9, q_eq=0.08, q_fq=0.08):
    def st(name, d, q):
        return et.Figure2Setting(name, d, start, d - spread / 2, d + spread / 2, p_true, q)
    return et.Figure2("CACO", st("equal rates", eq, q_eq), st("faster QK", fq, q_fq), 1 / 50, "CACO, paper preset")


def _cell(ku=1.0, kv=0.3, shrink=True, p="CACO", r=1.0):
    return et.GrowthCell(p, r, ku, kv, 2.0, shrink)


def _trend(quantity, *values):
    return et.RatioTrend(quantity, (et.Series("CACO L=0.1", tuple(float(i + 1) for i in range(len(values))),
                                              tuple(values)),))


def _slope(adam, law=1.0, n=10, rng=(0.5, 0.005)):
    return et.AdamSlopes((et.SlopePair("CACO", 3.0, adam, law, n, rng),))


def _opt(points):
    return et.AdamDefault((et.AdamDefaultRun("CACO", "adam", tuple(points)),))


def _pt(r, lv, m, red=None, flow=None, d=1e-4, pred=None):
    return et.OptimizerPoint(r, lv, m, red if red is not None else m, flow, d, pred)


ON_SET_OK = [_pt(1, 0.1, 0.1, flow=0.2), _pt(1, 0.01, 0.05, flow=0.1),
             _pt(4, 0.1, 0.01, flow=0.1), _pt(4, 0.01, 0.001, flow=0.05)]


def _stab(leaves, measured, reduced, pred=None):
    pts = tuple(et.OptimizerPoint(1.0, lv, m, r, None, 1e-3, pred) for lv, m, r in zip((0.1, 0.01), measured, reduced))
    return et.Stability((et.StabilityPair("CACO", 1.0, leaves, pts),))


# rule -> [(evidence, expected verdict)]: a case for every verdict each rule can return
CASES = {
    rules.derivation_rule: [(et.DerivationEntry("derived"), S), (et.DerivationEntry("refined", "in part", "a limit"), P),
                            (et.DerivationEntry("refuted"), C), (et.DerivationEntry("unverified"), I),
                            (et.DerivationEntry("empirical"), N)],
    rules.derived_order_rule: [(et.DerivationEntry("derived", order=PAIRS_OK), P),     # asymptotic: in part
                               (et.DerivationEntry("derived", order=("FAFO", "CACO", "FACO", "CAFO")), C),
                               (et.DerivationEntry("refuted"), C), (et.DerivationEntry("unverified"), I),
                               (et.DerivationEntry("refined", order=("FAFO", "CAFO", "CACO", "FACO")), C),
                               (et.DerivationEntry("empirical"), N), (et.DerivationEntry("derived"), S)],
    rules.bound_rule: [(et.Bound("symmetric-distance", 1e-15), S), (et.Bound("symmetric-distance", 1e-3), C),
                       (et.Bound("symmetric-distance", math.nan), N), (et.Bound("paper-gap", 0.01, n=0), N)],
    rules.reduced_rule: [(et.ReducedAgreement((2.0, 1.98), 1e-7), S), (et.ReducedAgreement((2.0, 1.0), 1e-7), C),
                         (et.ReducedAgreement((2.0,), 1e-3), C), (et.ReducedAgreement((), 1e-7), N)],
    rules.growth_rule: [(et.Growth((_cell(), _cell(ku=0.53, p="CAFO"))), S),   # u/log t 2.01 is no failure
                        (et.Growth((_cell(), _cell(kv=2.6))), C), (et.Growth((_cell(ku=1.5),)), C),
                        (et.Growth((_cell(shrink=False),)), S), (et.Growth((_cell(ku=None),)), N)],
    rules.ratio_trend_rule: [(_trend("residual", 0.1, 0.05, 0.01), S), (_trend("residual", 0.1, 0.05, 0.2), C),
                             (_trend("residual", 0.1, 0.10001), N), (_trend("residual", 0.1, None), N),
                             (_trend("attention", 0.5, 0.7), S), (_trend("attention", 0.7, 0.5), C),
                             (_trend("attention", 0.5, 0.5005), N)],
    rules.order_rule: [(et.Order(tuple(zip(PAIRS_OK, (0.1, 0.1, 0.3, 0.2))), "residual-resolution"), S),
                       (et.Order(tuple(zip(PAIRS_OK, (0.03, 0.01, 0.04, 0.02))), "residual-resolution"), C),
                       (et.Order(tuple(zip(PAIRS_OK, (0.349, 0.349, 0.3491, 0.349))), "residual-resolution"), N),
                       (et.Order((("CACO", 0.1),)), N)],
    rules.figure2_rule: [(_fig2(0.349, 0.99), S), (_fig2(0.41, 0.04), C),
                         (_fig2(0.3494, 0.3485, spread=1e-4), N),             # uniform in both settings
                         (_fig2(0.349, 0.99, p_true=0.04), N),                # at chance (1/50 + 0.05)
                         (_fig2(0.40, 0.43, spread=0.05), N)],                # within the seed spread
    rules.adam_slopes_rule: [(_slope(1.02), S), (_slope(1.5), C), (_slope(1.0, n=2), N),
                             (_slope(1.0, rng=(0.02, 0.015)), N), (_slope(None), N)],
    rules.adam_default_rule: [(_opt(ON_SET_OK), S),
                              (_opt([_pt(p.ratio, p.level, p.measured, flow=p.flow, d=0.5) for p in ON_SET_OK]), P),
                              (_opt([_pt(1, 0.1, 0.1, flow=0.2), _pt(1, 0.01, 0.2, flow=0.1)]), C),
                              (_opt([_pt(1, 0.1, 0.1, red=0.2, flow=0.2)]), C),
                              (_opt([_pt(1, 0.1, None), _pt(4, 0.1, None)]), N)],
    rules.stability_rule: [(_stab(False, (0.1, 0.05), (0.1, 0.05)), S), (_stab(True, (0.1, 0.5), (0.1, 0.05)), S),
                           (_stab(True, (0.1, 0.05), (0.1, 0.05)), C), (_stab(False, (0.1, 0.5), (0.1, 0.05)), C),
                           (_stab(True, (0.1, 0.05), (0.1, 0.05), pred=0.2), C),
                           (_stab(True, (None, None), (0.1, 0.05)), N), (_stab(None, (0.1, 0.05), (0.1, 0.05)), N)],
}


@pytest.mark.parametrize("rule,ev,want", [(r, e, w) for r, cs in CASES.items() for e, w in cs],
                         ids=lambda x: getattr(x, "__name__", None))
def test_rule_known_answers(rule, ev, want):
    out = rule(ev)
    assert out.verdict == want, (out, ev)
    assert out.number                          # the one number is always stated, even when it decides nothing


def test_every_claim_and_stage_has_a_rule_and_every_rule_a_case_per_verdict():
    assert rules.missing_rules() == []
    assert set(rules.RULES) == set(CLAIMS)
    registered = {r for by_stage in rules.RULES.values() for r in by_stage.values()} | set(rules.EXTRA_RULES.values())
    assert registered - {rules.real_group_rule} <= set(CASES)
    for rule, cases in CASES.items():          # the verdicts each rule can return, each with a case
        can = {rules.derivation_rule: {S, P, C, I, N}, rules.derived_order_rule: {S, P, C, I, N},
               rules.adam_default_rule: {S, P, C, N}}.get(rule, {S, C, N})
        assert {w for _, w in cases} == can, rule.__name__


@pytest.mark.parametrize("outcome", [S, C, I, N])
def test_real_data_rule_delegates_to_the_real_summary_group_verdict(monkeypatch, outcome):
    import qkov.study.real_summary as rs

    seen = []
    monkeypatch.setattr(rs, "judge_group", lambda g: (seen.append(g), (outcome, f"note {outcome}"))[1])
    g = {"name": "sva"}
    out = rules.judge("real-data", "real", et.RealGroup("sva/sgd/small", g))
    assert seen == [g] and out.verdict == outcome and out.number == f"note {outcome}"


def test_real_data_evidence_is_one_record_per_group_each_with_its_own_line(monkeypatch):
    import qkov.study.real_summary as rs

    lines = {"sva": (C, "ratio 100 vs 1 at best_val: accuracy -0.044 [95% t -0.079, -0.012], n=3"),
             "hatexplain": (S, "ratio 30 vs 1 at best_val: mass +0.15 [95% t +0.11, +0.19], n=3")}
    monkeypatch.setattr(rs, "judge_group", lambda g: lines[g["dataset"]])
    groups = {"sva/sgd/small": {"dataset": "sva", "claim_ratio": 100.0, "dtap": {}},
              "hatexplain/adamw/small": {"dataset": "hatexplain", "claim_ratio": 30.0, "dtap": {"30": {}}}}
    ev = rules.real_data_evidence(groups)
    assert [e.verdict for e in ev] == [C, S]                    # one record per group, each its own verdict
    assert ev[0].numbers == "sva/sgd/small: " + lines["sva"][1] and ev[0].number == lines["sva"][1]
    assert ev[0].figure == "" and ev[1].figure == "dtap_hatexplain_adamw_small_r30"
    assert [e.verdict for e in rules.real_data_evidence({})] == [N]


@pytest.mark.parametrize("config, inits, gap", [
    ({"layers": 2, "quick": True, "glove": True}, ["random (GloVe vectors unavailable)"],
     "2 attention layers where the paper's model has 6; random embeddings where the paper's model starts from GloVe"),
    ({"layers": 6, "quick": True, "glove": True}, ["random (GloVe vectors unavailable)"],
     "random embeddings where the paper's model starts from GloVe"),
    ({"layers": 2, "quick": True, "glove": True}, ["glove 6B 50d"], "2 attention layers where the paper's model has 6"),
    ({"layers": 6, "quick": False, "glove": True}, ["glove 6B 50d"], ""),
    ({"layers": 6, "quick": False, "glove": False}, ["random"], ""),       # random was asked for: the model's own
])
def test_a_model_below_the_papers_level_is_scoped_not_counted(monkeypatch, config, inits, gap):
    """A decoder with fewer layers than the paper's, or random embeddings where GloVe was asked for, reads for its
    own model only: its contradiction (or support) is kept in the line and the real-data verdict is insufficient."""
    import qkov.study.real_summary as rs

    assert rules.below_paper_level({"dataset": "squad", "config": config, "embedding_init": inits}) == gap
    monkeypatch.setattr(rs, "judge_group", lambda g: (C, "ratio 20 vs 1 at best_val: f1 -2.7 [95% t -7.2, +1.8], n=3"))
    (e,) = rules.real_data_evidence({"squad/adamw/small/quick": {"dataset": "squad", "claim_ratio": 20.0, "dtap": {},
                                                                 "config": config, "embedding_init": inits}})
    if gap:
        assert e.verdict == N and e.caveat == f"below the paper's level: {gap}"
        assert e.number.startswith(f"contradicts for this model only, not counted ({gap}): ratio 20 vs 1")
    else:
        assert e.verdict == C and e.caveat == ""
    assert e.scope == "squad/adamw/small/quick"           # the report's real-data table keys on it


def test_real_data_rule_refuses_a_verdict_a_group_cannot_have(monkeypatch):
    import qkov.study.real_summary as rs

    monkeypatch.setattr(rs, "judge_group", lambda g: ("mixed", "two groups"))
    with pytest.raises(ValueError, match="not a group verdict"):
        rules.judge("real-data", "real", et.RealGroup("sva/sgd/small", {}))


def test_growth_rates_reports_the_loose_bound_as_its_finding():
    out = rules.growth_rule(et.Growth((_cell(kv=0.2), _cell(kv=0.35, shrink=False, p="CAFO", r=0.1))))
    assert out.verdict == S and "0.20-0.35" in out.number and "loose" in out.caveat
    assert "not yet converged by the last time at CAFO r=0.1" in out.caveat     # named, not judged


def test_combination_never_folds_a_contradiction_and_outcomes_are_named():
    assert rules.combine([S, C, S]) == C and rules.combine([S, I]) == P and rules.combine([N, N]) == N
    assert [rules.outcome_of(v) for v in (S, P, C, I, N, "")] == list(rules.OUTCOMES)


def test_exact_population_runs_from_the_symmetric_start_reach_the_sharpness_rules():
    """Issue 30's bug: population runs had no held-out curve, ``moved`` was set to inf and refused, so every
    population run was 'did not leave the start'. Now the attention change is final p - start p."""
    from qkov.study.synthetic_stage import evidence, trained
    from validation.synthetic.experiment import SyntheticConfig

    cfg = SyntheticConfig(ratios=(1.0, 10.0))         # GD on the population from the symmetric start
    # the quick study's numbers at loss 0.2: CACO 0.770 -> 0.970, CAFO 0.503 -> 0.902 (issue 30)
    p02 = {("CACO", 1.0): 0.770, ("CACO", 10.0): 0.970, ("FACO", 1.0): 0.70, ("FACO", 10.0): 0.95,
           ("CAFO", 1.0): 0.503, ("CAFO", 10.0): 0.902, ("FAFO", 1.0): 0.45, ("FAFO", 10.0): 0.85}

    def summary(p, r):
        lv = {"0.5": None, "0.3": None, "0.2": p02[(p, r)], "0.1": None, "0.05": None}
        return {"param": p, "ratio": r, "left_start": True, "final": {"p": p02[(p, r)] + 0.01}, "start": {"p": 0.3},
                "dtap": {"mean_mass": 0.5, "mean_p_true": 0.9}, "p_at_loss": lv,
                "spread": {"max_abs_u": 0.0, "max_abs_v": 0.0}}

    ss = [summary(p, r) for p in PAIRS_OK for r in (1.0, 10.0)]
    assert all(trained(cfg, s)[0] for s in ss)
    ev = {e.claim: e for e in evidence(cfg, ss, None)}
    assert ev["sharpness-ratio"].verdict == S and "4/4 steps" in ev["sharpness-ratio"].number
    assert ev["sharpness-order"].verdict == S
    # a summary of an older run without the start's p cannot say whether attention moved: insufficient, named
    old = [{k: v for k, v in s.items() if k != "start"} for s in ss]
    assert trained(cfg, old[0]) == (False, "attention change not measured")
    assert {e.claim: e for e in evidence(cfg, old, None)}["sharpness-ratio"].verdict == N


STAGE_AND_REPORT_MODULES = ("qkov/study/synthetic_stage.py", "qkov/study/simulate_stage.py", "qkov/study/derive_stage.py",
                            "qkov/study/figure2_run.py", "qkov/study/adam_run.py", "qkov/study/optimizer_run.py",
                            "qkov/report/content.py", "qkov/report/ledger.py", "qkov/report/render_html.py",
                            "qkov/report/render_markdown.py", "validation/synthetic/report.py")


@pytest.mark.parametrize("path", STAGE_AND_REPORT_MODULES)
def test_stage_and_report_modules_keep_no_threshold_and_decide_no_verdict(path):
    """No module-level numeric constant named like a bound (tolerance, margin, resolution, distance, gap, min),
    and no comparison against a threshold (``.judge(`` / ``.holds(`` / ``judge_*``): only qkov.study.rules decides."""
    import ast
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    tree = ast.parse((root / path).read_text())
    bound = re.compile(r"(TOL|MARGIN|RESOLUTION|DISTANCE|GAP|THRESHOLD|^MIN_|^MAX_ERR)", re.I)
    literal = [t.id for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
               and isinstance(node.value.value, float) for t in node.targets
               if isinstance(t, ast.Name) and bound.search(t.id)]
    assert literal == [], f"{path}: threshold constants {literal} belong in theory.claims.THRESHOLDS"
    calls = [n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
             for n in ast.walk(tree) if isinstance(n, ast.Call)]
    deciding = [c for c in calls if c in ("judge", "holds", "judge_fraction", "judge_threshold", "judge_order",
                                          "judge_bound")]
    assert deciding == [], f"{path}: decides a verdict itself ({deciding}); use qkov.study.rules"
