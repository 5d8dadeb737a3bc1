"""The README main command's measurement: the benchmark's parsers (benchmarks/bench_main_command.py) on known
inputs, and the generated block (qkov.docsgen.command_tables) from a known record, missing fields included.
The committed block itself is checked against the committed record by tests/unit/test_generated_docs.py."""

from __future__ import annotations

import importlib.util
import json

import pytest

from qkov.docsgen.command_tables import cli_startup, main_command
from tests.paths import ROOT

pytestmark = pytest.mark.unit


def _bench():
    spec = importlib.util.spec_from_file_location("bench_main_command", ROOT / "benchmarks" / "bench_main_command.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_command_is_the_block_after_the_marker_as_ci_reads_it(tmp_path):
    bench = _bench()
    readme = tmp_path / "README.md"
    readme.write_text("```bash\nnot this\n```\n<!-- main-command -->\n```bash\necho one && echo two\n```\n"
                      "<!-- test-command -->\n```bash\npytest\n```\n")
    assert bench.readme_command(readme) == "echo one && echo two"
    assert bench.readme_command(ROOT / "README.md").endswith("qkov reproduce --quick")
    readme.write_text("no marker\n```bash\necho\n```\n")
    with pytest.raises(ValueError, match="no fenced bash block"):
        bench.readme_command(readme)


def test_report_headline_reads_the_counts_and_says_none_when_absent():
    bench = _bench()
    md = ("**Of 14 claims: 6 hold, 2 hold in part, 5 contradicted, 1 inconclusive.**\n\n"
          "**Evidence against (8 lines):**\n\n- a\n\n**Undecided \\(an effect ...\\) (2 lines):**\n")
    assert bench.report_headline(md) == {"headline": "Of 14 claims: 6 hold, 2 hold in part, 5 contradicted, "
                                                     "1 inconclusive", "against_lines": 8, "undecided_lines": 2}
    assert bench.report_headline("") == {"headline": None, "against_lines": None, "undecided_lines": None}


def test_reproduce_summary_sums_manifests_and_counts_the_unreadable(tmp_path):
    bench = _bench()
    runs = [{"name": "a", "status": "executed"}, {"name": "b", "status": "executed"}, {"name": "c", "status": "failed"}]
    (tmp_path / "reproduce.json").write_text(json.dumps(
        {"started": "2026-12-06T18:00:00+00:00", "ended": "2026-12-06T18:04:30+00:00", "runs": runs}))
    for name, secs in (("a", 10), ("b", 65)):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "manifest.json").write_text(json.dumps(
            {"started": "2026-12-06T18:00:00+00:00", "ended": f"2026-12-06T18:{secs // 60:02d}:{secs % 60:02d}+00:00"}))
    (tmp_path / "runs" / "c").mkdir()
    (tmp_path / "runs" / "c" / "manifest.json").write_text("{not json")
    s = bench.reproduce_summary(tmp_path)
    assert s == {"span_s": 270.0, "runs": 3, "by_status": {"executed": 2, "failed": 1}, "run_s_sum": 75.0,
                 "manifests_missing": 1}
    assert bench.reproduce_summary(tmp_path / "absent")["runs"] == 0


RECORD = {"command": "pip install -e . && qkov reproduce --quick", "commit": "d2096cda3632", "started": "2026-12-06T18:30:00+00:00",
          "machine": "Linux", "cpus": 2, "load_start": [0.12, 0, 0], "load_end": [1.96, 0, 0], "pip_find_links": True,
          "returncode": 0, "wall_s": 334.4, "user_s": 400.0, "sys_s": 100.0, "max_rss_mb": 1400.0,
          "reproduce": {"span_s": 267.0, "runs": 42, "by_status": {"executed": 42}, "run_s_sum": 312.0,
                        "manifests_missing": 0},
          "headline": "Of 14 claims: 6 hold", "against_lines": 8, "undecided_lines": 2}


def test_block_renders_every_number_from_the_record():
    md = main_command(RECORD)
    for text in ("Commit d2096cd", "load average 0.1 at the start and 2.0 at the end", "**5 min 34 s wall, install included**",
                 "exit status 0", "400 s user + 100 s system", "(150 % of a core)", "1400 MB",
                 "4 min 27 s wall; 42 runs (42 executed); 312 s summed", "\"Of 14 claims: 6 hold\"",
                 "8 evidence-against lines, 2 undecided lines", "pip reads a local wheel folder"):
        assert text in md, (text, md)


def test_block_says_not_recorded_instead_of_guessing():
    rec = {k: v for k, v in RECORD.items() if k not in ("user_s", "max_rss_mb", "headline", "undecided_lines")}
    md = main_command(rec)
    assert "CPU not recorded user + 100 s system" in md and "largest process not recorded." in md, md
    assert "share of a core not recorded" in md and "\"not recorded\"" in md and "not recorded undecided" in md
    assert main_command(None).startswith("No record yet: `python benchmarks/bench_main_command.py`")


def _cli(load_start, load_end, wall):
    return {"commit": "abc1234def", "started": "2026-12-06T18:40:00+00:00", "cpus": 2, "load_start": load_start,
            "load_end": load_end, "rows": [
                {"command": "baseline", "wall_s": 0.05, "cpu_s": 0.04, "target_wall_s": None, "best_of": 3},
                {"command": "qkov --help", "wall_s": wall, "cpu_s": 0.06, "target_wall_s": 0.5, "best_of": 3}]}


@pytest.mark.parametrize("loads,wall,verdict", [
    ((0.1, 0.4), 0.2, "< 0.5 s: met"),
    ((0.1, 0.4), 0.7, "< 0.5 s: **missed**"),
    ((0.1, 3.0), 0.7, "< 0.5 s: **not decided** (machine loaded)"),   # a loaded machine cannot decide a miss
    ((3.0, 3.0), 0.2, "< 0.5 s: met"),                                 # ... but a pass under load is a pass
])
def test_cli_block_marks_each_target_from_the_record(loads, wall, verdict):
    md = cli_startup(_cli(*loads, wall))
    row = next(line for line in md.splitlines() if line.startswith("| qkov --help"))
    assert row == f"| qkov --help | 3 | {wall:.2f} | 0.06 | {wall / 0.05:.1f}x | {verdict} |", row
    assert "commit abc1234" in md and ("not idle" in md) == (max(loads) >= 1.0)
    assert cli_startup(None).startswith("No record yet: `python benchmarks/bench_cli.py --json")
