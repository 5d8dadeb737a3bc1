"""``qkov validate synthetic --optimizer adam --u0 --v0 --levels --stop-loss``: the start, the matched losses and
the broken-set prediction per level reach the run (issue 31)."""

import json

from click.testing import CliRunner

from qkov.cli.validate_synthetic import synthetic


def test_start_levels_and_prediction_per_level(tmp_path):
    res = CliRunner().invoke(synthetic, ["--optimizer", "adam", "--betas", "0.9,0.999", "--param", "CACO",
                                         "--ratios", "1,2", "--K", "3", "--M", "2", "--u0", "0.2", "--v0", "0.3",
                                         "--dt", "0.01", "--levels", "0.5,0.2", "--json", "--out", str(tmp_path)],
                             standalone_mode=False, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    run = json.loads(res.stdout)["runs"][0]
    assert run["levels"] == [0.5, 0.2] and (run["u0"], run["v0"]) == (0.2, 0.3)
    assert run["stop_loss"] == 0.2 and run["predictor"]["subgroup"] == "one-class"
    for pair in run["pairs"]:
        assert 0.16 < pair["final_loss"] <= 0.2   # stopped at the lowest level (logged every 10 steps)
        for key in ("measured", "distance", "predicted_one_minus_p", "predicted_distance"):
            assert len(pair[key]) == 2 and all(x is not None for x in pair[key]), key
        # near the set the one-class map is the run (same numbers to rounding; 1e-3 leaves room for the off-set part)
        for m, p, d in zip(pair["measured"], pair["predicted_one_minus_p"], pair["distance"]):
            if d < 1e-2:
                assert abs(m / p - 1) < 1e-3
    calls = {p["ratio"]: (p["measured_call"], p["predicted_call"]) for p in run["pairs"]}
    assert calls[1.0] == (["same", "same"], ["same", "same"])
    assert calls[2.0] == (["sharpens", "sharpens"], ["sharpens", "sharpens"])
    (run_dir,) = (tmp_path / "runs").iterdir()
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["levels"] == [0.5, 0.2] and cfg["u0"] == 0.2 and cfg["v0"] == 0.3


def test_bad_levels_is_a_one_line_field_error_before_any_work(tmp_path):
    res = CliRunner().invoke(synthetic, ["--optimizer", "adam", "--levels", "0.1,0", "--out", str(tmp_path)],
                             standalone_mode=False, catch_exceptions=True)
    assert res.exit_code != 0 and "levels" in str(res.exception)
    assert not (tmp_path / "runs").exists()
