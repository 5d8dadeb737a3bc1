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
    shared = [n for n in provenance._plans()["quick"] if n in provenance._plans()["full"]]
    assert shared, "the derive run and the Adam breakdown run are in both plans"
    quick_all = list(provenance._plans()["quick"])      # the whole quick plan, shared runs included
    assert provenance.preset(results([rec(n) for n in quick_all])) == "quick"
    lines = provenance.study_lines(results([rec(n) for n in names(True)]))
    assert lines[0].startswith("Preset: quick") and "--full" in lines[0]


def test_a_run_that_trains_before_writing_reports_its_training_time():
    man = {"started": "2026-12-03T10:00:00+00:00", "ended": "2026-12-03T10:00:03+00:00"}
    assert provenance.run_seconds(rec("a", manifest=man)) == (3.0, "run")
    assert provenance.run_seconds(rec("b", manifest=man, metrics={"metrics": {"wall_s": 41.5}})) == (41.5, "training")
    # under the engine's run clock the manifest spans the whole run, which includes its training
    assert provenance.run_seconds(rec("d", manifest=man, metrics={"metrics": {"wall_s": 2.5}})) == (3.0, "run")
    assert provenance.run_seconds(rec("c")) == (None, "")


def test_a_run_executed_by_the_engine_records_its_whole_time_in_the_manifest(tmp_path):
    """The engine runs each run under run_clock: the manifest's span covers the computation before the writer
    opens (here 1.2 s of work, then the write), not only the writing (which took 0 s before the fix)."""
    import json
    import time

    from qkov.core.runstore import RunWriter
    from qkov.study.engine import execute_run

    def execute(kind, config, path, ctx):
        time.sleep(1.2)   # the work, done before anything is written (as every stage does)
        with RunWriter(path, kind=kind, config=config) as w:
            w.write_json("metrics.json", {})

    execute_run(execute, "simulate-paper", {"K": 6}, str(tmp_path / "run"))
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    seconds, source = provenance.run_seconds(rec("e", manifest=man))
    assert source == "run" and seconds >= 1.0   # whole seconds: 1.2 s of work shows as 1 or 2 s, never 0


def test_per_run_times_count_this_studys_runs_not_earlier_calls():
    """The issue: '42 runs' beside 41 planned (a run of an earlier call in the same results directory)."""
    man = {"started": "2026-12-03T10:00:00+00:00", "ended": "2026-12-03T10:00:03+00:00"}
    r = results([rec("a", manifest=man), rec("b", manifest=man), rec("earlier", manifest=man)])
    object.__setattr__(r, "summary", {"runs": [{"name": "a"}, {"name": "b"}]})
    (line,) = [x for x in provenance.study_lines(r) if x.startswith("Sum of per-run times")]
    assert line.startswith("Sum of per-run times: 6 s over 2 runs") and "1 more runs" in line
