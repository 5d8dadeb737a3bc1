r"""Hypothesis strategies for qkov's objects, each with bounds that keep the integrations finite.

Import it as ``from qkov.testing import strategies as qst`` (needs Hypothesis: ``pip install "qkov[test]"``).

===========================  ====================================================================
strategy                     draws (default bounds; why)
===========================  ====================================================================
:func:`parametrizations`     a name of :data:`theory.PARAMETRIZATIONS`, or of every registered one
                             (:func:`theory.parametrization.registered`, user-declared kinds included)
                             with ``extensions=True``; ``requires=`` keeps those with a generated first
                             integral / law / next-order law / reduced optimizer map
:func:`sizes`                ``(K, M)``, ``K in [2, 50]``, ``M in [1, 50]`` (``K >= 2``, ``M >= 1`` define
                             the task; above 50 nothing new happens and the state grows)
:func:`log_uniform`          a float log-uniform in ``[lo, hi]`` (``0 < lo < hi``)
:func:`ratios`               :math:`\eta_{QK}/\eta_{OV}` log-uniform in ``[0.01, 100]`` (outside, one
                             circuit is frozen for the whole ``t <= 1e12`` range)
:func:`rates`                a learning rate log-uniform in ``[0.1, 10]`` (the flow sees :math:`\eta t`)
:func:`symmetric_starts`     ``(u0, v0)`` in ``[0.05, 1]`` (``> 0``: 0 is a fixed point of a factorized
                             circuit; ``<= 1``: MODEL.md's small start), equal by default
:func:`random_starts`        :class:`~qkov.testing.cases.RandomStart`, scale in ``[0.01, 0.2]``, any seed
:func:`cases`                a :class:`~qkov.testing.cases.Case` of the above; ``max_attention_factor``
                             keeps :math:`a = 2(M+1)/R \le` it (the next-order laws need ``a <= 2``)
:func:`times`                ``t`` log-uniform in ``[1e3, 1e12]`` (DOP853 in log time reaches ``1e15`` in
                             a few thousand steps; the next-order laws need ``t >= 1e6``)
:func:`admissible_cases`     a :class:`~qkov.testing.cases.Case` over the whole admissible range of the
                             reduced flows: ``u0``, ``v0`` log-uniform in ``[1e-12, 3]`` (independent),
                             ``K`` log-uniform in ``[2, 1e4]``, ``M`` in ``[1, 99]``, ratio in
                             ``[1e-3, 1e3]`` (what an integrator's accuracy contract covers)
:func:`loss_levels`          a loss log-uniform in ``[1e-12, 1e-2]`` (reached by ``t = 1e14`` at K = 10)
:func:`learning_rates`       an optimizer step ``lr`` log-uniform in ``[1e-3, 0.1]`` (larger steps leave
                             the flow's regime; smaller ones need many steps to move)
:func:`optimizer_specs`      a :class:`simulation.optimizer_maps.OptimizerSpec`: ``beta1 in [0, 0.99]``,
                             ``beta2 in [0, 0.9999]``, ``eps`` log-uniform in ``[1e-12, 1e-2]``
===========================  ====================================================================

Bounds are keyword arguments (pairs ``(lo, hi)``), so a property narrows them where its statement needs it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

try:
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - exercised in a subprocess without hypothesis
    raise ImportError('qkov.testing.strategies needs Hypothesis, which is not installed: pip install "qkov[test]"') \
        from None

from qkov.testing.cases import Case, RandomStart

SearchStrategy = st.SearchStrategy

REQUIREMENTS = ("first_integral", "laws", "next_order", "orbit_map")
"""What ``parametrizations(requires=...)`` can ask of a parametrization: a generated table entry."""


def _has(name: str, requirement: str) -> bool:
    if requirement == "orbit_map":
        from simulation import generated_optim

        return name in generated_optim.ORBIT_GRAD
    from simulation import generated

    tables: dict[str, Mapping[str, Any]] = {"first_integral": generated.FIRST_INTEGRALS, "laws": generated.LAWS,
                                            "next_order": generated.NEXT_ORDER}
    table = tables[requirement]
    return name in table


def parametrization_names(*, extensions: bool = False, requires: Iterable[str] = ()) -> tuple[str, ...]:
    """The names :func:`parametrizations` draws from, in registry order."""
    from theory.parametrization import PARAMETRIZATIONS, registered

    requires = tuple(requires)
    unknown = [r for r in requires if r not in REQUIREMENTS]
    if unknown:
        raise ValueError(f"requires: {unknown[0]!r}: must be one of {', '.join(REQUIREMENTS)}")
    names = registered() if extensions else PARAMETRIZATIONS
    out = tuple(n for n in names if all(_has(n, r) for r in requires))
    if not out:
        raise ValueError(f"no registered parametrization has {', '.join(requires)}")
    return out


def parametrizations(*, extensions: bool = False, requires: Iterable[str] = ()) -> SearchStrategy[str]:
    """A parametrization name: MODEL.md's four, or (``extensions=True``) every registered one, filtered by
    ``requires`` (:data:`REQUIREMENTS`)."""
    return st.sampled_from(parametrization_names(extensions=extensions, requires=requires))


def log_uniform(lo: float, hi: float) -> SearchStrategy[float]:
    r"""A float with :math:`\log_{10}` uniform in :math:`[\log_{10} lo, \log_{10} hi]`."""
    if not 0 < lo <= hi:
        raise ValueError(f"log_uniform({lo}, {hi}): need 0 < lo <= hi")
    return st.floats(np.log10(lo), np.log10(hi)).map(lambda x: float(10 ** x))


def sizes(K: tuple[int, int] = (2, 50), M: tuple[int, int] = (1, 50)) -> SearchStrategy[tuple[int, int]]:
    """``(K, M)``: classes and common tokens."""
    if K[0] < 2 or M[0] < 1:
        raise ValueError(f"sizes: K >= 2 and M >= 1, got K in {K}, M in {M}")
    return st.tuples(st.integers(*K), st.integers(*M))


def ratios(lo: float = 0.01, hi: float = 100.0) -> SearchStrategy[float]:
    r""":math:`\eta_{QK}/\eta_{OV}`, log-uniform in ``[lo, hi]``."""
    return log_uniform(lo, hi)


def rates(lo: float = 0.1, hi: float = 10.0) -> SearchStrategy[float]:
    """A learning rate of the flow, log-uniform in ``[lo, hi]``."""
    return log_uniform(lo, hi)


def symmetric_starts(lo: float = 0.05, hi: float = 1.0, *, equal: bool = True) -> SearchStrategy[tuple[float, float]]:
    """``(u0, v0)`` of the symmetric start, uniform in ``[lo, hi]``; one value for both when ``equal``."""
    if not 0 < lo <= hi:
        raise ValueError(f"symmetric_starts({lo}, {hi}): need 0 < lo <= hi")
    if equal:
        return st.floats(lo, hi).map(lambda s: (s, s))
    return st.tuples(st.floats(lo, hi), st.floats(lo, hi))


def random_starts(scale: tuple[float, float] = (0.01, 0.2)) -> SearchStrategy[RandomStart]:
    """A seeded Gaussian start off the symmetric set."""
    return st.builds(RandomStart, st.floats(*scale), st.integers(0, 2 ** 32 - 1))


def _min_ratio(K: int, M: int, max_attention_factor: float) -> float:
    return 2 * (M + 1) * K / (max_attention_factor * (K - 1) * (K + M + 1))


@st.composite
def cases(draw: Any, params: Sequence[str] | None = None, *, K: tuple[int, int] = (2, 50),
          M: tuple[int, int] = (1, 50), ratio: tuple[float, float] = (0.01, 100.0),
          start: tuple[float, float] = (0.05, 1.0), max_attention_factor: float | None = None) -> Case:
    r"""A :class:`~qkov.testing.cases.Case` from the symmetric start ``u0 = v0``.

    ``params`` defaults to MODEL.md's four. With ``max_attention_factor`` :math:`a_{max}` the ratio is drawn
    log-uniform above the smallest ratio with :math:`a = 2(M+1)/R \le a_{max}` (and up to
    ``max(ratio[1], 2 r_min)``), so that the next-order expansion parameter :math:`(1 + a)/u` is below 1/3
    from ``t = 1e6`` on for :math:`a_{max} = 2`.
    """
    param = draw(st.sampled_from(tuple(params) if params is not None else parametrization_names()))
    k, m = draw(st.integers(*K)), draw(st.integers(*M))
    if max_attention_factor is None:
        r = draw(log_uniform(*ratio))
    else:
        r_min = max(ratio[0], _min_ratio(k, m, max_attention_factor))
        r = draw(log_uniform(r_min, max(ratio[1], 2 * r_min)))
    s = draw(st.floats(*start))
    return Case(param, k, m, r, s, s)


ADMISSIBLE = {"start": (1e-12, 3.0), "K": (2, 10_000), "M": (1, 99), "ratio": (1e-3, 1e3)}
"""The range an integrator's accuracy contract covers (:func:`admissible_cases`)."""


