"""Every option checked at the edge (issue 44): one line ``qkov: error: <field>: <value>: <allowed>``, exit 2,
before any planning, data loading or cluster start, nothing written, and cheap under load (no torch, Dask or
study engine imported for a refusal).

Before: ``validate synthetic --scheduler "not an address"`` was a 48-line traceback (exit 1); ``tcp://[::1:8786``
was "connection refused"; ``--rates qk=1e300`` failed after data loading with a float overflow; a link at
``OUT/resume`` failed every run after planning (exit 1); ``--optimizer gd --levels 0.3`` and
``--fused-adamw --optimizer sgd`` ran, ignoring the option. A well-formed but unreachable ``--scheduler`` in
every command: tests/faults/test_scheduler.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from qkov.cli.main import cli
from qkov.cli.support import run_cli
from tests.cli_errors import assert_one_line_error
from tests.paths import ROOT, child_env

MALFORMED = ["not an address", "garbage", "tcp://host:notaport", "tcp://[::1:8786", "tcp://localhost:0",
             "tcp://localhost:70000", "http://localhost:8786"]


@pytest.fixture
def no_work(monkeypatch):
    """Every path into work raises: planning, a command's run, a sweep, data loading, a Dask cluster."""
    import qkov.study.engine as engine
    import validation.real.run as real_run

    def boom(*a, **k):
        raise AssertionError("work started before the refusal")

    monkeypatch.setattr(engine, "plan_study", boom)
    monkeypatch.setattr(engine, "StudyCluster", boom)
    monkeypatch.setattr(real_run, "load_dataset", boom)


CASES = [
    *[(["validate", "synthetic", "--scheduler", a], "scheduler", "malformed") for a in MALFORMED],
    (["validate", "real", "--dataset", "sva", "--quick", "--scheduler", "garbage"], "scheduler", "malformed"),
    (["reproduce", "--scheduler", "tcp://[::1:8786"], "scheduler", "malformed"),
    (["validate", "real", "--dataset", "sva", "--quick", "--rates", "qk=1e300"], "rates", "bad factor"),
    (["validate", "real", "--dataset", "sva", "--quick", "--rates", "embedding=1e300"], "rates", "bad factor"),
    (["validate", "real", "--dataset", "sva", "--quick", "--rates", "qk=1e-300"], "rates", "bad factor"),
    (["validate", "real", "--dataset", "sva", "--quick", "--ratios", "1e300"], "ratios", "1e+06"),
    (["validate", "real", "--dataset", "sva", "--quick", "--out", "{link_resume}"], "out", "symbolic link"),
    (["validate", "real", "--dataset", "sva", "--quick", "--out", "{file_resume}"], "out", "not a directory"),
    (["validate", "synthetic", "--out", "{link_resume}"], "out", "symbolic link"),
    (["validate", "synthetic", "--out", "{file_run}"], "out", "not a directory"),
    (["validate", "synthetic", "--optimizer", "gd", "--levels", "0.3"], "levels", "does not apply to --optimizer gd"),
    (["validate", "synthetic", "--optimizer", "gd", "--stop-loss", "0.1"], "stop-loss", "does not apply"),
    (["validate", "synthetic", "--optimizer", "sgd", "--u0", "0.3"], "u0", "does not apply"),
    (["validate", "synthetic", "--optimizer", "adamw", "--v0", "0.3"], "v0", "does not apply"),
    (["validate", "synthetic", "--optimizer", "gd", "--betas", "0.5,0.9"], "betas", "does not apply"),
    (["validate", "synthetic", "--optimizer", "momentum", "--eps", "1e-6"], "eps", "only to adam"),
    (["validate", "synthetic", "--optimizer", "gd", "--weight-decay", "0.1"], "weight-decay", "does not apply"),
    (["validate", "synthetic", "--optimizer", "adam", "--progress"], "progress", "does not apply"),
    (["validate", "synthetic", "--optimizer", "adam", "--data", "sampled"], "data", "population"),
    (["validate", "real", "--dataset", "sva", "--quick", "--fused-adamw", "--optimizer", "sgd"], "fused-adamw",
     "only with --optimizer adamw"),
]


