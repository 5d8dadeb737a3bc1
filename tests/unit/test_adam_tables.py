"""The Adam phase-diagram blocks (qkov.docsgen.adam_tables) from constructed adam-phase records: the calls are the
rule's, the held-out split leaves out the development case, the Brier scores and the reliability bins add up."""

from __future__ import annotations

import pytest

from qkov.docsgen import adam_tables as at
from qkov.records import Record
from validation.synthetic.ensemble import wilson

pytestmark = pytest.mark.unit


def _record(param, K, M, lr, u0, k, pred, n=64):
    """One cell with one start, ratios 1 and 4, one level; ``k`` members of ``n`` de-sharpen at ratio 4."""
    lo, hi = wilson(k, n)
    start = {"u0": u0, "ratios": [1.0, 4.0], "levels": [0.01], "reached": [[n], [n]],
             "one_minus_p_median": [[0.03], [0.003]], "one_minus_p_q10": [[0.03], [0.002]],
             "one_minus_p_q90": [[0.03], [0.19]], "distance_median": [[1e-5], [0.7]],
             "desharpen_k": [[None], [k]], "desharpen_n": [[None], [n]], "p_desharpen_lo": [[None], [lo]],
             "p_desharpen_hi": [[None], [hi]], "predicted": {"4": [pred]}, "sets": {}, "predictor_cpu_s": 2.0}
    cfg = {"param": param, "K": K, "M": M, "lr": lr}
    return Record("adam-phase", f"adam-phase-{param}{K}{M}{u0}{lr}", "adam-phase", cfg,
                  {"config": cfg, "ensemble_cpu_s": 8.0, "confidence": 0.95, "starts": {f"u0={u0:g}": start}}, {})


RECORDS = [_record("CACO", 4, 3, 1e-3, 0.1, 17, 0.18),     # the development case: left out of calibration
           _record("CACO", 3, 2, 1e-3, 0.1, 36, 0.5),
           _record("FAFO", 4, 3, 1e-3, 0.1, 0, 0.0),
           _record("CACO", 3, 2, 1e-2, 0.5, 4, 0.0)]


def load(name):
    assert name == at.PHASE_SET
    return RECORDS


def test_phase_table_marks_each_call_by_the_rule():
    t = at.phase_table(load)
    assert "36/64 [0.44, 0.68] **de-sharpens**, pred 0.50" in t
    assert "0/64 [0.00, 0.06] sharpens, pred 0.00" in t
    assert "4/64 [0.02, 0.15] undecided, pred 0.00" in t


def test_region_groups_configurations_by_call():
    r = at.region_text(load)
    assert "reliably sharpens** (every ratio 4 at every L in 0.01" in r and "1 of 4 configurations: FAFO K=3" not in r
    assert "FAFO K=4 M=3 u0=0.1 lr=0.001" in r.split("\n")[0]
    assert "CACO K=3 M=2 u0=0.1 lr=0.001 (ratio@L: 4@0.01)" in r.split("\n")[1]
    assert "CACO K=3 M=2 u0=0.5 lr=0.01" in r.split("\n")[2]


def test_calibration_holds_out_the_development_case():
    c = at.calibration_table(load)
    assert c.startswith("Held out: 3 (configuration, ratio, level) points, 192 member outcomes")
    brier = (36 * 0.5 ** 2 + 28 * 0.5 ** 2 + 0 + 4 * 1.0) / 192
    assert f"| Brier, sign-pattern predictor | {brier:.4f} |" in c
    assert f"| Brier, \"never de-sharpens\" (p = 0) | {(36 + 4) / 192:.4f} |" in c
    assert "| 0 | 2 | 128 | 0.000 | 0.031 |" in c and "| (0.25, 0.5] | 1 | 64 | 0.500 | 0.562 |" in c
    assert "inside the ensemble's Wilson interval | 2/3 |" in c    # 0.0 is outside [0.02, 0.15]


