"""A HateXplain-style run's ERASER export plus the exported data directory pass the input
validation of ERASER's ``rationale_benchmark/metrics.py`` (re-implemented here from its
documented rules; the scorer is not vendored), and the scorer's numbers equal qkov's metrics.

The run is real (``execute_run`` on a small HateXplain-format data directory written here), so
the test covers what ``validation/real/run.py`` writes, not a hand-made record.
"""

from __future__ import annotations

import json
import random
from itertools import chain
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, auc, average_precision_score, precision_recall_curve

from validation.metrics.eraser_export import export_eraser_data_dir
from validation.real.config import RealRunConfig
from qkov.study.real_stage import execute_run

AOPC_THRESHOLDS = [0.01, 0.05, 0.1, 0.2, 0.5]  # the scorer's default --aopc_thresholds
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa", "lam", "mu"]


def _write_fake_hatexplain(root: Path, n_train: int = 60, n_test: int = 30) -> None:
    rng = random.Random(0)
    labels = ["hatespeech", "normal", "offensive"]

    def post(i: int, split: str) -> dict:
        lab = labels[i % 3]
        n = rng.randint(3, 9) if i != 3 else 20  # one post longer than max_len: truncated
        toks = [rng.choice(WORDS) for _ in range(n)]
        if i == 2:
            toks[1] = "two words"  # whitespace inside a token: the docs file must keep positions
        if i == 5:
            toks[0] = ""  # an empty token, likewise
        rec = {"post_id": f"{split}_{i}_gab" if lab != "normal" else None, "post_tokens": toks, "label": lab}
        if lab == "normal":
            rec["rationale"] = None
        else:
            mask = [int(rng.random() < 0.4) for _ in toks]
            if i == 6:
                mask = [1] * n  # all tokens gold: average precision skips it, the trapezoid keeps it
            if not any(mask):
                mask[0] = 1
            rec["rationale"] = mask
        return rec

    (root / "hatexplain").mkdir(parents=True)
    for split, n in (("train", n_train), ("test", n_test)):
        (root / "hatexplain" / f"{split}.jsonl").write_text(
            "".join(json.dumps(post(i, split)) + "\n" for i in range(n)))


def _validate_like_eraser(results: list[dict], docs: dict[str, list[str]], annotations: list[dict]) -> list[str]:
    """The checks ``verify_instances``/``verify_instance`` of ERASER's metrics.py make, as a list of errors."""
    errors = []
    ids = [r["annotation_id"] for r in results]
    if len(set(ids)) != len(ids):
        errors.append("duplicate annotation ids")
    thresholds = {t["threshold"] for t in results[0].get("thresholded_scores", [])} or None
    for r in results:
        a = r["annotation_id"]
        for rat in r["rationales"]:
            if rat["docid"] not in docs:
                errors.append(f"{a}: unknown docid {rat['docid']}")
                continue
            n = len(docs[rat["docid"]])
            spans = [(h["start_token"], h["end_token"]) for h in rat.get("hard_rationale_predictions", [])]
            for i, (s, e) in enumerate(spans):
                if s > n or e > n:
                    errors.append(f"{a}: span {(s, e)} outside a document of {n} tokens")
                for s2, e2 in spans[i + 1:]:
                    if set(range(s, e)) & set(range(s2, e2)):
                        errors.append(f"{a}: overlapping spans")
            soft = rat.get("soft_rationale_predictions", [])
            if soft and len(soft) != n:
                errors.append(f"{a}: {len(soft)} soft scores for {n} tokens")
        if not isinstance(r.get("classification", ""), str):
            errors.append(f"{a}: classification not a string")
        for key in ("classification_scores", "comprehensiveness_classification_scores",
                    "sufficiency_classification_scores"):
            if not isinstance(r.get(key, {}), dict):
                errors.append(f"{a}: {key} not a dict")
        if ("classification" in r) != ("classification_scores" in r):
            errors.append(f"{a}: classification without scores")
        if "comprehensiveness_classification_scores" in r and "classification" not in r:
            errors.append(f"{a}: comprehensiveness without classification")
        if "sufficiency_classification_scores" in r and "classification_scores" not in r:
            errors.append(f"{a}: sufficiency without classification scores")
        if "thresholded_scores" in r:
            if {t["threshold"] for t in r["thresholded_scores"]} != thresholds:
                errors.append(f"{a}: thresholds differ")
            if not {"comprehensiveness_classification_scores", "sufficiency_classification_scores",
                    "classification", "classification_scores"} <= set(r):
                errors.append(f"{a}: must have comprehensiveness_classification_scores, sufficiency_classification_"
                              "scores, classification, and classification_scores defined when including "
                              "thresholded scores")
            for t in r["thresholded_scores"]:
                if not {"comprehensiveness_classification_scores", "sufficiency_classification_scores"} <= set(t):
                    errors.append(f"{a}: threshold without both score sets")
    for key in ("classification", "comprehensiveness_classification_scores", "sufficiency_classification_scores",
                "thresholded_scores"):
        k = sum(1 for r in results if r.get(key) is not None)
        if k not in (0, len(results)):
            errors.append(f"{key}: {k} of {len(results)} instances")
    k = sum(1 for r in results if any(rat.get("soft_rationale_predictions") is not None for rat in r["rationales"]))
    if k not in (0, len(results)):
        errors.append(f"soft rationale predictions: {k} of {len(results)} instances")
    # what score_classifications needs: a result per annotation, and its class among the annotations'
    by_id = {r["annotation_id"]: r for r in results}
    missing = [a["annotation_id"] for a in annotations if a["annotation_id"] not in by_id]
    if missing:
        errors.append(f"{len(missing)} annotations without a result")
    return errors