@st.composite
def admissible_cases(draw: Any, params: Sequence[str] | None = None, *, start: tuple[float, float] = (1e-12, 3.0),
                     K: tuple[int, int] = (2, 10_000), M: tuple[int, int] = (1, 99),
                     ratio: tuple[float, float] = (1e-3, 1e3)) -> Case:
    r"""A :class:`~qkov.testing.cases.Case` drawn over the whole admissible range (:data:`ADMISSIBLE`): ``u0`` and
    ``v0`` each log-uniform in ``start`` (small starts are the paper's regime), ``K`` log-uniform (an integer),
    ``M`` uniform, the ratio log-uniform."""
    param = draw(st.sampled_from(tuple(params) if params is not None else parametrization_names()))
    k = int(round(draw(log_uniform(*(float(x) for x in K)))))
    m = draw(st.integers(*M))
    r = draw(log_uniform(*ratio))
    u0, v0 = draw(log_uniform(*start)), draw(log_uniform(*start))
    return Case(param, max(k, K[0]), m, r, u0, v0)


def times(lo: float = 1e3, hi: float = 1e12) -> SearchStrategy[float]:
    """A time ``t``, log-uniform in ``[lo, hi]``."""
    return log_uniform(lo, hi)


def loss_levels(lo: float = 1e-12, hi: float = 1e-2) -> SearchStrategy[float]:
    """A loss level, log-uniform in ``[lo, hi]``."""
    return log_uniform(lo, hi)


