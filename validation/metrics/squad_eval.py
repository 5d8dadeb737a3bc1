r"""SQuAD exact match and F1, as the official v1.1 evaluation script computes them.

Answer normalisation: lower-case, drop punctuation (``string.punctuation``), drop the
articles *a*, *an*, *the* (as whole words), collapse whitespace. For a prediction
:math:`\hat a` and gold answers :math:`a^{(1..G)}`:

.. math::
    \text{EM} = \max_g [\,\text{norm}(\hat a) = \text{norm}(a^{(g)})\,], \qquad
    \text{F1} = \max_g \frac{2PR}{P+R},\ P = \frac{|\hat T\cap T_g|}{|\hat T|},\
    R = \frac{|\hat T\cap T_g|}{|T_g|},

with :math:`\cap` the multiset intersection of whitespace tokens of the normalised strings
(F1 = 0 when no token is shared). :func:`evaluate` averages over *every* question in the
data set (an unanswered one scores 0) and reports percentages.

Unanswerable questions (SQuAD v2.0, which the official code of the paper used; no gold
answers) follow the v2.0 script: the only gold answer is the empty string, and a pair in
which either side has no tokens scores 1 if both are empty, else 0.
"""

from __future__ import annotations

import json
import os
import re
import string
from collections import Counter
from typing import Any, Mapping, Sequence

LOWER_IS_BETTER = {"exact_match": False, "f1": False}

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower-case, remove punctuation, articles and extra whitespace (official SQuAD)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _f1_pair(pred: str, gold: str, *, v2_empty: bool) -> float:
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    if v2_empty and (not p or not g):
        return float(p == g)
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def exact_match(pred: str, golds: Sequence[str] | str) -> float:
    r"""1.0 if the normalised prediction equals some normalised gold answer, else 0.0."""
    golds = [golds] if isinstance(golds, str) else (list(golds) or [""])
    return float(max(normalize_answer(pred) == normalize_answer(g) for g in golds))


def f1(pred: str, golds: Sequence[str] | str) -> float:
    r"""Token F1 of the prediction against the best-matching gold answer, in [0, 1]."""
    if isinstance(golds, str):
        golds = [golds]
    if not golds:  # unanswerable (v2.0)
        return _f1_pair(pred, "", v2_empty=True)
    return max(_f1_pair(pred, g, v2_empty=False) for g in golds)


exact_match.lower_is_better = False  # type: ignore[attr-defined]
f1.lower_is_better = False  # type: ignore[attr-defined]


def _load(dataset_json: Any) -> list[dict]:
    if isinstance(dataset_json, (str, os.PathLike)):
        try:
            with open(dataset_json, encoding="utf-8") as fh:
                dataset_json = json.load(fh)
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{dataset_json}: not a readable SQuAD JSON file ({exc})") from None
    data = dataset_json.get("data") if isinstance(dataset_json, Mapping) else dataset_json
    if not isinstance(data, list):
        raise ValueError("dataset_json: expected a SQuAD dict with a 'data' list of articles")
    return data


def evaluate(predictions: Mapping[str, str], dataset_json: Any) -> dict[str, float]:
    """Official SQuAD evaluation: ``{"exact_match", "f1"}`` in percent over all questions.

    Args:
        predictions: question id -> predicted answer text.
        dataset_json: the loaded SQuAD JSON (a dict with ``"data"``, or that list), or a path.

    A question with no prediction scores 0 on both and still counts in the denominator.
    """
    em = f = 0.0
    total = 0
    for a, article in enumerate(_load(dataset_json)):
        try:
            paragraphs = article["paragraphs"]
        except (KeyError, TypeError):
            raise ValueError(f"dataset_json: article {a} has no 'paragraphs'") from None
        for paragraph in paragraphs:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                golds = [x["text"] for x in qa.get("answers", [])]
                if qa.get("is_impossible", False):
                    golds = []
                pred = predictions[qa["id"]]
                em += exact_match(pred, golds)
                f += f1(pred, golds)
    if total == 0:
        raise ValueError("dataset_json: no questions")
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f / total}