def _spans_to_tokens(pairs) -> set:
    return {(k, t) for k, (s, e) in pairs for t in range(s, e)}


def _scorer_numbers(results: list[dict], docs: dict[str, list[str]], annotations: list[dict]) -> dict[str, float]:
    """The scorer's numbers (its definitions, written afresh) from the exported files."""
    out: dict[str, float] = {}
    truth = [((a["annotation_id"], ev["docid"]), (ev["start_token"], ev["end_token"]))
             for a in annotations for ev in chain.from_iterable(a["evidences"])]
    pred = [((r["annotation_id"], rat["docid"]), (h["start_token"], h["end_token"]))
            for r in results for rat in r["rationales"] for h in rat.get("hard_rationale_predictions", [])]
    # token-level instance-macro F1 over keys with a gold or predicted token
    tt, pt = _spans_to_tokens(truth), _spans_to_tokens(pred)
    f1s = []
    for key in {k for k, _ in tt} | {k for k, _ in pt}:
        g = {t for k, t in tt if k == key}
        h = {t for k, t in pt if k == key}
        p = len(g & h) / len(h) if h else 0.0
        r = len(g & h) / len(g) if g else 0.0
        f1s.append(0.0 if p == 0 or r == 0 else 2 * p * r / (p + r))
    out["token_f1"] = float(np.mean(f1s))
    # IOU F1 at 0.5, macro: mean recall over gold keys, mean precision over predicted keys, then F1
    gold_by, pred_by = {}, {}
    for k, sp in truth:
        gold_by.setdefault(k, set()).add(sp)
    for k, sp in pred:
        pred_by.setdefault(k, set()).add(sp)

    def iou(a, b):
        u = len(set(range(*a)) | set(range(*b)))
        return len(set(range(*a)) & set(range(*b))) / u if u else 0.0

    tps = {k: sum(max((iou(p, g) for g in gold_by.get(k, ())), default=0.0) >= 0.5 for p in ps)
           for k, ps in pred_by.items()}
    mr = np.mean([tps.get(k, 0) / len(v) for k, v in gold_by.items()])
    mp = np.mean([tps.get(k, 0) / len(v) for k, v in pred_by.items()])
    out["iou_f1"] = float(0.0 if mp == 0 or mr == 0 else 2 * mp * mr / (mp + mr))
    # soft scores: trapezoid AUPRC over every instance, average precision skipping single-class ones
    gold_tok = {}
    for (a, d), (s, e) in truth:
        gold_tok.setdefault((a, d), [False] * len(docs[d]))
        for t in range(s, e):
            gold_tok[(a, d)][t] = True
    soft = {(r["annotation_id"], rat["docid"]): rat["soft_rationale_predictions"]
            for r in results for rat in r["rationales"]}
    trap, ap = [], []
    for key, g in gold_tok.items():
        y = [int(x) for x in g]
        prec, rec, _ = precision_recall_curve(y, soft[key])
        trap.append(auc(rec, prec))
        if 0 < sum(y) < len(y):
            ap.append(average_precision_score(y, soft[key]))
    out["auprc_trapezoid"], out["auprc"] = float(np.mean(trap)), float(np.mean(ap))
    # classification, comprehensiveness, sufficiency, AOPC
    by_id = {r["annotation_id"]: r for r in results}
    out["accuracy_annotated"] = float(accuracy_score([a["classification"] for a in annotations],
                                                     [by_id[a["annotation_id"]]["classification"] for a in annotations]))
    comp, suff, acomp, asuff = [], [], [], []
    for r in results:
        c = r["classification"]
        base = r["classification_scores"][c]
        comp.append(base - r["comprehensiveness_classification_scores"][c])
        suff.append(base - r["sufficiency_classification_scores"][c])
        ts = [t for t in sorted(r["thresholded_scores"], key=lambda t: t["threshold"])
              if t["threshold"] in AOPC_THRESHOLDS]
        assert len(ts) == len(AOPC_THRESHOLDS)
        acomp.append([base - t["comprehensiveness_classification_scores"][c] for t in ts])
        asuff.append([base - t["sufficiency_classification_scores"][c] for t in ts])
    out["comprehensiveness_hard"], out["sufficiency_hard"] = float(np.mean(comp)), float(np.mean(suff))
    out["comprehensiveness_aopc"], out["sufficiency_aopc"] = float(np.mean(acomp)), float(np.mean(asuff))
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("eraser")
    _write_fake_hatexplain(root / "data")
    cfg = RealRunConfig(dataset="hatexplain", data_dir=str(root / "data"), d=8, epochs=2, batch_size=8, max_len=12,
                        seed=0, lr_ov=3e-3)
    execute_run(cfg, root / "run", progress=False)
    out = Path(export_eraser_data_dir(root / "run", root / "eraser_data"))
    metrics = json.loads((root / "run" / "metrics.json").read_text())
    return root, out, metrics


