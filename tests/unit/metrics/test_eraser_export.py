"""ERASER results JSONL: schema, spans, thresholds, and AOPC read back as ERASER's scorer does."""

import json

import numpy as np
import pytest
import torch

from validation.metrics.eraser import eraser_scores
from validation.metrics.eraser_export import eraser_aopc_from_records, to_eraser_results


def _model(w):
    def predict_proba(token_ids, keep):
        return torch.softmax((w[token_ids] * keep[..., None]).sum(1), dim=1)
    return predict_proba


def test_records_schema_and_aopc_roundtrip(tmp_path):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(6, 3, generator=g)
    ids = torch.randint(0, 6, (4, 10), generator=g)
    scores = torch.rand(4, 10, generator=g)
    valid = torch.ones(4, 10, dtype=torch.bool)
    valid[1, 7:] = False
    res = eraser_scores(_model(w), ids, scores, valid)
    hard = res.rationale_masks[2]  # the 10% rationale as the hard prediction
    path = tmp_path / "results.jsonl"
    lengths = valid.sum(1).tolist()
    recs = to_eraser_results([f"a{i}" for i in range(4)], ["neg", "neu", "pos"], res.probs,
                             docids=[f"d{i}" for i in range(4)],
                             soft_scores=[scores[i, :n] for i, n in enumerate(lengths)],
                             hard_masks=[hard[i, :n] for i, n in enumerate(lengths)],
                             predicted=res.predicted, comprehensiveness_probs=res.probs_without[2],
                             sufficiency_probs=res.probs_only[2], thresholded=res, path=path)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines == recs and len(lines) == 4
    r = lines[1]
    assert set(r) == {"annotation_id", "rationales", "classification", "classification_scores",
                      "comprehensiveness_classification_scores", "sufficiency_classification_scores",
                      "thresholded_scores"}
    assert r["annotation_id"] == "a1" and r["rationales"][0]["docid"] == "d1"
    assert len(r["rationales"][0]["soft_rationale_predictions"]) == 7
    spans = r["rationales"][0]["hard_rationale_predictions"]
    covered = sorted(t for s in spans for t in range(s["start_token"], s["end_token"]))
    assert covered == np.flatnonzero(hard[1, :7]).tolist()  # ceil(0.1 * 7) = 1 token
    assert len(covered) == 1
    assert sum(r["classification_scores"].values()) == pytest.approx(1.0)
    assert r["classification"] == ["neg", "neu", "pos"][int(res.predicted[1])]
    assert [t["threshold"] for t in r["thresholded_scores"]] == [0.01, 0.05, 0.1, 0.2, 0.5]
    # ERASER's scorer: mean over instances and thresholds of p_c(x) - p_c(perturbed)
    back = eraser_aopc_from_records(lines)
    assert back["comprehensiveness_aopc"] == pytest.approx(res.comprehensiveness_aopc().mean())
    assert back["sufficiency_aopc"] == pytest.approx(res.sufficiency_aopc().mean())
    # top-level comprehensiveness: p_c(x) - p_c(x without the hard rationale)
    c = r["classification"]
    assert r["classification_scores"][c] - r["comprehensiveness_classification_scores"][c] == \
        pytest.approx(res.comprehensiveness_points[1, 2])


def test_minimal_record_and_errors():
    recs = to_eraser_results(["x"], ["a", "b"], [[0.2, 0.8]])
    assert recs == [{"annotation_id": "x", "rationales": [{"docid": "x"}], "classification": "b",
                     "classification_scores": {"a": 0.2, "b": 0.8}}]
    with pytest.raises(ValueError, match="probs"):
        to_eraser_results(["x"], ["a", "b", "c"], [[0.2, 0.8]])
    with pytest.raises(ValueError, match="docids"):
        to_eraser_results(["x"], ["a", "b"], [[0.2, 0.8]], docids=["d1", "d2"])