def learning_rates(lo: float = 1e-3, hi: float = 0.1) -> SearchStrategy[float]:
    """An optimizer step size ``lr`` (``dt`` of :mod:`simulation.optimizer_maps`), log-uniform in ``[lo, hi]``."""
    return log_uniform(lo, hi)


def optimizer_specs(names: Sequence[str] = ("adam",), *, beta1: tuple[float, float] = (0.0, 0.99),
                    beta2: tuple[float, float] = (0.0, 0.9999), eps: tuple[float, float] = (1e-12, 1e-2),
                    weight_decay: tuple[float, float] = (0.0, 0.0)) -> SearchStrategy[Any]:
    """An :class:`simulation.optimizer_maps.OptimizerSpec` of one of ``names`` (:data:`simulation.optimizer_maps.OPTIMIZERS`)."""
    from simulation.optimizer_maps import OptimizerSpec

    return st.builds(OptimizerSpec, st.sampled_from(tuple(names)), st.floats(*beta1), st.floats(*beta2),
                     log_uniform(*eps), st.floats(*weight_decay))


__all__ = ["ADMISSIBLE", "REQUIREMENTS", "admissible_cases", "cases", "learning_rates", "log_uniform", "loss_levels", "optimizer_specs",
           "parametrization_names", "parametrizations", "random_starts", "rates", "ratios", "sizes",
           "symmetric_starts", "times"]
