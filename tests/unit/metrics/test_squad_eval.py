"""The official SQuAD v1.1 answer normalisation, exact match and F1."""

import json

import pytest

from validation.metrics.squad_eval import evaluate, exact_match, f1, normalize_answer


def test_normalization():
    assert normalize_answer("The  Cat's, a hat!") == "cats hat"
    assert normalize_answer("An apple\tthe") == "apple"
    assert normalize_answer("theory") == "theory"  # articles only as whole words


def test_exact_match_and_f1_hand_computed():
    assert exact_match("the cat", ["A cat", "dog"]) == 1.0
    assert exact_match("cat!", "dog") == 0.0
    # pred tokens [big, cat, sat], gold [cat, sat, down]: 2 shared -> P = R = 2/3
    assert f1("the big cat sat", ["cat sat down"]) == pytest.approx(2 / 3)
    # multiset overlap: [x, x, y] vs [x, y, y] shares one x and one y
    assert f1("x x y", "x y y") == pytest.approx(2 / 3)
    # the best gold answer counts
    assert f1("cat sat", ["dog", "cat sat"]) == 1.0
    assert f1("dog", ["cat"]) == 0.0


def test_unanswerable_questions_follow_v2():
    assert exact_match("", []) == 1.0 and f1("", []) == 1.0
    assert exact_match("x", []) == 0.0 and f1("x", []) == 0.0


def _dataset():
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "c", "qas": [
        {"id": "q1", "question": "?", "answers": [{"text": "the cat", "answer_start": 0}, {"text": "cat sat"}]},
        {"id": "q2", "question": "?", "answers": [{"text": "down"}]},
        {"id": "q3", "question": "?", "answers": [{"text": "x"}]},
    ]}]}]}


def test_evaluate_percent_and_unanswered(tmp_path):
    preds = {"q1": "Cat", "q2": "sat down"}  # q3 unanswered: 0, still counted
    # q1: EM 1, F1 1; q2: EM 0, F1 = 2 (1/2 * 1) / (3/2) = 2/3; q3: 0
    expected = {"exact_match": 100 / 3, "f1": 100 * (1 + 2 / 3) / 3}
    out = evaluate(preds, _dataset())
    assert out == pytest.approx(expected)
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(_dataset()))
    assert evaluate(preds, path) == pytest.approx(expected)
    with pytest.raises(ValueError, match="data"):
        evaluate(preds, {"articles": []})
