"""Missing and malformed data files give one-line errors naming the file, the record and what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from theory.errors import InputError
from validation.real.errors import DataError
from validation.real.hatexplain_data import load_hatexplain, majority_label
from validation.real.squad_data import load_squad
from validation.real.sva_data import HEADER, load_sva


def one_line(err: Exception) -> str:
    msg = str(err)
    assert "\n" not in msg
    assert isinstance(err, InputError)   # the CLI prints it as one line and exits 2
    return msg


def squad_doc(**qa_over):
    qa = {"id": "q1", "question": "Who?", "answers": [{"text": "Ada", "answer_start": 0}]}
    qa.update(qa_over)
    return {"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "Ada wrote it.", "qas": [qa]}]}]}


def write_squad(tmp_path: Path, doc) -> Path:
    (tmp_path / "squad").mkdir()
    p = tmp_path / "squad" / "dev-v1.1.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def test_squad_missing_file_says_what_to_fetch(tmp_path):
    with pytest.raises(DataError) as e:
        load_squad(tmp_path)
    msg = one_line(e.value)
    assert "dev-v1.1.json" in msg and "rajpurkar.github.io" in msg and "docs/data.md" in msg


def test_squad_bad_json(tmp_path):
    p = write_squad(tmp_path, "{not json")
    with pytest.raises(DataError) as e:
        load_squad(tmp_path)
    assert str(p) in one_line(e.value)


def test_squad_missing_question_names_the_record(tmp_path):
    doc = squad_doc()
    del doc["data"][0]["paragraphs"][0]["qas"][0]["question"]
    p = write_squad(tmp_path, doc)
    with pytest.raises(DataError) as e:
        load_squad(tmp_path)
    msg = one_line(e.value)
    assert str(p) in msg and "'q1'" in msg and "'question'" in msg


def test_squad_answer_start_out_of_range(tmp_path):
    write_squad(tmp_path, squad_doc(answers=[{"text": "Ada", "answer_start": 99}]))
    with pytest.raises(DataError) as e:
        load_squad(tmp_path)
    msg = one_line(e.value)
    assert "'q1'" in msg and "answer_start 99" in msg


def test_squad_valid_tiny_file_maps_answer_to_words(tmp_path):
    write_squad(tmp_path, squad_doc(answers=[{"text": "wrote it", "answer_start": 4}]))
    ex = load_squad(tmp_path).train[0]
    assert ex.context == ("Ada", "wrote", "it", ".")
    assert ex.spans == ((1, 2),) and ex.sentence == (0, 3)


def write_jsonl(tmp_path: Path, lines: list[str]) -> Path:
    d = tmp_path / "hatexplain"
    d.mkdir()
    good = json.dumps({"post_id": None, "post_tokens": ["a", "b"], "label": "normal", "rationale": None})
    (d / "test.jsonl").write_text(good + "\n")
    p = d / "train.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("bad, expected", [
    ("{oops", "one JSON object per line"),
    (json.dumps({"label": "normal", "rationale": None}), "'post_tokens'"),
    (json.dumps({"post_tokens": ["a"], "label": "rude", "rationale": None}), "'label' one of"),
    (json.dumps({"post_tokens": ["a", "b"], "label": "offensive", "rationale": [1]}), "list of 2 values 0/1"),
])
def test_hatexplain_jsonl_bad_record_names_line(tmp_path, bad, expected):
    good = json.dumps({"post_tokens": ["x"], "label": "normal", "rationale": None})
    p = write_jsonl(tmp_path, [good, bad])
    with pytest.raises(DataError) as e:
        load_hatexplain(tmp_path)
    msg = one_line(e.value)
    assert str(p) in msg and "line 2" in msg and expected in msg


def test_hatexplain_missing_everything(tmp_path):
    with pytest.raises(DataError) as e:
        load_hatexplain(tmp_path)
    msg = one_line(e.value)
    assert "dataset.json" in msg and "hate-alert/HateXplain" in msg


def official_post(labels, rationales, tokens=("you", "are", "bad")):
    return {"post_id": "x", "post_tokens": list(tokens), "rationales": rationales,
            "annotators": [{"label": lab, "annotator_id": i, "target": ["None"]} for i, lab in enumerate(labels)]}


def test_hatexplain_official_layout_majority_and_union(tmp_path):
    d = tmp_path / "hatexplain" / "Data"
    d.mkdir(parents=True)
    posts = {"p1": official_post(["offensive", "offensive", "normal"], [[0, 0, 1], [0, 1, 0]]),
             "p2": official_post(["normal", "offensive", "hatespeech"], []),   # undecided: dropped
             "p3": official_post(["normal"] * 3, [])}
    (d / "dataset.json").write_text(json.dumps(posts))
    (d / "post_id_divisions.json").write_text(json.dumps({"train": ["p1", "p2"], "val": [], "test": ["p3"]}))
    s = load_hatexplain(tmp_path)
    assert [ex.uid for ex in s.train] == ["p1"]
    assert s.classes[s.train[0].label] == "offensive" and s.train[0].relevant == (0, 1, 1)
    assert s.test[0].relevant is None and s.classes[s.test[0].label] == "normal"


def test_hatexplain_official_missing_post(tmp_path):
    d = tmp_path / "hatexplain" / "Data"
    d.mkdir(parents=True)
    (d / "dataset.json").write_text(json.dumps({}))
    (d / "post_id_divisions.json").write_text(json.dumps({"train": ["p9"], "val": [], "test": []}))
    with pytest.raises(DataError) as e:
        load_hatexplain(tmp_path)
    msg = one_line(e.value)
    assert "dataset.json" in msg and "'p9'" in msg


def test_majority_label():
    assert majority_label(["a", "b", "a"]) == "a"
    assert majority_label(["a", "b", "c"]) is None


def write_sva(tmp_path: Path, rows: list[str], header: list[str] = HEADER) -> Path:
    d = tmp_path / "sva" / "linzen_edinburgh_nlu"
    d.mkdir(parents=True)
    ok = "\t".join(header) + "\n" + "the dog runs fast .\t1\t2\tVBZ\truns\trun\n"
    (d / "wiki-dev.txt").write_text(ok)
    p = d / "wiki-test.txt"
    p.write_text("\t".join(header) + "\n" + "".join(r + "\n" for r in rows))
    return p


@pytest.mark.parametrize("row, expected", [
    ("the dogs run .\t1\t9\tVBP\trun\truns", "verb_idx (9) < number of words"),
    ("the dogs run .\t2\t1\tVBP\trun\truns", "subj_idx (2) < verb_idx (1)"),
    ("the dogs run .\tx\t2\tVBP\trun\truns", "integer subj_idx"),
    ("the dogs run .\t1\t2", "6 tab-separated fields"),
    ("the dogs run .\t1\t2\tNN\trun\truns", "VBZ or VBP"),
])
def test_sva_bad_record_names_line(tmp_path, row, expected):
    p = write_sva(tmp_path, ["the cats sleep .\t1\t2\tVBP\tsleep\tsleeps", row])
    with pytest.raises(DataError) as e:
        load_sva(tmp_path)
    msg = one_line(e.value)
    assert str(p) in msg and "line 3" in msg and expected in msg


def test_sva_bad_header(tmp_path):
    write_sva(tmp_path, [], header=["sentence", "subject"])
    with pytest.raises(DataError) as e:
        load_sva(tmp_path)
    assert "line 1" in one_line(e.value)


def test_sva_missing_file(tmp_path):
    with pytest.raises(DataError) as e:
        load_sva(tmp_path)
    msg = one_line(e.value)
    assert "wiki-dev.txt" in msg and "Linzen" in msg


def test_sva_prefix_label_and_subject(tmp_path):
    write_sva(tmp_path, ["the keys to the cabinet are old .\t1\t5\tVBP\tare\tis"])
    s = load_sva(tmp_path)
    exs = {ex.tokens: ex for ex in s.train + s.test}
    ex = exs[("the", "keys", "to", "the", "cabinet")]
    assert s.classes[ex.label] == "plural" and ex.relevant == (0, 1, 0, 0, 0)


# --- every kind of malformed file, for each of the three datasets -------------------------------------------

SQUAD_OK = json.dumps(squad_doc())
HATE_OK = json.dumps({"post_id": "a", "post_tokens": ["a", "b"], "label": "normal", "rationale": None}) + "\n"
SVA_OK = "\t".join(HEADER) + "\n" + "the dog runs fast .\t1\t2\tVBZ\truns\trun\n"


def layout(tmp_path: Path, dataset: str) -> tuple[Path, callable]:
    """A valid data directory for ``dataset``; returns (the file the faults go into, the loader)."""
    if dataset == "squad":
        (tmp_path / "squad").mkdir()
        target = tmp_path / "squad" / "dev-v1.1.json"
        target.write_text(SQUAD_OK)
        return target, load_squad
    if dataset == "hatexplain":
        d = tmp_path / "hatexplain"
        d.mkdir()
        for s in ("train", "test"):
            (d / f"{s}.jsonl").write_text(HATE_OK * 2)
        return d / "train.jsonl", load_hatexplain
    d = tmp_path / "sva" / "linzen_edinburgh_nlu"
    d.mkdir(parents=True)
    (d / "wiki-dev.txt").write_text(SVA_OK)
    (d / "wiki-test.txt").write_text(SVA_OK)
    return d / "wiki-test.txt", load_sva


def _replace(target: Path, fault: str) -> None:
    text = target.read_text()
    if fault == "bad encoding":
        i = text.index("\n", 1) + 3 if "\n" in text[1:-1] else 5     # a byte on line 2 (line 1 for SQuAD)
        target.write_bytes(text[:i].encode() + b"\xff" + text[i:].encode())
    elif fault == "empty":
        target.write_bytes(b"")
    elif fault == "directory":
        target.unlink()
        target.mkdir()
    elif fault == "symlink loop":
        target.unlink()
        target.symlink_to(target.name)          # points at itself
    elif fault == "truncated":
        body = text.rstrip("\n")
        target.write_text(body[:len(body) - 7])   # cut inside the last record, no final newline
    elif fault == "no records":
        target.write_text({"squad": json.dumps({"version": "1.1", "data": []}), "hatexplain": "\n\n",
                           "sva": "\t".join(HEADER) + "\n"}[target.parent.parent.name if target.suffix == ".txt"
                                                           else ("squad" if target.suffix == ".json" else "hatexplain")])
    else:
        raise AssertionError(fault)


EXPECTED = {"bad encoding": "not valid UTF-8 (byte 0xff", "empty": "is empty", "directory": "is a directory",
            "symlink loop": "symlink loop", "truncated": "truncated", "no records": "holds no"}


@pytest.mark.parametrize("dataset", ["squad", "hatexplain", "sva"])
@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_each_malformed_file_is_one_line_naming_the_file(tmp_path, dataset, fault):
    target, load = layout(tmp_path, dataset)
    load(tmp_path)                      # valid before the fault: the fault alone causes the error
    _replace(target, fault)
    with pytest.raises(DataError) as e:
        load(tmp_path)
    msg = one_line(e.value)
    assert str(target) in msg and EXPECTED[fault] in msg, msg
    if fault in ("bad encoding", "truncated"):
        assert "line " in msg


@pytest.mark.parametrize("dataset", ["hatexplain", "sva"])
def test_bad_encoding_names_the_line_and_column(tmp_path, dataset):
    target, load = layout(tmp_path, dataset)
    raw = target.read_bytes()
    cut = raw.index(b"\n") + 1 + 4                    # line 2, after its first 4 bytes
    target.write_bytes(raw[:cut] + b"\xe9" + raw[cut:])
    with pytest.raises(DataError) as e:
        load(tmp_path)
    assert "line 2: not valid UTF-8 (byte 0xe9 at column 5)" in one_line(e.value)


@pytest.mark.parametrize("dataset", ["squad", "hatexplain", "sva"])
@pytest.mark.parametrize("fault", ["directory", "symlink loop", "empty"])
def test_study_names_the_fault_not_missing(tmp_path, dataset, fault):
    from qkov.study.real_stage import missing_data
    target, _ = layout(tmp_path, dataset)
    assert missing_data(dataset, tmp_path) is None
    _replace(target, fault)
    why = missing_data(dataset, tmp_path)
    assert why is not None and EXPECTED[fault] in why and "missing" not in why


@pytest.mark.parametrize("dataset", ["squad", "hatexplain", "sva"])
def test_cli_malformed_file_exit_2_one_line_nothing_written(tmp_path, dataset, capsys):
    from qkov.cli.main import cli, run_cli
    (tmp_path / "data").mkdir()
    target, _ = layout(tmp_path / "data", dataset)
    _replace(target, "bad encoding")
    out = tmp_path / "out"
    code = run_cli(cli, ["validate", "real", "--dataset", dataset, "--quick", "--ratios", "1", "--seeds", "0",
                         "--out", str(out), "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("qkov: error: ") and str(target) in err[0]
    assert not out.exists()
