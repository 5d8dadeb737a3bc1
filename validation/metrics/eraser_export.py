"""Results in ERASER's JSONL format, readable by ``rationale_benchmark/metrics.py``.

One JSON object per line (per instance)::

    {
      "annotation_id": str,
      "rationales": [{
          "docid": str,
          "hard_rationale_predictions": [{"start_token": int, "end_token": int}, ...],
                                           # start inclusive, end exclusive, non-overlapping
          "soft_rationale_predictions": [float, ...]   # one per document token
      }],
      "classification": str,                           # the predicted class name
      "classification_scores": {class: float},         # p(x), normalised
      "comprehensiveness_classification_scores": {class: float},  # p(x without hard rationale)
      "sufficiency_classification_scores": {class: float},        # p(hard rationale only)
      "thresholded_scores": [{"threshold": k,
                              "comprehensiveness_classification_scores": {class: float},
                              "sufficiency_classification_scores": {class: float}}, ...]
    }

ERASER's scorer takes comprehensiveness/sufficiency as ``classification_scores[c] -
..._classification_scores[c]`` for the predicted class ``c`` and the AOPC as the average
over ``thresholded_scores`` (which must hold the same thresholds for every instance).
Token positions are those of the document as given (one document per instance here).
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

import numpy as np

from theory.files import atomic_write_bytes

from .eraser import FaithfulnessResult
from .plausibility import mask_to_spans


def _scores(row: Any, classes: Sequence[str]) -> dict[str, float]:
    row = np.asarray(row, dtype=np.float64).reshape(-1)
    if row.size != len(classes):
        raise ValueError(f"classification scores: {row.size} values for {len(classes)} classes")
    return {c: float(v) for c, v in zip(classes, row)}


def to_eraser_results(annotation_ids: Sequence[str], classes: Sequence[str], probs: Any, *,
                      docids: Sequence[str] | None = None, soft_scores: Sequence[Any] | None = None,
                      hard_masks: Sequence[Any] | None = None, predicted: Any = None,
                      comprehensiveness_probs: Any = None, sufficiency_probs: Any = None,
                      thresholded: Mapping[float, tuple[Any, Any]] | FaithfulnessResult | None = None,
                      path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Build ERASER result records (and write them as JSONL to ``path`` if given, atomically).

    Args:
        annotation_ids: ``N`` instance ids (ERASER's ``annotation_id``).
        classes: the ``C`` class names, in the order of the probability columns.
        probs: :math:`p(x)` ``(N, C)``.
        docids: ``N`` document ids (default: the annotation ids).
        soft_scores: per instance a 1-D array of token scores over the document's tokens
            (strip padding first); ``soft_rationale_predictions``.
        hard_masks: per instance a 1-D boolean mask over the document's tokens; written
            as its maximal spans in ``hard_rationale_predictions``.
        predicted: ``(N,)`` predicted class indices (default: argmax of ``probs``).
        comprehensiveness_probs, sufficiency_probs: ``(N, C)`` probabilities without /
            with only the hard rationale.
        thresholded: ``{k: (probs_without (N, C), probs_only (N, C))}`` or a
            :class:`~validation.metrics.eraser.FaithfulnessResult` (its bins and
            probabilities), written as ``thresholded_scores``.
        path: optional output ``.jsonl`` file.
    """
    n = len(annotation_ids)
    p = np.asarray(probs, dtype=np.float64)
    if p.shape != (n, len(classes)):
        raise ValueError(f"probs: expected shape ({n}, {len(classes)}), got {p.shape}")
    docids = list(annotation_ids) if docids is None else list(docids)
    pred = p.argmax(1) if predicted is None else np.asarray(predicted, dtype=np.int64).reshape(-1)
    for name, seq in (("docids", docids), ("soft_scores", soft_scores), ("hard_masks", hard_masks),
                      ("predicted", pred)):
        if seq is not None and len(seq) != n:
            raise ValueError(f"{name}: {len(seq)} entries for {n} instances")
    if isinstance(thresholded, FaithfulnessResult):
        thresholded = {float(k): (thresholded.probs_without[i], thresholded.probs_only[i])
                       for i, k in enumerate(thresholded.fractions)}
    records = []
    for i in range(n):
        rat: dict[str, Any] = {"docid": str(docids[i])}
        if hard_masks is not None:
            rat["hard_rationale_predictions"] = [{"start_token": s, "end_token": e}
                                                 for s, e in mask_to_spans(hard_masks[i])]
        if soft_scores is not None:
            rat["soft_rationale_predictions"] = [float(x) for x in np.asarray(soft_scores[i]).reshape(-1)]
        rec: dict[str, Any] = {"annotation_id": str(annotation_ids[i]), "rationales": [rat],
                               "classification": str(classes[int(pred[i])]),
                               "classification_scores": _scores(p[i], classes)}
        if comprehensiveness_probs is not None:
            rec["comprehensiveness_classification_scores"] = _scores(np.asarray(comprehensiveness_probs)[i], classes)
        if sufficiency_probs is not None:
            rec["sufficiency_classification_scores"] = _scores(np.asarray(sufficiency_probs)[i], classes)
        if thresholded:
            rec["thresholded_scores"] = [
                {"threshold": float(k),
                 "comprehensiveness_classification_scores": _scores(np.asarray(w)[i], classes),
                 "sufficiency_classification_scores": _scores(np.asarray(o)[i], classes)}
                for k, (w, o) in sorted(thresholded.items())]
        records.append(rec)
    if path is not None:
        text = "".join(json.dumps(r) + "\n" for r in records)
        atomic_write_bytes(path, text.encode("utf-8"))
    return records


