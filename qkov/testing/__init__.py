r"""qkov.testing: property-based tests of the asymptotics, as a library (like ``numpy.testing``).

::

    from hypothesis import given
    from qkov.testing import strategies as qst, assert_law_within_remainder, trajectory, NEXT_ORDER, NEXT_ORDER_REMAINDERS

    @given(qst.cases(max_attention_factor=2), qst.times(1e6, 1e12))
    def test_next_order_residual(case, t):
        assert_law_within_remainder(NEXT_ORDER["residual"], trajectory(case, [t]), NEXT_ORDER_REMAINDERS["residual"])

* :mod:`qkov.testing.strategies` — Hypothesis strategies for parametrizations (from the registry, user-declared
  kinds included), sizes ``(K, M)``, rates and ratios, symmetric and random starts, times, loss levels and
  optimizer settings, each with documented bounds (needs Hypothesis: ``pip install "qkov[test]"``);
* :class:`Case` (one input: parametrization, ``K``, ``M``, ratio, start) and the library calls a property needs
  (:mod:`qkov.testing.helpers`): :func:`trajectory`, :func:`trajectories`, :func:`next_order_law`,
  :func:`leading_law`, :func:`level_curve_v`, :func:`loss_levels`, :func:`matched_residuals`, :func:`full_run`,
  :func:`train_full`;
* :class:`Law` and :class:`Remainder` (:mod:`qkov.testing.laws`), theory's next-order laws with their stated
  remainders (:data:`NEXT_ORDER`, :data:`NEXT_ORDER_REMAINDERS`);
* assertions whose failure messages name every input (:mod:`qkov.testing.assertions`):
  :func:`assert_law_within_remainder`, :func:`assert_first_integral_conserved`, :func:`assert_on_symmetric_set`,
  :func:`assert_sharper_at_matched_loss`, :func:`assert_matches_reduced_map`;
* Hypothesis profiles ``ci`` and ``thorough`` (:mod:`qkov.testing.profiles`), registered by the pytest plugin
  :mod:`qkov.testing.pytest_plugin` and chosen by ``--qkov-hypothesis-profile`` or ``$QKOV_HYPOTHESIS_PROFILE``.

Names load on first use (``import qkov.testing`` imports neither numpy nor Hypothesis).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "cases": ("Case", "RandomStart"),
    "helpers": ("CaseTrajectory", "FullRun", "OptimizerRun", "trajectory", "trajectories", "next_order_law",
                "leading_law", "law_of_u", "level_curve_v", "first_integral_drift", "loss_levels",
                "matched_residuals", "full_run", "train_full"),
    "laws": ("Law", "Remainder", "NEXT_ORDER", "NEXT_ORDER_REMAINDERS", "LEADING_RESIDUAL_OF_U",
             "LEADING_RESIDUAL_ENVELOPE", "start_time"),
    "assertions": ("assert_law_within_remainder", "assert_first_integral_conserved", "assert_on_symmetric_set",
                   "assert_sharper_at_matched_loss", "assert_matches_reduced_map", "InsufficientEvidence"),
    "profiles": ("property_settings",),
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE) + ["strategies"]

if TYPE_CHECKING:
    from qkov.testing import strategies  # noqa: F401
    from qkov.testing.assertions import (  # noqa: F401
        InsufficientEvidence, assert_first_integral_conserved, assert_law_within_remainder,
        assert_matches_reduced_map, assert_on_symmetric_set, assert_sharper_at_matched_loss)
    from qkov.testing.cases import Case, RandomStart  # noqa: F401
    from qkov.testing.helpers import (  # noqa: F401
        CaseTrajectory, FullRun, OptimizerRun, first_integral_drift, full_run, law_of_u, leading_law, level_curve_v,
        loss_levels, matched_residuals, next_order_law, train_full, trajectories, trajectory)
    from qkov.testing.laws import (  # noqa: F401
        LEADING_RESIDUAL_ENVELOPE, LEADING_RESIDUAL_OF_U, NEXT_ORDER, NEXT_ORDER_REMAINDERS, Law, Remainder, start_time)
    from qkov.testing.profiles import property_settings  # noqa: F401


def _module(name: str) -> Any:
    if name == "cases":
        import qkov.testing.cases as cases
        return cases
    if name == "helpers":
        import qkov.testing.helpers as helpers
        return helpers
    if name == "laws":
        import qkov.testing.laws as laws
        return laws
    if name == "assertions":
        import qkov.testing.assertions as assertions
        return assertions
    if name == "profiles":
        import qkov.testing.profiles as profiles
        return profiles
    import qkov.testing.strategies as strategies
    return strategies


def __getattr__(name: str) -> Any:
    if name == "strategies":
        return _module("strategies")
    if name in _WHERE:
        return getattr(_module(_WHERE[name]), name)
    raise AttributeError(f"module 'qkov.testing' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
