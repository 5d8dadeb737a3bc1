"""Hypothesis strategies and shared helpers of the property tier.

A *case* is ``(param, K, M, ratio, scale)`` with ``K in [2, 50]``, ``M in [1, 50]``, ``ratio =
eta_QK/eta_OV`` log-uniform in ``[0.01, 100]`` (``eta_OV = 1``), start ``u0 = v0 = scale`` in
``[0.05, 1]``. :func:`asymptotic_cases` keeps the cases whose attention factor
:math:`a = 2(M+1)/R` (the constant the clock's leading law drops, :mod:`theory.asymptotics_next`) is at
most 2, so that the expansion parameter :math:`(1 + a)/u` is below 1/3 from ``t = 1e6`` on.
"""

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

PARAMS = ("CACO", "FACO", "CAFO", "FAFO")


@dataclass(frozen=True)
class Case:
    param: str
    K: int
    M: int
    ratio: float
    scale: float

    @property
    def R(self) -> float:
        """First-integral coefficient :math:`R = r (K-1)(K+M+1)/K`."""
        return self.ratio * (self.K - 1) * (self.K + self.M + 1) / self.K

    @property
    def a(self) -> float:
        """Attention factor :math:`2(M+1)/R` of the clock."""
        return 2 * (self.M + 1) / self.R

    def __str__(self) -> str:
        return f"param={self.param} K={self.K} M={self.M} ratio={self.ratio:.4g} scale={self.scale:.3g}"


def log_uniform(lo: float, hi: float):
    return st.floats(np.log10(lo), np.log10(hi)).map(lambda x: float(10 ** x))


@st.composite
def cases(draw, params=PARAMS):
    return Case(draw(st.sampled_from(params)), draw(st.integers(2, 50)), draw(st.integers(1, 50)),
                draw(log_uniform(0.01, 100.0)), draw(st.floats(0.05, 1.0)))


@st.composite
def asymptotic_cases(draw, params=PARAMS):
    """Cases with :math:`a \\le 2`: the ratio is drawn log-uniform above the smallest such ratio."""
    param, K, M = draw(st.sampled_from(params)), draw(st.integers(2, 50)), draw(st.integers(1, 50))
    r_min = max(0.01, 2 * (M + 1) * K / (2.0 * (K - 1) * (K + M + 1)))
    return Case(param, K, M, draw(log_uniform(r_min, max(100.0, 2 * r_min))), draw(st.floats(0.05, 1.0)))


def integrate_case(case: Case, t):
    from simulation.reduced import integrate

    return integrate(case.param, case.K, case.M, case.ratio, 1.0, case.scale, case.scale, np.asarray(t, float))
