r"""The theory side of the comparison: the reduced ODE solution on the training clock, and its tolerances.

:func:`reference_trajectory` calls :func:`simulation.reduced.integrate` (the reduced gradient flow
lambdified from :mod:`theory`); it returns ``None`` when that layer is not installed, and the run
then records the comparison as unavailable instead of failing.

Tolerance. Full-batch GD with rates :math:`\eta\,dt` is the explicit Euler scheme of the flow, so its
deviation from the ODE is :math:`O(dt)`; measured over :math:`t \in [0, 200]` from
``u0 = v0 = 0.5`` (``K = 4``, ``M = 8``) the largest relative deviation of ``u``, ``v`` and ``1 - p``
stays below :math:`0.5\,\eta_{OV}\,dt\,\max(1, \eta_{QK}/\eta_{OV})` for all four parametrizations
(the attention residual ``1 - p`` of FACO/FAFO at ratio 10 is the tightest case). That bound is
:func:`ode_tolerance`, asserted by the tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from theory.parametrization import Parametrization

ODE_TOLERANCE_CONSTANT = 0.5
"""``C`` in the tolerance :math:`C\\,\\eta_{OV}\\,dt\\,\\max(1, \\text{ratio})` of u, v and 1 - p."""


def ode_tolerance(dt: float, eta_ov: float, ratio: float) -> float:
    r"""Allowed max relative deviation of ``u, v, 1-p`` from the ODE: :math:`C\,\eta_{OV}\,dt\,\max(1, \text{ratio})`."""
    return ODE_TOLERANCE_CONSTANT * eta_ov * dt * max(1.0, ratio)


def reference_trajectory(param: Parametrization, K: int, M: int, eta_qk: float, eta_ov: float, u0: float, v0: float,
                         t_eval: np.ndarray) -> Any | None:
    """The reduced ODE solution at ``t_eval`` (fields ``t, u, v, p, loss``), or None without :mod:`simulation.reduced`."""
    try:
        from simulation.reduced import integrate
    except ModuleNotFoundError as exc:
        if exc.name in ("simulation.reduced", "theory.derive"):
            return None
        raise
    except ImportError:
        return None
    return integrate(param, K, M, eta_qk, eta_ov, u0, v0, np.asarray(t_eval, dtype=np.float64))
