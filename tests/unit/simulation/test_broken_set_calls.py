"""The sharpen / de-sharpen calls of simulation.broken_set_predictor.calls on constructed 1 - p tables."""

from __future__ import annotations

from simulation.broken_set_predictor import calls, first_below


def test_calls_against_the_lowest_ratio_and_rises_along_the_levels():
    """Issue 31's measured case (ratio 1 falls; ratio 4 is below ratio 1 at L = 0.1, then rises above it) and a
    level one ratio did not reach (None: no call, no rise), and a tie with ratio 1 ("same")."""
    vals = {1.0: [8.49e-2, 2.89e-2, 1.35e-2], 4.0: [5.55e-3, 1.65e-1, 2.12e-1], 2.0: [2.1e-2, None, 1.35e-2]}
    c, up = calls(vals)
    assert c[1.0] == ["same", "same", "same"]
    assert c[4.0] == ["sharpens", "de-sharpens", "de-sharpens"]
    assert c[2.0] == ["sharpens", None, "same"]          # a tie with ratio 1 is no call either way
    assert up[1.0] == [None, False, False]
    assert up[4.0] == [None, True, True]
    assert up[2.0] == [None, None, None]


def test_first_below_interpolates_in_log_log_and_refuses_levels_not_reached():
    loss = [1.0, 0.1, 0.01]
    y = [1.0, 1e-2, 1e-4]
    assert abs(first_below(loss, y, 10 ** -1.5) - 1e-3) < 1e-15
    assert first_below(loss, y, 1e-3) is None
    assert first_below(loss, y, 2.0) is None