def test_readme_summary_counts_the_region_by_the_rule():
    """The README block reads the same calls as the region block: 2 of 4 configurations de-sharpen (36/64 and
    17/64), 1 is undecided (4/64, interval over 0.1), 1 reliably sharpens (0/64); with no case records it still
    states its scope."""
    def load_both(name):
        return RECORDS if name == at.PHASE_SET else []

    r = at.readme_text(load_both)
    assert "reliably sharpens (every interval at or below 0.1) in 1 of 4 configurations" in r
    assert "in 2 (CACO K=3 M=2 u0=0.1 lr=0.001; CACO K=4 M=3 u0=0.1 lr=0.001)" in r
    assert "1 undecided (CACO K=3 M=2 u0=0.5 lr=0.01)" in r
    assert "lr 0.001, 0.01" in r and "CACO and FAFO" in r
    assert r.rstrip().endswith("not other betas, larger sizes or real data.")


def _case_record(k=(0, 17), pred=(0.0, 0.1755775), confidence=0.95, betas=(0.9, 0.999), eps=1e-8):
    """Issue 41's case as ``qkov export`` writes it (record set ``adam-desharpen``): ratios 1 and 4, two levels,
    ``k`` of 64 members de-sharpen at ratio 4."""
    los, his = zip(*(wilson(x, 64, confidence) for x in k))
    pair = {"desharpen_k": list(k), "desharpen_n": [64, 64], "p_desharpen_lo": list(los),
            "p_desharpen_hi": list(his), "predicted_p_desharpen": list(pred)}
    run = {"K": 4, "M": 3, "dt": 0.001, "u0": 0.1, "v0": 0.1, "levels": [0.1, 0.01],
           "ensemble": {"size": 64, "amplitude": 1e-6, "confidence": confidence},
           "pairs": {"r=1": {"measured": [0.08, 0.03]}, "r=4": pair}}
    cfg = {"betas": list(betas), "eps": eps, "ratios": [1.0, 4.0]}
    return Record(at.CASE_SET, "synthetic-optimizer-x", "synthetic-optimizer", cfg, {"params": {"CACO": run}}, {})


def test_readme_summary_states_the_case_probability_interval_prediction_and_scope():
    """Known answer: 0/64 and 17/64 at the 95% level are [0, 0.0566] and [0.173, 0.385] (Wilson); the prediction,
    the level and the optimizer's betas come from the record (a 90% record reads 90%, another eps reads it)."""
    r = at.readme_text(lambda name: [_case_record()] if name == at.CASE_SET else [])
    assert ("Issue 41's case (CACO, K=4, M=3, u0=v0=0.1, lr 0.001, ratio 4 against 1, 64 starts at 1e-06 relative): "
            "L = 0.1: 0/64 = 0.00 [0.00, 0.06], predicted 0.00; L = 0.01: 17/64 = 0.27 [0.17, 0.38], predicted 0.18.") in r
    assert "with its 95% Wilson interval" in r and "Adam(0.9, 0.999, eps 1e-08);" in r
    assert "Over the phase diagram" not in r                      # no phase records: no region sentence
    other = at.readme_text(lambda name: [_case_record(confidence=0.9, eps=1e-6)] if name == at.CASE_SET else [])
    lo, hi = wilson(17, 64, 0.9)
    assert "with its 90% Wilson interval" in other and f"17/64 = 0.27 [{lo:.2f}, {hi:.2f}]" in other
    assert "Adam(0.9, 0.999, eps 1e-06);" in other


def test_findings_row_reads_the_adam_records():
    """README's ``adam-ratio-default`` row joins the committed adam-desharpen ensemble's evidence (its P(de-sharpen)
    with the interval, as the rules judged it) to the quick study's, unmarked, with the command that reproduces it."""
    from qkov.docsgen import loader
    from qkov.docsgen.findings_table import CLAIM_SETS, build_findings, evidence_of
    from tests.paths import ROOT

    load = loader(ROOT)
    row = next(line for line in build_findings(load).splitlines() if line.startswith("| **adam-ratio-default**"))
    ((name, command),) = CLAIM_SETS["adam-ratio-default"]
    ens = [e for _, e, _ in evidence_of(load(name)) if e.claim == "adam-ratio-default"]
    assert ens and all("P(de-sharpen)" in e.number for e in ens)
    assert all(e.number in row for e in ens) and command in row
    assert "to be replaced" not in row
