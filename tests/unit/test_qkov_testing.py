"""qkov.testing's assertions fail on broken inputs, naming every input; its strategies keep to their bounds.

Each assertion gets a known-answer pair: a true statement that passes and a broken one (a perturbed
trajectory, a random start, swapped runs, another optimizer's map, a level never reached) that fails with a
message naming the parametrization, K, M, the ratio, the start and the time or level.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings

from qkov.testing import (NEXT_ORDER, NEXT_ORDER_REMAINDERS, Case, InsufficientEvidence, Law, RandomStart,
                          assert_first_integral_conserved, assert_law_within_remainder, assert_on_symmetric_set, assert_sharper_at_matched_loss, full_run, next_order_law,
                          strategies as qst, trajectories, trajectory)

CASE = Case("FACO", 10, 19, 2.0, 0.1, 0.1)


def _names_every_input(message: str, case: Case) -> None:
    for part in (f"param={case.param}", f"K={case.K}", f"M={case.M}", f"ratio={case.ratio:.6g}", "start=", repr(case)):
        assert part in message, (part, message)


def test_next_order_law_passes_and_the_law_scaled_by_1_2_fails_naming_every_input():
    tr = trajectory(CASE, [1e8, 1e12])
    assert_law_within_remainder(NEXT_ORDER["residual"], tr, NEXT_ORDER_REMAINDERS["residual"])
    wrong = Law("1.2 x next-order 1-p", "residual", lambda c, t: 1.2 * next_order_law(c, t.t)["residual"],
                error="relative")
    with pytest.raises(AssertionError) as err:
        assert_law_within_remainder(wrong, tr, NEXT_ORDER_REMAINDERS["residual"])
    msg = str(err.value)
    _names_every_input(msg, CASE)
    assert "t=1e+12" in msg and "error=2.000e-01" in msg and "2 of 2 times fail" in msg


def test_a_remainder_given_as_numbers_and_a_nan_law_fail():
    tr = trajectory(CASE, [1e8])
    with pytest.raises(AssertionError, match=r"1e-07 \(given\)"):
        assert_law_within_remainder(NEXT_ORDER["u"], tr, 1e-7)       # the error is 2.8e-6 (its remainder 2.9e-2)
    nan_law = Law("nan", "u", lambda c, t: np.full(t.t.shape, np.nan))
    with pytest.raises(AssertionError, match="law=nan"):
        assert_law_within_remainder(nan_law, tr, 1.0)


def test_first_integral_conserved_and_a_perturbed_state_fails():
    tr = trajectory(CASE, np.logspace(0, 12, 7))
    assert_first_integral_conserved(tr)
    state = tr.state.copy()
    state[:, -1] *= 1.05
    bumped = dataclasses.replace(tr, solution=dataclasses.replace(tr.solution, state=state))
    with pytest.raises(AssertionError, match=r"t=1e\+12") as err:
        assert_first_integral_conserved(bumped)
    _names_every_input(str(err.value), CASE)


def test_symmetric_start_stays_on_the_set_and_a_random_start_does_not():
    case = Case("FAFO", 3, 2, 1.5, 0.5, 0.5)
    assert_on_symmetric_set(full_run(case, [0.5, 1.0], 0.05))
    with pytest.raises(AssertionError, match=r"random\(scale=0.1, seed=1\)") as err:
        assert_on_symmetric_set(full_run(case, [0.5, 1.0], 0.05, start=RandomStart(0.1, 1)))
    assert "t=0.5" in str(err.value) and "K=3 M=2 ratio=1.5" in str(err.value)


def test_sharper_at_matched_loss_both_ways_and_an_unreached_level():
    slow, fast = trajectories([CASE, CASE.with_ratio(8.0)], np.logspace(0, 12, 61))
    assert_sharper_at_matched_loss(fast, slow, [1e-4, 1e-6])
    with pytest.raises(AssertionError, match="not sharper than b at matched loss 0.0001") as err:
        assert_sharper_at_matched_loss(slow, fast, [1e-4, 1e-6])
    assert "ratio=2 " in str(err.value) and "ratio=8 " in str(err.value)
    with pytest.raises(InsufficientEvidence, match="1e-30 not reached"):
        assert_sharper_at_matched_loss(fast, slow, 1e-30)


def test_parametrizations_come_from_the_registry(monkeypatch):
    from theory import parametrization as reg

    assert qst.parametrization_names() == reg.PARAMETRIZATIONS
    assert {"TACO", "TAFO"} <= set(qst.parametrization_names(extensions=True))
    assert qst.parametrization_names(extensions=True, requires=("laws",)) == reg.PARAMETRIZATIONS
    monkeypatch.setitem(reg.KINDS, "Z", type("Zed", (reg.Tied,), {"letter": "Z", "name": "zed"})())
    assert "ZACO" in qst.parametrization_names(extensions=True)   # a user-declared kind is drawn with no other change
    with pytest.raises(ValueError, match="requires: 'clock'"):
        qst.parametrization_names(requires=("clock",))


@settings(max_examples=25, deadline=None)
@given(qst.cases(max_attention_factor=2), qst.optimizer_specs(("adam", "momentum")), qst.random_starts())
def test_strategies_keep_their_documented_bounds(case, spec, start):
    assert 2 <= case.K <= 50 and 1 <= case.M <= 50 and 0.05 <= case.u0 == case.v0 <= 1.0
    assert case.attention_factor <= 2 * (1 + 1e-9) and case.ratio >= 0.01
    assert 0 <= spec.beta1 <= 0.99 and 0 <= spec.beta2 <= 0.9999 and 1e-12 <= spec.eps <= 1e-2
    assert 0.01 <= start.scale <= 0.2
