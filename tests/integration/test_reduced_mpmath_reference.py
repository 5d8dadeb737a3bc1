"""Reduced-flow integration against a high-precision reference: mpmath's Taylor-series ODE solver on theory's
rhs. Moved from tests/unit/simulation/test_reduced_integration.py (the 25-digit Taylor solve takes ~10 s)."""

import mpmath
import sympy as sp

from simulation.reduced import integrate
from theory.reduced import reduced_system
from theory.symbols import K as K_, M as M_, eta_ov, eta_qk


def test_reduced_matches_mpmath_taylor_reference():
    # High-precision reference: mpmath's Taylor-series ODE solver on theory's rhs (lambdified to mpmath).
    sysm = reduced_system("CACO")
    f = sp.lambdify((*sysm.state, K_, M_, eta_qk, eta_ov), list(sysm.rhs), modules="mpmath")
    ts = [1.0, 4.0, 12.0]
    tr = integrate("CACO", 5, 4, 3.0, 1.0, 0.2, 0.1, ts)
    with mpmath.workdps(25):  # the precision is restored after the block, whatever happens in it
        sol = mpmath.odefun(lambda t, y: f(y[0], y[1], 5, 4, 3.0, 1.0), 0, [mpmath.mpf("0.2"), mpmath.mpf("0.1")])
        ref = [sol(t) for t in ts]
    for i, (u, v) in enumerate(ref):
        assert abs(tr.u[i] - float(u)) < 1e-8 * max(1, abs(float(u)))
        assert abs(tr.v[i] - float(v)) < 1e-8 * max(1, abs(float(v)))