def _load(out: Path):
    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    annotations = [json.loads(x) for x in (out / "test.jsonl").read_text().splitlines()]
    # ERASER's document loader: non-empty stripped lines, split on " ", empty tokens dropped, flattened
    docs = {}
    for f in (out / "docs").iterdir():
        lines = [ln.strip() for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
        docs[f.name] = [t for ln in lines for t in ln.split(" ") if t]
    return results, docs, annotations


def test_export_passes_erasers_input_validation(exported):
    _, out, metrics = exported
    results, docs, annotations = _load(out)
    assert len(results) == len(annotations) == metrics["n_annotated"] > 0
    assert _validate_like_eraser(results, docs, annotations) == []
    # the old export (no top-level faithfulness fields) is rejected by the same validation
    stripped = [{k: v for k, v in r.items() if k not in ("comprehensiveness_classification_scores",
                                                         "sufficiency_classification_scores")} for r in results]
    assert any("must have comprehensiveness_classification_scores" in e
               for e in _validate_like_eraser(stripped, docs, annotations))
    # positions survive the docs round trip: the truncated post has max_len - 1 tokens
    assert max(len(d) for d in docs.values()) == 11


def test_scorer_numbers_equal_qkov_metrics(exported):
    _, out, metrics = exported
    results, docs, annotations = _load(out)
    got = _scorer_numbers(results, docs, annotations)
    for key, value in got.items():
        # same float64 inputs, different summation order: 1e-12 absolute on numbers in [-1, 1]
        assert value == pytest.approx(metrics[key], abs=1e-12), key
    assert metrics["auprc"] != pytest.approx(metrics["auprc_trapezoid"], abs=1e-6)  # the two AUPRCs differ
    assert metrics["n_annotated"] < metrics["n_test"]


VENDORED_SCORER = Path(__file__).resolve().parents[2] / "vendor" / "eraserbenchmark"


def test_official_eraser_scorer_validates_the_export_and_its_numbers_equal_qkovs(exported, tmp_path):
    """ERASER's own ``rationale_benchmark/metrics.py`` (vendored, unmodified: tests/vendor/eraserbenchmark)
    run with ``--strict`` on the export: its input validation passes and every score equals qkov's."""
    import os
    import subprocess
    import sys

    _, out, metrics = exported
    score_file = tmp_path / "scores.json"
    proc = subprocess.run([sys.executable, "-m", "rationale_benchmark.metrics", "--data_dir", str(out),
                           "--results", str(out / "results.jsonl"), "--split", "test", "--strict",
                           "--score_file", str(score_file)],
                          env={**os.environ, "PYTHONPATH": str(VENDORED_SCORER)}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "0 instances fail validation" in proc.stderr
    s = json.loads(score_file.read_text())
    c = s["classification_scores"]
    official = {"iou_f1": s["iou_scores"][0]["macro"]["f1"], "token_f1": s["token_prf"]["instance_macro"]["f1"],
                "auprc": s["token_soft_metrics"]["average_precision"],
                "auprc_trapezoid": s["token_soft_metrics"]["auprc"], "accuracy_annotated": c["accuracy"],
                "comprehensiveness_hard": c["comprehensiveness"], "sufficiency_hard": c["sufficiency"],
                "comprehensiveness_aopc": c["comprehensiveness_aopc"], "sufficiency_aopc": c["sufficiency_aopc"]}
    for key, value in official.items():
        # same float64 inputs, different summation order: 1e-12 absolute on numbers in [-1, 1]
        assert metrics[key] == pytest.approx(value, abs=1e-12), key