def eraser_aopc_from_records(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """ERASER's dataset AOPC from result records: mean over instances and thresholds of
    ``classification_scores[c] - thresholded[...][c]`` for the predicted class ``c``."""
    comp, suff = [], []
    for r in records:
        c = r["classification"]
        base = r["classification_scores"][c]
        for t in sorted(r["thresholded_scores"], key=lambda x: x["threshold"]):
            comp.append(base - t["comprehensiveness_classification_scores"][c])
            suff.append(base - t["sufficiency_classification_scores"][c])
    return {"comprehensiveness_aopc": float(np.mean(comp)), "sufficiency_aopc": float(np.mean(suff))}


# --- the data side: ERASER's docs/ and <split>.jsonl, so that its scorer runs on qkov's output ---

def eraser_token(tok: str) -> str:
    """A token as ERASER's document loader will read it back.

    ERASER reads ``docs/<docid>`` as lines of space-separated tokens and drops empty ones, so a
    token that is empty or holds whitespace would shift every later position; such characters
    become ``_`` (an empty token becomes ``_``). Positions are what the scorer compares.
    """
    out = "".join("_" if ch.isspace() else ch for ch in tok)
    return out or "_"


def eraser_docid(annotation_id: str) -> str:
    """A file-name-safe document id (``/`` and leading dots replaced)."""
    d = str(annotation_id).replace("/", "_").replace("\\", "_")
    return "_" + d if d.startswith(".") or not d else d


def to_eraser_annotations(annotation_ids: Sequence[str], classifications: Sequence[str], tokens: Sequence[Sequence[str]],
                          gold_masks: Sequence[Any], *, docids: Sequence[str] | None = None,
                          query: str = "What is the class of this text?") -> tuple[dict[str, list[str]], list[dict]]:
    """ERASER documents and annotation records for ``N`` instances.

    Each instance ``i`` is one document ``docids[i]`` (default: :func:`eraser_docid` of its
    annotation id) holding ``tokens[i]`` (cleaned by :func:`eraser_token`), and one annotation
    ``{"annotation_id", "query", "evidences", "classification", "query_type", "docids"}`` whose
    evidences are the maximal spans of ``gold_masks[i]`` (one group per span; ``start_token``
    inclusive, ``end_token`` exclusive, sentences ``-1``). Returns ``(documents, annotations)``.
    """
    n = len(annotation_ids)
    for name, seq in (("classifications", classifications), ("tokens", tokens), ("gold_masks", gold_masks)):
        if len(seq) != n:
            raise ValueError(f"{name}: {len(seq)} entries for {n} instances")
    docids = [eraser_docid(a) for a in annotation_ids] if docids is None else [str(d) for d in docids]
    if len(set(docids)) != n:
        raise ValueError("docids: must be unique")
    documents: dict[str, list[str]] = {}
    annotations = []
    for i in range(n):
        toks = [eraser_token(t) for t in tokens[i]]
        mask = np.asarray(gold_masks[i], dtype=bool).reshape(-1)
        if mask.size != len(toks):
            raise ValueError(f"gold_masks: instance {i} has {mask.size} values for {len(toks)} tokens")
        documents[docids[i]] = toks
        evidences = [[{"text": " ".join(toks[s:e]), "docid": docids[i], "start_token": s, "end_token": e,
                       "start_sentence": -1, "end_sentence": -1}] for s, e in mask_to_spans(mask)]
        annotations.append({"annotation_id": str(annotation_ids[i]), "query": query, "evidences": evidences,
                            "classification": str(classifications[i]), "query_type": None,
                            "docids": [docids[i]]})
    return documents, annotations


def write_eraser_data(out_dir: str | os.PathLike[str], documents: Mapping[str, Sequence[str]],
                      annotations: Sequence[Mapping[str, Any]], *, split: str = "test",
                      results: Sequence[Mapping[str, Any]] | None = None) -> str:
    """Write ERASER's data layout: ``out_dir/docs/<docid>`` (one line of tokens) and
    ``out_dir/<split>.jsonl`` (annotations); with ``results``, also ``out_dir/results.jsonl``.
    Every file is written atomically. Returns ``out_dir``. Score with
    ``python rationale_benchmark/metrics.py --data_dir OUT --split test --results OUT/results.jsonl``.
    """
    out = os.fspath(out_dir)
    for docid, toks in documents.items():
        atomic_write_bytes(os.path.join(out, "docs", docid), (" ".join(toks) + "\n").encode("utf-8"))
    atomic_write_bytes(os.path.join(out, f"{split}.jsonl"),
                       "".join(json.dumps(a) + "\n" for a in annotations).encode("utf-8"))
    if results is not None:
        atomic_write_bytes(os.path.join(out, "results.jsonl"),
                           "".join(json.dumps(r) + "\n" for r in results).encode("utf-8"))
    return out


def export_eraser_data_dir(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> str:
    """Turn a classification run directory into a directory ERASER's scorer reads as is.

    Reads the run's ``eraser_docs.jsonl`` (``{"docid", "tokens"}`` per line),
    ``eraser_annotations.jsonl`` and ``eraser_results.jsonl`` and writes them with
    :func:`write_eraser_data` (split ``test``). Returns ``out_dir``.
    """
    run = os.fspath(run_dir)

    def lines(name: str) -> list[dict]:
        with open(os.path.join(run, name), encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    docs = {d["docid"]: d["tokens"] for d in lines("eraser_docs.jsonl")}
    return write_eraser_data(out_dir, docs, lines("eraser_annotations.jsonl"), results=lines("eraser_results.jsonl"))
