"""Issue 10's list of rejected values: each gives one line `qkov: error: <field>: <value>: <allowed>`, exit 2,
before any work and with nothing written (the working directory and --out stay as they were)."""

from __future__ import annotations

import os

import pytest

from qkov.cli.main import cli
from qkov.cli.support import run_cli
from tests.cli_errors import assert_one_line_error

CASES = [
    (["validate", "synthetic", "--steps", "0"], "steps"),
    (["simulate", "--out", "", "--save"], "out"),
    (["validate", "synthetic", "--out", "{file}"], "out"),
    (["derive", "--out", "/dev/null"], "out"),
    (["simulate", "--save", "--out", "/proc/qkov-not-writable"], "out"),
    (["simulate", "--eta-qk", "1e300"], "eta-qk"),
    (["simulate", "--eta-qk", "1e4", "--eta-ov", "1e-4"], "eta-qk"),      # ratio 1e8: outside [1e-6, 1e6]
    (["simulate", "--t", "1,1e300"], "t"),
    (["simulate", "--K", "1"], "K"),
    (["simulate", "--method", "euler"], "method"),                        # a choice click checks itself
    (["simulate", "--dt", "abc", "--method", "full-gd"], "dt"),           # a number click parses itself
    (["validate", "synthetic", "--optimizer", "lbfgs"], "optimizer"),
    (["validate", "synthetic", "--ratios", "1,0"], "ratios"),
    (["validate", "real", "--dataset", "imdb"], "dataset"),
    (["reproduce", "--workers", "0"], "workers"),
    (["derive", "--format", "pdf"], "format"),
    (["simulate", "--t", ",".join(str(i) for i in range(1, 1002))], "t"),  # more than MAX_TIMES (1000) times
    (["simulate", "--method", "full-gd", "--t", "0.05,0.0500000001"], "t"),  # two times on one step of dt
]


@pytest.mark.parametrize("args,field", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_value_is_one_line_exit_2_nothing_written(args, field, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("keep me")
    args = [x.replace("{file}", str(a_file)) for x in args]
    before = sorted(os.listdir(tmp_path))
    assert run_cli(cli, args) == 2
    cap = capsys.readouterr()
    assert_one_line_error(cap.err, field)
    assert cap.out == ""
    assert sorted(os.listdir(tmp_path)) == before and a_file.read_text() == "keep me"
    assert not os.path.exists("/proc/qkov-not-writable")


def test_defaults_run():
    """`qkov simulate` with no options runs (its defaults are valid for every parametrization)."""
    assert run_cli(cli, ["simulate", "--json"]) == 0


def test_the_time_cap_admits_max_times_and_names_it():
    """The cap is on the count, at exactly MAX_TIMES: that many times parse, one more is refused naming the cap."""
    from qkov.cli.options import MAX_TIMES, IncreasingTimes

    assert len(IncreasingTimes().parse(",".join(str(i) for i in range(MAX_TIMES)))) == MAX_TIMES
    with pytest.raises(ValueError):
        IncreasingTimes().parse(",".join(str(i) for i in range(MAX_TIMES + 1)))
    assert f"at most {MAX_TIMES}" in IncreasingTimes().allowed
