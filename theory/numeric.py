r"""Numeric functions lambdified from the derived reduced systems: the one source of truth.

:func:`numeric_system` turns :func:`theory.reduced.reduced_system` into numpy callables that
broadcast over batches: a state ``y`` of shape ``(n_state,)`` or ``(n_state, B)`` and
parameters ``K, M, eta_qk, eta_ov`` that are scalars or arrays of shape ``(B,)``.
:mod:`simulation` integrates these; it never writes a right-hand side of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import log1p

from theory.reduced import balanced_initial_state, reduced_system
from theory.symbols import K, M, eta_ov, eta_qk, u0, v0


@dataclass(frozen=True)
class NumericSystem:
    r"""Vectorised numeric form of one parametrization's reduced flow.

    Attributes:
        param: ``"CACO" | "FACO" | "CAFO" | "FAFO"``.
        state_names: names of the reduced coordinates, in order.
        rhs: ``rhs(y, K, M, eta_qk, eta_ov) -> dy/dt`` with the shape of ``y``.
        jacobian: ``jacobian(y, K, M, eta_qk, eta_ov) -> (n_state, n_state, ...)``.
        observables: ``observables(y, K, M) -> dict`` with ``u, v, p, residual (= 1 - p), loss``.
        initial_state: ``initial_state(u0, v0, K) -> y0`` — MODEL.md's symmetric/balanced start.
    """

    param: str
    state_names: tuple[str, ...]
    rhs: Callable[..., np.ndarray]
    jacobian: Callable[..., np.ndarray]
    observables: Callable[..., dict[str, np.ndarray]]
    initial_state: Callable[..., np.ndarray]

    @property
    def dimension(self) -> int:
        return len(self.state_names)


def _stack(fn: Callable, n: int) -> Callable[..., np.ndarray]:
    def call(y, *params):
        y = np.asarray(y, dtype=float)
        out = fn(*y, *params)
        shape = y.shape[1:]
        return np.stack([np.broadcast_to(np.asarray(o, dtype=float), shape) for o in out])
    return call


@lru_cache(maxsize=None)
def numeric_system(param: str) -> NumericSystem:
    """Lambdify the reduced system of ``param`` (cached)."""
    sysm = reduced_system(param)
    args = (*sysm.state, K, M, eta_qk, eta_ov)
    rhs_fn = sp.lambdify(args, list(sysm.rhs), modules="numpy", cse=True)
    jac = sp.Matrix(sysm.rhs).jacobian(sp.Matrix(sysm.state))
    jac_fn = sp.lambdify(args, [list(row) for row in jac.tolist()], modules="numpy", cse=True)
    n = sysm.dimension

    def jacobian(y, *params):
        y = np.asarray(y, dtype=float)
        rows = jac_fn(*y, *params)
        shape = y.shape[1:]
        return np.array([[np.broadcast_to(np.asarray(e, dtype=float), shape) for e in row] for row in rows])

    residual = sp.simplify(1 - sysm.p_expr)
    loss = log1p((K - 1) * sp.exp(-sysm.p_expr * sysm.u_expr))
    obs_exprs = [sysm.u_expr, sysm.v_expr, sysm.p_expr, residual, loss]
    obs_fn = sp.lambdify((*sysm.state, K, M), obs_exprs, modules="numpy", cse=True)

    def observables(y, K_, M_):
        y = np.asarray(y, dtype=float)
        vals = obs_fn(*y, K_, M_)
        shape = y.shape[1:]
        return {name: np.broadcast_to(np.asarray(val, dtype=float), shape).copy()
                for name, val in zip(("u", "v", "p", "residual", "loss"), vals)}

    init = balanced_initial_state(param)
    init_fn = sp.lambdify((u0, v0, K), [init[s] for s in sysm.state], modules="numpy")

    def initial_state(u0_, v0_, K_):
        if param[2] == "F" and np.any(np.asarray(u0_) <= 0):
            raise ValueError(f"{param}: a factorized OV circuit started at u0 = 0 is a fixed point of the flow "
                             "(it never moves); give u0 > 0")
        if param[0] == "F" and np.any(np.asarray(v0_) <= 0):
            raise ValueError(f"{param}: a factorized QK circuit started at v0 = 0 is a fixed point of the flow "
                             "(it never moves); give v0 > 0")
        vals = init_fn(u0_, v0_, K_)
        shape = np.broadcast(np.asarray(u0_), np.asarray(v0_), np.asarray(K_)).shape
        return np.stack([np.broadcast_to(np.asarray(x, dtype=float), shape) for x in vals])

    return NumericSystem(param, tuple(s.name for s in sysm.state), _stack(rhs_fn, n), jacobian,
                         observables, initial_state)
