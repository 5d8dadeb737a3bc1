r"""Assertions about the flow whose failure messages name every input, with tolerances from remainders.

Every message names the parametrization, ``K``, ``M``, the ratio :math:`\eta_{QK}/\eta_{OV}`, the start and
the time (or loss level) where the statement fails, the numbers on both sides, the bound and where it comes
from, and a line of Python that rebuilds the example (the :class:`~qkov.testing.cases.Case`'s ``repr``).

* :func:`assert_law_within_remainder` — a :class:`~qkov.testing.laws.Law` within its
  :class:`~qkov.testing.laws.Remainder` at every time of a trajectory;
* :func:`assert_first_integral_conserved` — :math:`H(u, v)` of :mod:`theory.first_integrals` constant along
  a trajectory, to the integrator's accumulated error;
* :func:`assert_on_symmetric_set` — a full-matrix run stays on the symmetric set;
* :func:`assert_sharper_at_matched_loss` — run ``a`` has a smaller :math:`1 - p` than run ``b`` where their
  losses reach each level;
* :func:`assert_matches_reduced_map` — torch's optimizer on the full matrices equals the exact reduced map
  (:mod:`simulation.optimizer_maps`) while it stays on the symmetric set.
"""

from __future__ import annotations

from typing import Callable, Sequence, Union

import numpy as np

from qkov.testing.cases import Case
from qkov.testing.helpers import CaseTrajectory, FullRun, OptimizerRun, first_integral_drift, matched_residuals
from qkov.testing.laws import Law, Remainder

RemainderLike = Union[Remainder, Callable[[Case, CaseTrajectory], np.ndarray], float, Sequence[float], np.ndarray]

INTEGRATION_STEPS = 1e4
"""Accepted steps of one reduced integration to ``t = 1e12`` are at most ~1e4 (:data:`simulation.reduced.MAX_STEPS`
caps them at 2e4), so a quantity computed from the state carries a relative error of at most ``rtol * 1e4``
(``rtol`` per step, accumulated linearly)."""

SYMMETRIC_SET_TOL = 1e-12
"""Distance from the symmetric set a run from the symmetric start may show: the gradient there is symmetric
exactly, so only rounding (~1e-16 relative per step) breaks it, over at most ~1e4 steps."""

MAP_RTOL = 1e-8
"""Relative agreement of torch's full-matrix optimizer and the reduced map: both compute the same float64
numbers in another order (~1e-14 per step); 1e-8 leaves room for rounding amplified over the steps, not for
another map (one step of GD instead of Adam moves ``u`` by ~1e-3 relative)."""

ON_SET = 1e-9
"""A full run is compared with the reduced map while its distance from the symmetric set is at most this."""


class InsufficientEvidence(AssertionError):
    """The statement could not be tested (a loss level neither run reaches, no step on the symmetric set)."""


def _replay(case: Case) -> str:
    return f"replay: {case!r}"


def _as_remainder(remainder: RemainderLike) -> Remainder:
    if isinstance(remainder, Remainder):
        return remainder
    if callable(remainder):
        return Remainder(getattr(remainder, "__name__", "remainder"), remainder)
    value = np.asarray(remainder, dtype=float)
    text = f"{float(value):.3g}" if value.ndim == 0 else np.array2string(value, precision=3)
    return Remainder(f"{text} (given)", lambda c, tr: value)


def assert_law_within_remainder(law: Law, trajectory: CaseTrajectory, remainder: RemainderLike) -> None:
    r"""Assert :math:`\text{error}(\text{law}, \text{solution}) \le \text{remainder}` at every time of ``trajectory``.

    Args:
        law: the law (its ``error`` says absolute or relative).
        trajectory: from :func:`qkov.testing.trajectory` (times ``(T,)``).
        remainder: a :class:`~qkov.testing.laws.Remainder`, a function ``(case, trajectory) -> (T,)``, or
            numbers (scalar or ``(T,)``) in the law's error measure.

    A NaN law, solution or bound fails (a law that says nothing is not within anything).
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's body
    rem = _as_remainder(remainder)
    case = trajectory.case
    pred, sol, err = law.errors(trajectory)
    bound = rem(case, trajectory)
    with np.errstate(invalid="ignore"):
        bad = ~(err <= bound)
    if not bad.any():
        return
    idx = np.flatnonzero(bad)
    i = int(idx[np.nanargmax(np.where(np.isfinite(err[idx]), err[idx] / np.maximum(bound[idx], 1e-300), np.inf))])
    raise AssertionError(
        f"law {law.name!r} ({law.observable}, {law.error} error) outside its remainder {rem.formula}\n"
        f"  at {case.describe()} t={trajectory.t[i]:.6g} (u={trajectory.u[i]:.6g}; {idx.size} of {err.size} "
        f"times fail, the worst shown)\n"
        f"  law={pred[i]:.10g} solution={sol[i]:.10g} error={err[i]:.3e} > remainder={bound[i]:.3e}\n"
        f"  {_replay(case)}, t={trajectory.t.tolist()!r}")


def assert_first_integral_conserved(trajectory: CaseTrajectory, tol: float | None = None) -> None:
    r"""Assert the first integral :math:`H = G_{QK}(v) - R\,G_{OV}(u)` keeps its first value along ``trajectory``:
    relative drift :math:`\le` ``tol`` (default the integrator's accumulated error,
    ``rtol *`` :data:`INTEGRATION_STEPS`) of :math:`\max(|G_{QK}|, |R\,G_{OV}|, 1)`."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's body
    tol = trajectory.rtol * INTEGRATION_STEPS if tol is None else tol
    drift = first_integral_drift(trajectory)
    if np.all(drift <= tol):
        return
    i = int(np.nanargmax(np.where(np.isfinite(drift), drift, np.inf)))
    case = trajectory.case
    raise AssertionError(
        f"first integral H(u, v) not conserved: relative drift {drift[i]:.3e} > {tol:.1e} "
        f"(rtol {trajectory.rtol:g} x {INTEGRATION_STEPS:g} steps)\n"
        f"  at {case.describe()} t={trajectory.t[i]:.6g} (u={trajectory.u[i]:.6g}, v={trajectory.v[i]:.6g})\n"
        f"  {_replay(case)}, t={trajectory.t.tolist()!r}")


