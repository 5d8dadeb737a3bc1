"""The report says what ran: the preset from the runs' plan membership, the right per-run times."""

from __future__ import annotations

from pathlib import Path

from qkov.core.runstore import config_key
from qkov.report import provenance
from qkov.report.collect import RunRecord, StudyResults
from qkov.study import simulate_stage


def rec(name, kind="simulate-paper", metrics=None, manifest=None):
    return RunRecord(Path(f"/x/{name}"), kind, "simulate", {"K": 6}, manifest or {}, metrics or {}, [], None, [])


def results(runs):
    r = StudyResults.__new__(StudyResults)
    object.__setattr__(r, "runs", runs)
    object.__setattr__(r, "summary", {})
    return r


def names(quick):
    return [f"{k}-{config_key(k, c)}" for k, c in simulate_stage.study_runs(quick, None)]


def test_the_preset_is_the_plan_the_runs_belong_to():
    assert provenance.preset(results([rec(n) for n in names(True)])) == "quick"
    assert provenance.preset(results([rec(n) for n in names(False)])) == "full"
    assert provenance.preset(results([rec(names(True)[0]), rec(names(False)[0])])) == "custom"
    assert provenance.preset(results([])) == ""
    lines = provenance.study_lines(results([rec(n) for n in names(True)]))
    assert lines[0].startswith("Preset: quick") and "--full" in lines[0]


def test_a_run_that_trains_before_writing_reports_its_training_time():
    man = {"started": "2026-12-03T10:00:00+00:00", "ended": "2026-12-03T10:00:03+00:00"}
    assert provenance.run_seconds(rec("a", manifest=man)) == (3.0, "manifest")
    assert provenance.run_seconds(rec("b", manifest=man, metrics={"metrics": {"wall_s": 41.5}})) == (41.5, "training")
    assert provenance.run_seconds(rec("c")) == (None, "")
