r"""The derived reduced flows as vectorised numpy functions, from the generated module.

:func:`numeric_system` wraps ``simulation/generated.py`` (written by :mod:`theory.codegen` from
:func:`theory.reduced.reduced_system`; no sympy at run time) into callables that broadcast over
batches: a state ``y`` of shape ``(n_state,)`` or ``(n_state, B)`` and parameters
``K, M, eta_qk, eta_ov`` that are scalars or arrays of shape ``(B,)``.
:mod:`simulation` integrates these; it never writes a right-hand side of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, cast

import numpy as np

from simulation import generated
from theory.parametrization import Parametrization


@dataclass(frozen=True)
class NumericSystem:
    r"""Vectorised numeric form of one parametrization's reduced flow.

    Attributes:
        param: a registered parametrization (:func:`theory.parametrization.registered`).
        state_names: names of the reduced coordinates, in order.
        rhs: ``rhs(y, K, M, eta_qk, eta_ov) -> dy/dt`` with the shape of ``y``.
        jacobian: ``jacobian(y, K, M, eta_qk, eta_ov) -> (n_state, n_state, ...)``.
        observables: ``observables(y, K, M) -> dict`` with ``u, v, p, residual (= 1 - p), loss``.
        initial_state: ``initial_state(u0, v0, K) -> y0`` — MODEL.md's symmetric/balanced start.
        generated_rhs: the generated ``f(*y, K, M, eta_qk, eta_ov) -> tuple`` behind ``rhs`` (no broadcasting).
    """

    param: str
    state_names: tuple[str, ...]
    rhs: Callable[..., np.ndarray]
    jacobian: Callable[..., np.ndarray]
    observables: Callable[..., dict[str, np.ndarray]]
    initial_state: Callable[..., np.ndarray]
    generated_rhs: Callable[..., tuple] | None = None

    @property
    def dimension(self) -> int:
        return len(self.state_names)


def _stacked(values, shape) -> np.ndarray:
    """A generated tuple (arrays of ``shape`` or constants) as one ``(len(values),) + shape`` array, written in place."""
    values = tuple(values)
    out = np.empty((len(values),) + tuple(shape))
    for i, o in enumerate(values):
        out[i] = o
    return out


@lru_cache(maxsize=None)
def numeric_system(param: Parametrization) -> NumericSystem:
    """The generated reduced system of ``param`` (cached)."""
    p = Parametrization(param)
    n = len(generated.STATE_NAMES[p])
    rhs_fn, jac_fn = generated.RHS[p], generated.JAC[p]
    obs_fn, init_fn = generated.OBSERVABLES[p], generated.INITIAL[p]

    def rhs(y, *params):
        y = np.asarray(y, dtype=float)
        return _stacked(rhs_fn(*y, *params), y.shape[1:])

    def jacobian(y, *params):
        y = np.asarray(y, dtype=float)
        flat = _stacked(jac_fn(*y, *params), y.shape[1:])
        return flat.reshape((n, n) + y.shape[1:])

    def observables(y, K_, M_):
        y = np.asarray(y, dtype=float)
        shape = y.shape[1:]
        return {name: np.broadcast_to(np.asarray(val, dtype=float), shape).copy()
                for name, val in zip(("u", "v", "p", "residual", "loss"), obs_fn(*y, K_, M_), strict=False)}

    def initial_state(u0_, v0_, K_):
        for circuit, value, name in ((p.ov, u0_, "u0"), (p.qk, v0_, "v0")):
            if circuit.kind.zero_is_fixed_point and np.any(np.asarray(value) <= 0):
                raise ValueError(f"{p}: a {circuit.kind.name} {circuit.name} circuit started at {name} = 0 is a fixed "
                                 f"point of the flow (it never moves); give {name} > 0")
        shape = np.broadcast(np.asarray(u0_), np.asarray(v0_), np.asarray(K_)).shape
        with np.errstate(invalid="ignore"):
            return _stacked(init_fn(u0_, v0_, K_), shape)

    return NumericSystem(str(p), tuple(generated.STATE_NAMES[p]), rhs, jacobian, observables, initial_state,
                         cast(Callable[..., tuple], rhs_fn))


__all__ = ["NumericSystem", "numeric_system"]
