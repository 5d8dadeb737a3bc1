"""``qkov validate synthetic --optimizer adam --betas 0.9,0.999 --json``: measured 1-p and set distance per level."""

import json

from click.testing import CliRunner

from qkov.cli.validate_synthetic import synthetic


def test_adam_default_betas_reports_measured_residual_and_distance_at_matched_losses(tmp_path):
    res = CliRunner().invoke(synthetic, ["--optimizer", "adam", "--betas", "0.9,0.999", "--param", "CACO",
                                         "--ratios", "1,4", "--K", "3", "--M", "2", "--steps", "150", "--json",
                                         "--out", str(tmp_path)], standalone_mode=False, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    run = out["runs"][0]
    assert run["optimizer"] == {"name": "adam", "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0}
    assert len(run["levels"]) == 5
    for pair in run["pairs"]:
        assert all(x is not None and 0 < x < 1 for x in pair["measured"])
        assert all(x is not None and x >= 0 for x in pair["distance"])
        # near the set the members' median 1-p is the reduced map's
        for m, r, d in zip(pair["measured"], pair["reduced"], pair["distance"]):
            if d < 1e-3:     # the off-set part moves 1-p by ~10x the distance (measured 2e-3 at d = 2e-4)
                assert abs(m / r - 1) < 1e-2
        assert pair["predicted_departure_step"] is not None      # Adam eps=1e-8: predicted to leave the set
    (run_dir,) = (tmp_path / "runs").iterdir()            # the study's run kind: figure and evidence too
    assert run_dir.name.startswith("synthetic-optimizer-") and (run_dir / "optimizer_map.png").is_file()
    claims = {e["claim"] for e in json.loads((run_dir / "claims.json").read_text())["evidence"]}
    assert claims == {"adam-ratio-default", "optimizer-stability", "desharpen-predictor"}


def test_bad_betas_is_a_one_line_field_error(tmp_path):
    res = CliRunner().invoke(synthetic, ["--optimizer", "adam", "--betas", "0.9", "--out", str(tmp_path)],
                             standalone_mode=False, catch_exceptions=True)
    assert res.exit_code != 0 and "betas" in str(res.exception)
    assert not (tmp_path / "runs").exists()
