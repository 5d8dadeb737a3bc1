"""Committed run records (qkov.records): export, read back, and the summary's statistics computed on them equal
those computed on the run directories."""

from __future__ import annotations

import json
import os
import warnings

import pytest

from qkov.records import EXTRACTORS, Record, SkippedRun, export_runs, load_set, real_runs, record_of
from qkov.records.extractors import LIST_LIMIT
from qkov.study import real_summary as rs
from tests.records_fakes import fake_real_run, fake_study_run
from theory.errors import InputError


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """Ratios 1 and 30 (and 30 with the embedding at 30x) x seeds 0-2 of fake real runs, plus a figure2 run."""
    out = tmp_path_factory.mktemp("results")
    dirs = [fake_real_run(out, r, s, embedding=e) for s in range(3) for r in (1.0, 30.0) for e in (1.0, 30.0)]
    dirs.append(fake_study_run(out))
    return out, sorted(dirs)


def _lists(obj, where=""):
    """Every list in ``obj`` with its size in numbers (nested lists flattened)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _lists(v, f"{where}.{k}")
    elif isinstance(obj, list) and not any(isinstance(x, dict) for x in obj):
        yield where, len(json.dumps(obj).split(","))
    elif isinstance(obj, list):
        for i, x in enumerate(obj):
            yield from _lists(x, f"{where}[{i}]")


def test_export_writes_one_sorted_line_per_complete_run(sweep, tmp_path):
    out, dirs = sweep
    path = export_runs(dirs, "fake-sweep", tmp_path)
    assert path == tmp_path / "fake-sweep.jsonl"
    lines = path.read_text().splitlines()
    assert len(lines) == len(dirs) == 13
    names = [json.loads(x)["run"] for x in lines]
    assert names == sorted(d.name for d in dirs)
    recs = load_set("fake-sweep", tmp_path)
    assert recs == [record_of(d, "fake-sweep") for d in dirs]
    r = recs[0]
    assert set(r.provenance) == {"git_commit", "qkov_version", "torch", "python", "started", "finished", "wall_s",
                                 "machine"}
    assert r.provenance["wall_s"] is not None and r.provenance["wall_s"] >= 0
    assert r.config == json.loads((dirs[0] / "config.json").read_text())


def test_records_are_compact(sweep, tmp_path):
    """KB per run; no list over LIST_LIMIT numbers (the 400-number loss curve and per-item arrays stay behind)."""
    out, dirs = sweep
    path = export_runs(dirs, "fake-sweep", tmp_path)
    for line in path.read_text().splitlines():
        assert len(line) < 20_000
        rec = json.loads(line)
        assert all(n <= LIST_LIMIT for _, n in _lists(rec["metrics"]))
        if rec["kind"] == "validate-real":
            assert "train_loss" in rec["metrics"]["omitted"] and "train_loss" not in rec["metrics"]
            assert sum(rec["metrics"]["label_counts"]["counts"]) == 60
        else:
            assert rec["metrics"]["evidence"][0]["verdict"] == "supports"
            assert "text" not in rec["metrics"]["evidence"][0]


def test_summary_statistics_from_records_equal_those_from_runs(sweep, tmp_path):
    """The records keep what the summary reads: groups, seed values, paired comparisons, matched-loss levels,
    majority share, verdict lines and the 2 x 2 tables come out identical (the item bootstrap is not kept)."""
    out, dirs = sweep
    export_runs(dirs, "fake-sweep", tmp_path)
    from_runs = rs.load_runs(dirs)
    from_recs = real_runs(load_set("fake-sweep", tmp_path))
    assert len(from_recs) == len(from_runs) == 12
    g_runs, g_recs = rs.summarise_groups(from_runs), rs.summarise_groups(from_recs)
    assert list(g_runs) == list(g_recs) and len(g_runs) == 2
    for name in g_runs:
        for key in ("rows", "best_val", "baseline", "seed_values", "paired", "dtap", "majority_share", "claim_ratio"):
            assert g_recs[name][key] == g_runs[name][key], (name, key)
        ml_runs, ml_recs = g_runs[name]["matched_loss"], g_recs[name]["matched_loss"]
        assert ml_recs["levels"] == ml_runs["levels"] and len(ml_runs["levels"]) == 3
        for a, b in zip(ml_recs["by_level"], ml_runs["by_level"]):   # the compared metrics; rows of the others
            assert a["paired"] == b["paired"]                        # stay in the run directories
            for ra, rb in zip(a["rows"], b["rows"]):
                assert {k: v for k, v in rb.items() if k in ra} == ra
        assert g_runs[name]["majority_share"] is not None
        assert g_runs[name]["bootstrap"]["best_val"] and not g_recs[name]["bootstrap"]["best_val"]
    assert rs.sweep_markdown(g_recs) == rs.sweep_markdown(g_runs)
    assert [v.line for v in rs.verdicts(g_recs)] == [v.line for v in rs.verdicts(g_runs)]
    assert rs.decoupling_markdown_of(from_recs) == rs.decoupling_markdown_of(from_runs)


def test_incomplete_and_unknown_runs_are_skipped_with_a_warning(sweep, tmp_path):
    out, dirs = sweep
    broken = fake_real_run(tmp_path / "other", 2.0, 0)
    (broken / "COMPLETE").unlink()
    summary = tmp_path / "other" / "runs" / "custom-000000000000"
    from qkov.core.runstore import RunWriter

    with RunWriter(summary, kind="custom", config={"runs": []}) as w:
        w.write_json("tables.json", {})
    with pytest.warns(SkippedRun) as caught:
        path = export_runs([*dirs, broken, summary], "fake-sweep", tmp_path / "recs")
    text = " | ".join(str(w.message) for w in caught)
    assert broken.name in text and "no COMPLETE marker" in text
    assert summary.name in text and "no record extractor" in text
    assert len(path.read_text().splitlines()) == len(dirs)


def test_kind_filter_and_copies(sweep, tmp_path):
    out, dirs = sweep
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = export_runs(dirs + dirs, "only-real", tmp_path, kinds=["validate-real"])  # copies count once
    assert {json.loads(x)["kind"] for x in path.read_text().splitlines()} == {"validate-real"}
    assert len(path.read_text().splitlines()) == 12
    with pytest.raises(InputError, match="kind: 'nope'"):
        export_runs(dirs, "x", tmp_path, kinds=["nope"])


@pytest.mark.parametrize("name", ["", "Upper", "a_b", "-a", "a-", "a/b", "../x", "x" * 65])
def test_bad_set_names_are_refused_before_anything_is_written(sweep, tmp_path, name):
    out, dirs = sweep
    with pytest.raises(InputError, match="set: "):
        export_runs(dirs, name, tmp_path / "recs")
    assert not (tmp_path / "recs").exists()


def test_nothing_through_a_link(sweep, tmp_path):
    out, dirs = sweep
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "recs")
    with pytest.raises(InputError, match="symbolic link"):
        export_runs(dirs, "s", tmp_path / "recs")
    with pytest.raises(InputError, match="symbolic link"):
        load_set("s", tmp_path / "recs")
    assert list((tmp_path / "real").iterdir()) == []


def test_a_bad_line_is_named(tmp_path):
    (tmp_path / "s.jsonl").write_text('{"set": "s"}\n')
    with pytest.raises(ValueError, match=r"s.jsonl:1: a record needs exactly the fields"):
        load_set("s", tmp_path)
    good = Record("t", "figure2-000000000000", "figure2", {}, {}, {})
    (tmp_path / "s.jsonl").write_text(json.dumps(good.to_json()) + "\n")
    with pytest.raises(ValueError, match="record of set 't' in set 's'"):
        load_set("s", tmp_path)


def test_every_planned_real_and_synthetic_kind_has_an_extractor():
    from qkov.study.stages import RUN_KINDS

    assert set(RUN_KINDS) <= set(EXTRACTORS)   # every run kind the study plans can be committed


def test_the_export_command(sweep, tmp_path):
    from click.testing import CliRunner

    from qkov.cli.main import cli

    out, dirs = sweep
    res = CliRunner().invoke(cli, ["export", "--out", str(out), "--set", "cli-set", "--records", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert f"records: {tmp_path / 'cli-set.jsonl'} (13 runs)" in res.output
    res = CliRunner().invoke(cli, ["export", "--out", str(tmp_path / "none"), "--set", "x", "--records",
                                   str(tmp_path)], standalone_mode=False)
    assert res.exception is not None


def test_summary_runs_are_derived_and_skipped_silently(sweep, tmp_path):
    from qkov.core.runstore import RunWriter, run_dir_for
    from qkov.records.extractors import DERIVED_KINDS
    from qkov.report.real_table import REAL_SUMMARY
    from qkov.study.real_command import SWEEP_SUMMARY_KIND

    assert DERIVED_KINDS == {SWEEP_SUMMARY_KIND, REAL_SUMMARY}
    out, dirs = sweep
    summary = run_dir_for(tmp_path / "o", SWEEP_SUMMARY_KIND, {"runs": []})
    with RunWriter(summary, kind=SWEEP_SUMMARY_KIND, config={"runs": []}) as w:
        w.write_json("tables.json", {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = export_runs([*dirs, summary], "s", tmp_path)
    assert len(path.read_text().splitlines()) == len(dirs)


def test_checkpoint_columns_invert_exactly_with_gaps_and_legacy_rows():
    """Columns hold the same numbers as the rows (a metric missing at one checkpoint comes back missing, NaN stays
    NaN); a legacy list of rows reads as it is; columns of two lengths are refused."""
    import math

    from qkov.records.extractors import checkpoint_columns, checkpoint_rows

    rows = [{"step": 0, "epoch": 0.0, "train_loss": 0.9, "val_loss": 1.1, "test": {"accuracy": 0.3}},
            {"step": 10, "epoch": 0.5, "train_loss": float("nan"), "val_loss": 1.0,
             "test": {"accuracy": 0.4, "relevant_mass_mean": 0.5}},
            {"step": 20, "train_loss": 0.5, "test": {}}]
    cols = checkpoint_columns(rows)
    assert cols["step"] == [0, 10, 20] and cols["test"]["relevant_mass_mean"] == [None, 0.5, None]
    back = checkpoint_rows(json.loads(json.dumps(cols)))
    assert math.isnan(back[1].pop("train_loss")) and math.isnan(rows[1].pop("train_loss"))
    assert back == rows
    assert checkpoint_rows(rows) is rows
    with pytest.raises(ValueError, match="one length"):
        checkpoint_rows({"step": [0, 1], "test": {"accuracy": [0.1]}})


def test_committed_record_sets_stay_under_one_mebibyte():
    """Records are KB per run: a set over 1 MiB means something bulky (a per-epoch history, per-item arrays) got in."""
    from qkov.docsgen import repo_root
    from qkov.records.store import RECORDS_DIR

    sets = sorted((repo_root() / RECORDS_DIR).glob("*.jsonl"))
    assert sets, repo_root() / RECORDS_DIR
    assert [(p.name, p.stat().st_size) for p in sets if p.stat().st_size > 2**20] == []