def assert_on_symmetric_set(run: FullRun, tol: float = SYMMETRIC_SET_TOL) -> None:
    r"""Assert a full-matrix run stays on the symmetric set: :math:`\max(\text{asym}_{QK}, \text{asym}_{OV}) \le`
    ``tol`` at every recorded time (relative distances of :func:`simulation.full_matrix.symmetric_projection_distance`)."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's body
    dist = np.maximum(run.run.asym_qk, run.run.asym_ov)
    if np.all(dist <= tol):
        return
    i = int(np.argmax(~(dist <= tol)))
    c = run.case
    raise AssertionError(
        f"full-matrix run ({run.method}, dt={run.dt:g}) leaves the symmetric set: distance {dist[i]:.3e} > {tol:.1e}\n"
        f"  at param={c.param} K={c.K} M={c.M} ratio={c.ratio:.6g} start={run.start_text} t={run.run.t[i]:.6g} "
        f"(first time off the set)\n  {_replay(c)}, start={run.start!r}")


def assert_sharper_at_matched_loss(a: CaseTrajectory, b: CaseTrajectory,
                                   level: float | Sequence[float] | np.ndarray) -> None:
    r"""Assert run ``a`` is sharper than run ``b`` at matched loss: :math:`1 - p_a < 1 - p_b` where each run's
    loss first reaches each ``level`` (:func:`~qkov.testing.matched_residuals`; the runs need dense times).

    Raises :class:`InsufficientEvidence` (an ``AssertionError``) for a level a run does not reach.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's body
    levels = np.atleast_1d(np.asarray(level, dtype=float))
    res = matched_residuals([a, b], levels)
    names = f"a: {a.case.describe()}\n  b: {b.case.describe()}"
    missing = ~np.isfinite(res).all(axis=0)
    if missing.any():
        raise InsufficientEvidence(
            f"loss level {levels[missing][0]:.4g} not reached by both runs (a reaches down to {a.loss[-1]:.3g}, "
            f"b to {b.loss[-1]:.3g} by t={max(a.t[-1], b.t[-1]):.3g}): nothing to compare\n  {names}")
    bad = ~(res[0] < res[1])
    if not bad.any():
        return
    i = int(np.argmax(bad))
    raise AssertionError(
        f"a is not sharper than b at matched loss {levels[i]:.6g}: 1-p {res[0, i]:.6g} (a) >= {res[1, i]:.6g} (b) "
        f"({int(bad.sum())} of {levels.size} levels fail, the first shown)\n  {names}\n"
        f"  replay: a={a.case!r}, b={b.case!r}, levels={levels.tolist()!r}")


def assert_matches_reduced_map(run: OptimizerRun, *, rtol: float = MAP_RTOL, on_set: float = ON_SET,
                               min_steps: int = 1) -> None:
    r"""Assert torch's full-matrix optimizer run equals the exact reduced map of the same optimizer
    (:func:`simulation.optimizer_maps.run_orbit_map`): relative differences of ``u, v, 1 - p`` and the loss
    :math:`\le` ``rtol`` at every step before the run leaves the symmetric set (distance ``> on_set``).

    Fewer than ``min_steps`` steps on the set raises :class:`InsufficientEvidence`.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's body
    tor, red = run.torch, run.reduced_map()
    on = tor.distance <= on_set
    first_off = int(np.argmin(on)) if not on.all() else on.size
    c, spec = run.case, run.spec
    where = (f"{c.describe()} optimizer={spec.name} betas=({spec.beta1:g}, {spec.beta2:g}) eps={spec.eps:g} "
             f"weight_decay={spec.weight_decay:g} lr_ov={c.eta_ov * run.dt:g} lr_qk={c.eta_qk * run.dt:g}")
    if first_off < min_steps:
        raise InsufficientEvidence(f"torch's run leaves the symmetric set after {first_off} steps (< {min_steps}): "
                                   f"nothing to compare\n  at {where}")
    ref = {"u": tor.u, "v": tor.v, "residual": 1 - tor.p, "loss": tor.loss}
    for name, x in ref.items():
        y = getattr(red, name)
        err = np.abs(y[:first_off] - x[:first_off]) / np.abs(x[:first_off])
        if np.all(err <= rtol):
            continue
        i = int(np.nanargmax(np.where(np.isfinite(err), err, np.inf)))
        raise AssertionError(
            f"reduced map != torch's full matrices: {name} {y[i]:.12g} (map) vs {x[i]:.12g} (torch), relative "
            f"{err[i]:.3e} > {rtol:.1e}\n  at {where} step={int(tor.step[i])} t={tor.step[i] * run.dt:.6g}\n"
            f"  {_replay(c)}, spec={spec!r}, dt={run.dt!r}, steps={run.steps}")


__all__ = ["assert_law_within_remainder", "assert_first_integral_conserved", "assert_on_symmetric_set",
           "assert_sharper_at_matched_loss", "assert_matches_reduced_map", "InsufficientEvidence",
           "INTEGRATION_STEPS", "SYMMETRIC_SET_TOL", "MAP_RTOL", "ON_SET"]
