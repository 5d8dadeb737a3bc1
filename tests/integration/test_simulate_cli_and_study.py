"""``qkov simulate``: the JSON interface (reduced and full-matrix methods), errors, plots; the study contract."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from qkov.cli.simulate import simulate
from simulation.reduced import integrate
from qkov.core.runstore import is_complete

PARAMS = ("CACO", "FACO", "CAFO", "FAFO")


def _run(args):
    return CliRunner().invoke(simulate, args, standalone_mode=False, catch_exceptions=True)


def test_json_all_params_reduced():
    res = _run(["--param", "all", "--K", "5", "--M", "4", "--eta-qk", "10", "--eta-ov", "1", "--u0", "0.2",
                "--v0", "0.1", "--t", "5,50", "--json"])
    assert res.exit_code == 0, res.output
    runs = json.loads(res.stdout)["runs"]
    assert [r["param"] for r in runs] == list(PARAMS)
    for r in runs:
        assert set(r) == {"param", "t", "u", "v", "p", "loss"} and r["t"] == [5.0, 50.0]
        ref = integrate(r["param"], 5, 4, 10.0, 1.0, 0.2, 0.1, [5.0, 50.0])
        np.testing.assert_allclose(r["u"], ref.u, rtol=1e-12)
        assert r["loss"][1] < r["loss"][0]


@pytest.mark.parametrize("param", PARAMS)
def test_json_full_agrees_with_reduced(param):
    res = _run(["--param", param, "--K", "4", "--M", "3", "--eta-qk", "2", "--u0", "0.3", "--v0", "0.3",
                "--t", "2,6", "--method", "full-gd", "--dt", "0.02", "--json"])
    assert res.exit_code == 0, res.output
    full = json.loads(res.stdout)["runs"][0]
    ref = integrate(param, 4, 3, 2.0, 1.0, 0.3, 0.3, [2.0, 6.0])
    np.testing.assert_allclose(full["u"], ref.u, rtol=0.02)
    np.testing.assert_allclose(full["v"], ref.v, rtol=0.02)


def test_factorized_at_zero_and_bad_values_are_one_line_config_errors():
    from qkov.core.config import ConfigError

    for args, field in ((["--param", "FAFO", "--v0", "0"], "v0"), (["--param", "CACO", "--t", "5,1"], "t"),
                        (["--param", "CACO", "--K", "1"], "K"), (["--param", "XYZ"], "param"),
                        (["--param", "CACO", "--method", "full-gd", "--t", "0.03"], "t")):
        res = _run(args)
        assert isinstance(res.exception, ConfigError), args
        msg = str(res.exception)
        assert "\n" not in msg and msg.startswith(f"{field}: "), msg
    msg = str(_run(["--param", "FACO", "--u0", "1", "--v0", "0"]).exception)
    assert "fixed point" in msg and "v0" in msg


def test_random_full_start_runs_and_is_seeded():
    args = ["--param", "FAFO", "--K", "3", "--M", "2", "--t", "1,2", "--method", "full-gd", "--init", "random", "--scale",
            "0.1", "--seed", "4", "--json"]
    a, b = _run(args), _run(args)
    assert a.exit_code == 0 and a.stdout == b.stdout


def test_plot_writes_complete_run(tmp_path):
    res = _run(["--param", "CACO,FAFO", "--K", "4", "--M", "3", "--u0", "0.1", "--v0", "0.1", "--t", "1,10",
                "--plot", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    out, = (tmp_path / "runs").iterdir()
    assert out.name.startswith("simulate-")
    for stem in ("trajectories", "phase_portraits", "residual_vs_ratio", "phase_diagram"):
        assert (out / f"{stem}.png").stat().st_size > 1000 and (out / f"{stem}.svg").is_file()
        for ext in ("png", "svg"):   # every figure written is named on stdout
            assert f"figure: {(out / f'{stem}.{ext}').resolve()}" in res.stdout
    assert is_complete(out)


def test_study_contract(tmp_path):
    from qkov.study import simulate_stage as study

    runs = study.study_runs(True, None)
    kinds = [k for k, _ in runs]
    assert kinds == ["simulate-reduction", "simulate-asymptotics", "simulate-sharpness", "simulate-paper"]
    assert all(json.loads(json.dumps(c)) == c and "seed" in c for _, c in runs)
    kind, cfg = runs[3]
    study.execute(kind, cfg, tmp_path / "paper")
    assert is_complete(tmp_path / "paper")
    (ev,) = json.loads((tmp_path / "paper" / "claims.json").read_text())["evidence"]
    assert ev["claim"] == "paper-equations" and ev["figure"] == "paper_vs_derived"
    assert ev["verdict"] in ("supports", "contradicts", "insufficient")
    with pytest.raises(ValueError):
        study.execute("nope", {}, tmp_path / "x")


def test_laws_json_prints_both_orders_and_next_order_is_closer():
    """`--laws --json`: per time, the solution and the leading and next-order laws of u, v and 1 - p;
    at t = 1e12 the next-order residual law is closer to the solution than the leading one (docs/theory.md)."""
    res = _run(["--param", "CACO,FAFO", "--t", "1e4,1e12", "--laws", "--json"])
    assert res.exit_code == 0, res.output
    for r in json.loads(res.stdout)["runs"]:
        laws = r["laws"]
        assert set(laws) == {"u", "u_leading", "u_next", "v", "v_leading", "v_next", "residual",
                             "residual_leading", "residual_next"}
        np.testing.assert_allclose(laws["u"], r["u"], rtol=1e-12)
        err = lambda k: abs(laws[k][-1] / laws["residual"][-1] - 1)  # noqa: E731
        assert err("residual_next") < err("residual_leading") / 5, (r["param"], laws)


def test_laws_need_the_reduced_method():
    from qkov.core.config import ConfigError

    res = _run(["--param", "CACO", "--laws", "--method", "full-gd", "--t", "1"])
    assert isinstance(res.exception, ConfigError) and str(res.exception).startswith("laws: full-gd: ")


def test_save_takes_the_lock_before_computing(tmp_path, monkeypatch):
    """Issue 25: `simulate --save` on a results directory another process holds is refused (exit 2, one line
    naming the holder) before anything is integrated: the solver is never called."""
    import subprocess
    import sys

    from qkov.cli.main import cli
    from qkov.cli.support import run_cli
    from qkov.study import simulate_command
    from tests.paths import ROOT

    out = tmp_path / "out"
    code = (f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
            "from qkov.core.lock import results_lock\n"
            f"with results_lock({str(out)!r}, 'qkov test-holder'):\n    print('held', flush=True); time.sleep(120)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        calls = []
        monkeypatch.setattr(simulate_command, "run_simulation", lambda cfg: calls.append(cfg) or [])
        assert run_cli(cli, ["simulate", "--param", "CACO", "--t", "5", "--save", "--out", str(out)]) == 2
        assert calls == []
    finally:
        holder.kill()
        holder.wait()
