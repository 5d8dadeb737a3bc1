"""The scaled kind (``S``) reaches every command without an edit there: ``qkov derive``, ``qkov validate synthetic``
and ``qkov reproduce``'s plan (``qkov simulate``: tests/unit/simulation/test_scaled_kind.py).

Each test names the new parametrizations only through ``--param`` or reads them from the registry; a command that
special-cased MODEL.md's four would refuse them or leave them out of its plan.
"""

import json

from qkov.cli.main import cli, run_cli
from qkov.core.runstore import is_complete
from qkov.study.engine import plan_study
from theory.parametrization import registered


def test_derive_cli_derives_the_reduced_flow_of_the_new_kind(tmp_path):
    assert run_cli(cli, ["derive", "--param", "SASO", "--format", "md", "--out", str(tmp_path)]) == 0
    run, = (tmp_path / "runs").iterdir()
    assert is_complete(run)
    d = json.loads((run / "derivation.json").read_text())["parametrizations"]["SASO"]
    assert d["dimension"] == 5 and d["line_theory"] is False
    assert set(d["rhs"]) == set(d["state"]) == {"s_O", "s_V", "a", "b", "c"}
    flow = [c for c in d["checks"] if c["name"].startswith("SASO-flow-")]
    assert len(flow) == 5 and all(c["passed"] for c in flow)
    assert "SASO: reduced flow of a" in (run / "report.md").read_text()


def test_validate_synthetic_trains_the_new_kind(tmp_path, capsys):
    rc = run_cli(cli, ["validate", "synthetic", "--param", "SASO,CASO", "--ratios", "1,5", "--steps", "60",
                       "--json", "--out", str(tmp_path)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    runs = json.loads(next((tmp_path / "runs").iterdir()).joinpath("config.json").read_text())
    assert runs["params"] == ["SASO", "CASO"]
    assert "SASO" in json.dumps(out)


def test_reproduce_plans_and_checks_every_registered_kind(tmp_path):
    """The simulate stage's reduction run (reduced flow vs full matrices) carries every registered parametrization."""
    plan = plan_study(tmp_path, quick=True, data_dir=None, only=["simulate"])
    red, = [r for r in plan.runs if r.kind == "simulate-reduction"]
    assert red.config["params"] == list(registered()) and "SASO" in red.config["params"]
    red.config["params"] = ["SASO", "CASO"]                # run the new kind's share only (the full run: 12)
    red.execute(red.kind, red.config, red.run_dir)
    metrics = json.loads((red.run_dir / "reduction.json").read_text())
    assert set(metrics) == {"SASO", "CASO"}
    for m in metrics.values():
        assert m["rk4_rel_err"] < 1e-6 and 1.8 < m["error_ratio"] < 2.2     # O(dt^4) RK4, O(dt) GD
    verdicts = {e["claim"]: e["verdict"] for e in json.loads((red.run_dir / "claims.json").read_text())["evidence"]}
    assert verdicts["reduced-odes"] == "supports" and verdicts["symmetric-subspace"] == "supports"
