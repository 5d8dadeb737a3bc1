"""Faults of issue 25 in the data loaders and `qkov data check`: every malformed value is one line naming
the file, the record and what is wrong (before: RecursionError, ValueError digit limit, TypeError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qkov.cli.main import cli
from qkov.cli.main import run_cli as _run_cli
from validation.real.errors import DataError
from validation.real.hatexplain_data import load_hatexplain, load_jsonl_split
from validation.real.squad_data import load_squad_file
from validation.real.sva_data import load_sva_file

DEEP = "[" * 200_000 + "]" * 200_000
HUGE = "9" * 5000


def run_cli(group, args: list[str]) -> int:
    try:
        return _run_cli(group, args)
    except SystemExit as exc:
        return int(exc.code or 0)


def _one_line(exc: pytest.ExceptionInfo, *parts: str) -> str:
    text = str(exc.value)
    assert "\n" not in text and len(text) < 400, text
    for p in parts:
        assert p in text, text
    return text


def _posts(**post) -> dict:
    base = {"post_tokens": ["a", "b"], "annotators": [{"label": "offensive"}] * 3, "rationales": [[0, 1]]}
    return {"p1": base | post, "p2": base}


def _hatexplain(root: Path, posts: object = None, div: object = None, posts_text: str | None = None) -> Path:
    d = root / "hatexplain" / "Data"
    d.mkdir(parents=True, exist_ok=True)
    (d / "dataset.json").write_text(posts_text if posts_text is not None else json.dumps(posts or _posts()))
    (d / "post_id_divisions.json").write_text(json.dumps(div or {"train": ["p1"], "val": [], "test": ["p2"]}))
    return root


def _squad(path: Path, answer_start: str = "4", text: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else
                    '{"data": [{"title": "T", "paragraphs": [{"context": "The cat sat.", "qas": [{"id": "q1", '
                    '"question": "Who?", "answers": [{"text": "cat", "answer_start": ' + answer_start + '}]}]}]}]}')
    return path


def test_deeply_nested_json_is_one_line(tmp_path):
    with pytest.raises(DataError) as exc:
        load_hatexplain(_hatexplain(tmp_path / "a", posts_text=DEEP))
    _one_line(exc, "dataset.json", "nested too deeply")
    with pytest.raises(DataError) as exc:
        load_squad_file(_squad(tmp_path / "s" / "dev-v1.1.json", text=DEEP))
    _one_line(exc, "dev-v1.1.json", "nested too deeply")
    jl = tmp_path / "train.jsonl"
    jl.write_text(json.dumps({"post_tokens": ["a"], "label": "normal"}) + "\n" + DEEP + "\n")
    with pytest.raises(DataError) as exc:
        load_jsonl_split(jl)
    _one_line(exc, "train.jsonl", "line 2", "nested too deeply")


def test_integer_past_the_digit_limit_is_one_line(tmp_path):
    with pytest.raises(DataError) as exc:
        load_squad_file(_squad(tmp_path / "dev-v1.1.json", answer_start=HUGE))
    _one_line(exc, "dev-v1.1.json", "too many digits")
    posts = json.dumps(_posts()).replace('"rationales": [[0, 1]]', '"rationales": [[0, ' + HUGE + ']]', 1)
    with pytest.raises(DataError) as exc:
        load_hatexplain(_hatexplain(tmp_path / "h", posts_text=posts))
    _one_line(exc, "dataset.json", "too many digits")
    tsv = tmp_path / "wiki-dev.txt"
    tsv.write_text("sentence\tsubj_idx\tverb_idx\tverb_pos\tverb\tinflected_verb\n"
                   f"the dog runs\t1\t{HUGE}\tVBZ\truns\trun\n")
    with pytest.raises(DataError) as exc:
        load_sva_file(tsv)
    _one_line(exc, "wiki-dev.txt", "line 2", "integer")


def test_large_answer_start_within_the_digit_limit_is_one_short_line(tmp_path):
    with pytest.raises(DataError) as exc:
        load_squad_file(_squad(tmp_path / "dev-v1.1.json", answer_start="9" * 4000))
    _one_line(exc, "dev-v1.1.json", "q1", "answer_start")


@pytest.mark.parametrize("rationales", [[5], [None], ["01"], [[0, 2]], [{"a": 1}], 7],
                         ids=["int", "null", "string", "bad-value", "object", "not-a-list"])
def test_wrong_rationale_types_are_one_line(tmp_path, rationales):
    with pytest.raises(DataError) as exc:
        load_hatexplain(_hatexplain(tmp_path, _posts(rationales=rationales)))
    _one_line(exc, "dataset.json", "'p1'", "rationale")


@pytest.mark.parametrize("pid", [["p1"], {"a": 1}, 5, None], ids=["list", "object", "int", "null"])
def test_unhashable_or_non_string_division_id_is_one_line(tmp_path, capsys, pid):
    root = _hatexplain(tmp_path, div={"train": [pid], "val": [], "test": ["p2"]})
    with pytest.raises(DataError) as exc:
        load_hatexplain(root)
    _one_line(exc, "post_id_divisions.json", "train[0]", "post id")
    rc = run_cli(cli, ["data", "check", "--dataset", "hatexplain", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_data_check_on_deeply_nested_file_is_one_line(tmp_path, capsys):
    _hatexplain(tmp_path, posts_text=DEEP)
    rc = run_cli(cli, ["data", "check", "--dataset", "hatexplain", "--data-dir", str(tmp_path)])
    cap = capsys.readouterr()
    assert rc == 2 and "Traceback" not in cap.err and len(cap.err.strip().splitlines()) == 1, cap.err
    assert "nested too deeply" in cap.out


def test_directory_in_place_of_a_jsonl_split_is_named_as_such(tmp_path, capsys):
    """Before: `data check` said "dataset.json: missing" for a directory train.jsonl."""
    (tmp_path / "hatexplain" / "train.jsonl").mkdir(parents=True)
    rc = run_cli(cli, ["data", "check", "--dataset", "hatexplain", "--data-dir", str(tmp_path)])
    cap = capsys.readouterr()
    assert rc == 2 and "Traceback" not in cap.err and len(cap.err.strip().splitlines()) == 1, cap.err
    row = next(x for x in cap.out.splitlines() if "train.jsonl" in x)
    assert row.startswith("not a file") and "dataset.json" not in cap.out.replace("Data/dataset.json", "")


def test_newline_in_a_value_stays_one_line(tmp_path, capsys):
    """Before: a newline inside a value printed a two-line error (show_value did not quote it)."""
    from qkov.core.config import show_value

    assert show_value("a\nb") == "'a\\nb'" and show_value("a\x1b[31mb") == "'a\\x1b[31mb'"
    rc = run_cli(cli, ["data", "check", "--data-dir", str(tmp_path / "no\nsuch")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
