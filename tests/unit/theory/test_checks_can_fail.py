"""Derive checks that can fail: each is fed a wrong input (flipped order, wrong threshold, false identity) and must fail."""

import pytest
import sympy as sp

from theory.checks import SYMBOLIC, Check, identity_check, numeric_method
from theory.ordering import order_check, rank_by_pairwise_limits, slow_start_check
from theory.symbols import A_qk, kappa

oo = sp.oo


def test_order_check_passes_only_when_the_order_agrees_with_both_limits():
    assert order_check("FACO", "CACO", sp.Integer(0), oo, ("FACO", "CACO")).passed
    assert not order_check("FACO", "CACO", sp.Integer(0), oo, ("CACO", "FACO")).passed     # order flipped
    assert not order_check("FACO", "CACO", sp.Integer(0), sp.Integer(0), ("FACO", "CACO")).passed  # inconsistent
    assert not order_check("FACO", "CACO", sp.Integer(1), sp.Integer(1), ("FACO", "CACO")).passed  # a tie
    assert order_check("A", "B", sp.Rational(1, 2), sp.Integer(2), ("A", "B")).passed
    assert not order_check("A", "B", sp.Rational(1, 2), sp.Integer(3), ("A", "B")).passed       # 1/2 * 3 != 1


def test_rank_follows_the_pairwise_limits_and_a_flipped_rank_fails_its_checks():
    pairwise = {("CACO", "FACO"): oo, ("CACO", "CAFO"): sp.Integer(0), ("FACO", "CAFO"): sp.Integer(0)}
    order = rank_by_pairwise_limits(pairwise, ("CACO", "FACO", "CAFO"))
    assert order == ("FACO", "CACO", "CAFO")
    flipped = tuple(reversed(order))
    inverse = {k: (sp.Integer(0) if v == oo else oo) for k, v in pairwise.items()}
    assert all(order_check(a, b, pairwise[(a, b)], inverse[(a, b)], order).passed for a, b in pairwise)
    assert not any(order_check(a, b, pairwise[(a, b)], inverse[(a, b)], flipped).passed for a, b in pairwise)


def test_slow_start_threshold_is_derived_not_substituted():
    right = sp.sqrt(sp.Max(0, 1 - A_qk ** 2) / (4 * kappa))
    assert slow_start_check(right).passed
    assert not slow_start_check(sp.sqrt(sp.Max(0, 1 - A_qk ** 2) / (2 * kappa))).passed
    assert not slow_start_check(sp.sqrt(sp.Max(0, 1 - A_qk) / (4 * kappa))).passed


def test_check_methods_are_symbolic_or_numeric_with_digits_and_points():
    with pytest.raises(ValueError):
        Check("x", "", "sympy: simplify", True)
    assert Check("x", "", SYMBOLIC, True).numeric is False
    assert Check("x", "", numeric_method(30, 3), True).numeric is True
    s = sp.Symbol("s", positive=True)
    # simplify does not prove acos + asin = pi/2 here: decided numerically, and labelled so.
    lhs = sp.acos(s / (1 + s)) + sp.asin(s / (1 + s))
    good = identity_check("acos-asin", "", lhs, sp.pi / 2)
    bad = identity_check("acos-asin-wrong", "", lhs, sp.pi / 2 + s / 10 ** 20)
    assert good.method == bad.method == "numeric (40 digits, 5 points)"
    assert good.passed and not bad.passed
    assert identity_check("trivial", "", sp.sin(s) ** 2 + sp.cos(s) ** 2, 1).method == SYMBOLIC


def test_exact_constant_proves_its_value_and_rejects_a_state_dependent_ratio():
    """Symbolic: the candidate read at one point is accepted only when N c_d - c_n D expands to 0."""
    from theory.checks import exact_constant

    a, b, k = sp.symbols("a b k", positive=True)
    ratio = (a * sp.exp(2 * b) + sp.exp(2 * b)) * (k + 1) / (sp.exp(b) ** 2 * (a + 1) * k)
    assert exact_constant(ratio, state=(a, b)) == (k + 1) / k
    with pytest.raises(ValueError):
        exact_constant(ratio * (1 + sp.exp(b)) / (2 + sp.exp(b)), state=(a, b))   # depends on b


def test_direction_checks_fail_for_a_scaled_direction():
    """Symbolic: the QK direction of theory.symmetric_line scaled by 6/5 is not the gradient's direction."""
    from theory.checks import _exp_atoms_as_symbols
    from theory.orbit_gradient import orbit_gradient
    from theory.symbols import beta, gamma
    from theory.symmetric_line import line_geometry

    g = orbit_gradient()
    c = line_geometry().qk_direction["alpha"]
    ref = (g.alpha - g.beta).subs(gamma, beta)
    for scale, zero in ((1, True), (sp.Rational(6, 5), False)):
        diff = g.alpha.subs(gamma, beta) - scale * c * ref
        assert (sp.expand(sp.numer(sp.together(_exp_atoms_as_symbols(diff)))) == 0) is zero
