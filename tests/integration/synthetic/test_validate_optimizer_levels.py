"""``qkov validate synthetic --optimizer adam --u0 --v0 --levels --stop-loss``: the start, the matched losses and
the ensemble's probability of de-sharpening and its prediction per level reach the run (issues 31, 41)."""

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
    assert run["stop_loss"] == 0.2
    assert run["ensemble"]["size"] == 64 and run["predictor"]["method"].startswith("sign-pattern")
    for pair in run["pairs"]:
        assert 0.16 < pair["final_loss"] <= 0.2   # the members' median stops at the lowest level
        for key in ("measured", "distance", "measured_q10", "measured_q90", "reduced"):
            assert len(pair[key]) == 2 and all(x is not None for x in pair[key]), key
        # near the set the members' median 1-p is the reduced map's
        for m, r, d in zip(pair["measured"], pair["reduced"], pair["distance"]):
            if d < 1e-3:     # the off-set part moves 1-p by ~10x the distance (measured 2e-3 at d = 2e-4)
                assert abs(m / r - 1) < 1e-2
    r2 = run["pairs"][1]
    assert r2["ratio"] == 2.0 and r2["desharpen_n"] == [64, 64]
    for k, n, lo, hi, pred in zip(r2["desharpen_k"], r2["desharpen_n"], r2["p_desharpen_lo"], r2["p_desharpen_hi"],
                                  r2["predicted_p_desharpen"]):
        assert 0 <= lo <= k / n <= hi <= 1 and 0 <= pred <= 1
    assert "desharpen_k" not in run["pairs"][0]          # the reference ratio has no probability of its own
    (run_dir,) = (tmp_path / "runs").iterdir()
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["levels"] == [0.5, 0.2] and cfg["u0"] == 0.2 and cfg["v0"] == 0.3


def test_bad_levels_is_a_one_line_field_error_before_any_work(tmp_path):
    res = CliRunner().invoke(synthetic, ["--optimizer", "adam", "--levels", "0.1,0", "--out", str(tmp_path)],
                             standalone_mode=False, catch_exceptions=True)
    assert res.exit_code != 0 and "levels" in str(res.exception)
    assert not (tmp_path / "runs").exists()
