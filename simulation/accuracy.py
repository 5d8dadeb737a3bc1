r"""How qkov measures the accuracy of a trajectory: relative error per coordinate, against an independent reference.

One metric for the tests, the property tests and the benchmark (:func:`relative_error`): for every coordinate of
every state, :math:`|y_i - y^{ref}_i| / |y^{ref}_i|` (0 where both are 0). No floor: a coordinate of size 1e-12 is
held to the same relative tolerance as one of size 1 (the old ``|dy| / max(1, |y|)`` was absolute below 1, blind to
errors in small starts, the paper's regime).

The reference (:func:`reference_states`): :func:`scipy.integrate.solve_ivp`'s Radau (implicit, order 5, with the
generated Jacobian) at ``rtol`` 1e-13 on the same log-time system :math:`dy/d\tau = e^\tau f(y)`, with a
per-coordinate ``atol`` of ``1e-3 rtol`` times the coordinate's own start (a coordinate that starts at 0 gets
1e-20 of the largest), so its error control is relative in every coordinate. It knows nothing of the first
integral. DOP853 at the same ``rtol`` is not a reference at this level: its global error reached 1.5e-12 on CACO
to t = 7.5e11 (start 7.7e-7, 2.6e-9; Radau and the clock-free path agree to 4e-15 there).
"""

from __future__ import annotations

import numpy as np

REFERENCE_RTOL = 1e-13


def relative_error(y, ref) -> np.ndarray:
    r"""Per coordinate :math:`|y - y^{ref}| / |y^{ref}|` (same shapes; 0 where both are 0, ``inf`` where only the
    reference is 0 or either is not finite)."""
    y, ref = np.asarray(y, dtype=float), np.asarray(ref, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(y - ref) / np.abs(ref)
    err = np.where(y == ref, 0.0, err)
    return np.where(np.isfinite(err), err, np.inf)


def max_relative_error(y, ref, axis=None) -> np.ndarray:
    """The largest :func:`relative_error` over ``axis`` (all axes by default)."""
    return np.max(relative_error(y, ref), axis=axis)


def reference_atol(y0, rtol: float = REFERENCE_RTOL) -> np.ndarray:
    """Per coordinate ``(n,)``: ``1e-3 rtol`` times the coordinate's start, or 1e-20 of the largest where it starts at
    0 (so the error control is relative in every coordinate)."""
    y0 = np.abs(np.asarray(y0, dtype=float))
    return 1e-3 * rtol * np.maximum(y0, 1e-20 * float(np.max(y0)))


def reference_states(param, y0, K, M, eta_qk, eta_ov, t_eval, *, rtol: float = REFERENCE_RTOL) -> np.ndarray:
    """States ``(n, T)`` of one trajectory from ``y0 (n,)`` at ``t_eval (T,)`` by Radau (module docstring).

    Raises ``RuntimeError`` when scipy fails (a reference that did not reach its time is no reference)."""
    from simulation.reduced import reference_states as scipy_reference

    y0 = np.asarray(y0, dtype=float)
    return scipy_reference(param, y0, K, M, eta_qk, eta_ov, np.asarray(t_eval, dtype=float), rtol=rtol,
                           atol=reference_atol(y0, rtol), method="Radau")


__all__ = ["relative_error", "max_relative_error", "reference_atol", "reference_states", "REFERENCE_RTOL"]