@pytest.mark.parametrize("args, field, why", CASES, ids=[" ".join(a)[-50:] for a, _, _ in CASES])
def test_refused_at_the_edge_in_one_line_before_any_work(args, field, why, tmp_path, monkeypatch, capsys, no_work):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QKOV_DATA_DIR", str(tmp_path))
    paths = {"link_resume": tmp_path / "lr", "file_resume": tmp_path / "fr", "file_run": tmp_path / "fu"}
    for p in paths.values():
        (p / "runs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (paths["link_resume"] / "resume").symlink_to(tmp_path / "elsewhere")
    (paths["file_resume"] / "resume").write_text("")
    (paths["file_run"] / "runs" / "synthetic-0123456789ab").write_text("")
    args = [a.format(**{k: str(v) for k, v in paths.items()}) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "out")]
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert run_cli(cli, args) == 2
    cap = capsys.readouterr()
    line = assert_one_line_error(cap.err, field)
    assert why in line and cap.out == ""
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


def test_fused_adamw_for_a_sweep_with_no_adamw_run_is_refused_before_data_loading(tmp_path, monkeypatch, capsys,
                                                                                 no_work):
    """SVA's paper model trains with SGD by default: --fused-adamw would apply to no run of the sweep."""
    assert run_cli(cli, ["validate", "real", "--dataset", "sva", "--model", "paper", "--fused-adamw", "--device",
                         "cpu", "--data-dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    line = assert_one_line_error(capsys.readouterr().err, "fused-adamw")
    assert "sgd" in line and not (tmp_path / "out").exists()


def test_weight_decay_applies_to_the_torch_adamw_runs():
    """--weight-decay is refused where it does not apply and used where it does (the torch AdamW runs)."""
    from qkov.study.synthetic_command import build_config
    from theory.errors import InputError

    args = (("FAFO",), (1.0,), "population", "adamw", 10, None, None, 0, 4, 8)
    assert build_config(*args, weight_decay=0.1).weight_decay == 0.1
    assert build_config(*args).to_json_dict() == build_config(*args, weight_decay=0.0).to_json_dict()
    with pytest.raises(InputError, match="weight-decay"):
        build_config(*args[:3], "gd", *args[4:], weight_decay=0.1)


REFUSALS = [
    ["validate", "synthetic", "--scheduler", "not an address"],
    ["validate", "synthetic", "--optimizer", "gd", "--levels", "0.3"],
    ["validate", "real", "--rates", "qk=1e300"],
    ["validate", "real", "--scheduler", "tcp://[::1:8786"],
    ["reproduce", "--scheduler", "garbage"],
]


def test_a_refusal_imports_no_torch_dask_or_study_engine(tmp_path):
    """A refusal is cheap under load: decided before torch, Dask, scipy or the study engine are imported (they
    were 2.6-4.9 s of CPU per refusal; now 0.15-0.4 s, docs/reliability.md). One fresh interpreter runs every
    case in turn and reports what each had loaded."""
    code = (
        "import json, sys\nfrom qkov.cli.support import run_cli\nfrom qkov.cli.main import cli\nout = []\n"
        f"for args in {REFUSALS!r}:\n"
        "    heavy = ('torch', 'distributed', 'dask', 'scipy', 'qkov.study.engine', 'validation.real.run')\n"
        f"    rc = run_cli(cli, args + ['--out', {str(tmp_path / 'out')!r}])\n"
        "    out.append([rc, sorted(m for m in heavy if m in sys.modules)])\n"
        "print(json.dumps(out))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=child_env(),
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == [[2, []]] * len(REFUSALS), got
    assert not os.path.exists(tmp_path / "out")
