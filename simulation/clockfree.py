r"""Clock-free integration of the reduced flows that have a first integral, with a per-trajectory error estimate.

Along every trajectory :math:`H(u, v) = G_{QK}(v) - R\,G_{OV}(u)` is constant (:mod:`theory.first_integrals`,
generated into :data:`simulation.generated.FIRST_INTEGRALS`), and ``u`` increases strictly (:math:`\dot u > 0`).
The 2-D flow then collapses to one quadrature along the level curve, walked in a monotone coordinate
``s = s_0 + h``:

* **collapsed QK** (CACO, CAFO): ``s = u`` (CAFO: :math:`\log u`, whose integrand has no pole at ``u = 0``;
  :class:`_Graded`). The increment of :math:`G_{QK}` equals ``R`` times the increment of
  :math:`G_{OV}`, both closed form in the offset ``h`` (no cancellation against :math:`H_0`), so
  :math:`\Delta v` solves :math:`e^{v_0}\,\mathrm{expm1}(\Delta v) + (M+1)\Delta v = R\,\Delta G_{OV}(u_0, h)` and
  :math:`t(h) = \int_0^h dx/\dot u`;
* **factorized QK** (FACO, FAFO): :math:`G_{QK}(v) = \int (e^x + M + 1)/\rho_{QK}(x)\,dx` has no closed-form
  inverse, but :math:`G_{OV}` has one (both OV kinds), and with :math:`v = \alpha\sinh w`,
  :math:`\rho_{QK} = |A_{QK}|\cosh w` the integrand becomes entire in ``w``. So ``s = w``, and the quadrature carries
  :math:`Y = R\,G_{OV}(u)` (from :math:`Y_0` plus its increments, summed spectrally from each panel's nodes),
  :math:`u = G_{OV}^{-1}(Y/R)`, ``(a, b, c)`` from their start plus closed-form increments in ``h``. The integrand
  :math:`dt/dw` is the reciprocal of the generated walk rate :math:`dw/dt(u, v)` (:mod:`theory.walk_rate`,
  :data:`simulation.generated.WALK_RATE`: the :math:`\cosh w` of :math:`\dot v` and of :math:`dv/dw` cancel), so the
  nodes need neither the lifts nor the full right-hand side.

Every coordinate is its start plus an increment computed from the offset ``h`` itself (never as a difference of two
large numbers), so it keeps its relative accuracy where it is tiny (starts down to 1e-12) or moves by a tiny
fraction of itself (early times).

* **Quadrature**: Gauss-Legendre with :data:`NODES` nodes on panels of ``h``; a panel's width is a number of local
  scales of the integrand (the OV kind's ``panel_u``/``panel_w``), :math:`|d\log g/ds|^{-1}` with :math:`g = 1/\dot s`,
  at most :data:`PANEL_MAX` (``u``) or :data:`PANEL_MAX_W` (``w``), shortened where ``v`` would move by more than
  :data:`PANEL_V`. **Error control**: a panel is accepted when the Legendre coefficients of ``g`` at its nodes have
  decayed far enough (:func:`_panel_error` <= :data:`PANEL_TOL`, relative to the panel's time); otherwise it is
  shortened (:data:`SHRINK`) and redone in the next round, together with the other trajectories' next panels (one
  quadrature call per round, not one per rejection). Panels advance for all trajectories at once until each has
  passed its last requested time.
* **Root**: inside the panel that holds :math:`t_j`, a bracketed Newton iteration on :math:`\log t` in the offset
  within the panel, each iterate's :math:`t` by the same Gauss-Legendre rule from the panel's start.
* **Error estimate** (:attr:`ClockFreeSolution.error`): per trajectory, the accepted panels' estimated errors summed
  up to each requested time (a relative error of ``t``), times the largest :math:`|t\,\dot y_i/y_i|` there (how a
  relative error in time moves each coordinate), plus :data:`ROUNDING`; the maximum over requested times.

All of it is vectorised in numpy over trajectories (and requested times); the only Python loops run over panels,
rejected panels and Newton iterations.

Which systems: :data:`OV_KINDS` and :data:`QK_KINDS` hold, per circuit kind, how the kind's reduced coordinates
follow from the walk and the conserved constants, and how the level curve is walked. A parametrization is integrated
clock-free when it has a first integral and both its kinds have an entry (:func:`clock_free_capable`): CACO, CAFO,
FACO, FAFO. The parametrizations without a first integral (tied and scaled kinds) stay on the batch integrator
(:mod:`simulation.batch`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, cast

import numpy as np

from simulation import generated
from theory.parametrization import Parametrization

NODES = 30
"""Gauss-Legendre nodes per panel (exact for polynomials of degree 59). 20 before, with every panel width below
half of now: on the admissible benchmark problem 30 nodes on twice the width took 35-40% fewer panels (FACO 25.3 ->
16.5 per trajectory, CACO 7.5 -> 4.6, FAFO 19.0 -> 13.3, CAFO 11.1 -> 7.0; 64 starts at ``t = 1e12``) for the same
node evaluations, the same p99 relative error against Radau (its own drift: 9.9e-14, 1.4e-13, 3.0e-13, 2.2e-13
before and after), and 15-30% less time at 1 and 10 trajectories, where a round of the panel loop costs its number
of numpy calls, not its nodes."""
PANEL = 16.0
"""Panel width in units of the integrand's local scale :math:`|d\\log g/du|^{-1}` (the default of an OV kind's
``panel_u``)."""
PANEL_MAX = 32.0
"""Largest panel width in ``u`` (late, :math:`g \\approx e^{pu}` with :math:`p \\to 1`), or :data:`U_GROWTH` times
``u`` where that is larger."""
PANEL_MAX_W = 4.5
"""Largest panel width in ``w`` (factorized QK): the carried :math:`Y` is integrated spectrally from the panel's
nodes, and its integrand holds :math:`e^{\\alpha\\sinh w}`."""
PANEL_V = 3.0
"""Largest change of ``v`` over a panel: the integrand depends on ``v`` through :math:`p(v)`, which changes by
:math:`O(1)` per unit of ``v`` (a logistic in ``v``: its poles lie :math:`\\pi` off the real axis, so 30 nodes over three
units of ``v`` resolve it); with a large rate ratio ``v`` can run a unit in a tiny range of ``u``, which the local
scale at a panel's start does not foresee (the error control rejects what it misses). 1.0 before: on the admissible
benchmark problem 2.0 cut the panels per trajectory by 15-40% (CACO 12.2 -> 7.5, FACO 32 -> 27) and left the
relative error against Radau as it was (64 FAFO starts at ``t = 1e12``: p99 3.0e-13 before and after, the largest
6.7e-13 both times: Radau's own, it drifts the conserved :math:`A_{QK}` by 1.8e-9 relative there); 3.0 with the 30
nodes of :data:`NODES` (the widths of that change)."""
PANEL_TOL = 2e-12
"""Largest estimated relative quadrature error of an accepted panel (:func:`_panel_error`)."""
ROUNDING = 5e-14
"""Rounding floor of the error estimate: the closed forms and lifts evaluated in float64 (a few ulp each), the
conserved constants from the start's coordinates (:math:`A_{QK}` loses up to two digits to cancellation)."""
TOLERANCE = 1e-11
"""The clock-free path's contract: a trajectory whose error estimate exceeds this (or the caller's ``rtol``, if
larger) is handed to DOP853 by the router (:func:`simulation.reduced.clock_free_states`), which says so."""
MAX_PANELS = 5_000
MAX_HALVINGS = 40
"""Rejections of one panel after which it is accepted as it is (its estimate then enters the trajectory's error, and
the router hands the trajectory to DOP853); the panel loop runs at most ``2 MAX_PANELS`` rounds."""
CHUNK = 1024
"""Largest batch integrated at once (each trajectory's panels are its own, so chunks change nothing): the
``(nodes x batch)`` temporaries stay in cache."""
NEWTON_STEPS = 40
SHRINK = (0.25, 0.9, 8.0)
r"""A rejected panel is shortened by :math:`0.9\,(\text{PANEL\_TOL}/e)^{1/8}`, clipped to ``[0.25, 0.9]`` (``e`` its
estimate; halving before): near a singularity the estimate falls by far more than the 8th power of the width, so one
shortening nearly always suffices, and a panel just over the tolerance (the graded panels next to the pole or branch
point of a start near ``u = 0`` came out at 1.04 times it, every one, at 6 local scales) loses 10%, not half.
The factor is remembered per trajectory (the next panels are proposed that much shorter) and relaxed by
:data:`FIT_GROW` after each panel whose estimate is below 1% of :data:`PANEL_TOL`: on the admissible benchmark problem
(``benchmarks/bench_integrators.py``, 10,000 starts) this cut the rejected panels of FAFO from 7.6 to 1.2 per
trajectory and of CAFO from 6.2 to 0.8 (at ``PANEL_V = 1``; 1.9 and 1.0 at the :data:`PANEL_V` of now, which takes
fewer, wider panels; all at 20 nodes)."""
FIT_GROW = 1.25
LOG_MAX = 12.0
"""Widest panel of a walk in the logarithm of ``u`` (:class:`_Graded`), in units of its natural log: a factor of
:math:`e^{12}` in ``u`` (CAFO's panels per trajectory on the admissible benchmark problem, at 20 nodes: 12.3
quadratures at 8, 14.0 at 4; 12 with the 30 nodes of :data:`NODES`; the error control shortens what is too wide)."""
FIT_RELAX = 1e-2
U_GROWTH = 1.0
r"""A panel may move ``u`` by at most ``max(PANEL_MAX, U_GROWTH u)``, ``u`` at its start (both walks): the integrand's
singularities in ``u`` nearest the real axis are at ``u = 0`` (a pole of :math:`1/u` for factorized OV, a branch
point for collapsed OV), so a panel that at most doubles ``u`` stays as far from them, relative to its width, as one of
width ``u`` next to them; a factorized-OV ``u`` runs to ~1e3 at ``t = 1e12`` with a small QK rate ratio, which the
fixed cap of 16 (at 20 nodes; 32 now) walked in up to 170 panels."""


def _shrink(err: np.ndarray) -> np.ndarray:
    """The factor a rejected panel's width is multiplied by (:data:`SHRINK`), from its error estimate ``err``."""
    lo, hi, power = SHRINK
    with np.errstate(all="ignore"):
        f = hi * (PANEL_TOL / err) ** (1 / power)
    return np.where(np.isfinite(f), np.clip(f, lo, hi), lo)
_STEP = 1e-150                     # complex step (no cancellation: any step far below the scales works; 1e-30
                                   # overflowed where the walk's own scale is 1e-37: FACO at u0 = v0 = 100)


@dataclass(frozen=True)
class OvKind:
    r"""How one OV circuit kind's reduced coordinates follow from ``u`` and its conserved constant :math:`\delta`.

    ``lift(u, delta, sign) -> coords``; ``u_rate(coords, rates) -> du/dt`` (the chain rule of ``u`` in the
    coordinates); ``sign(coords)``: the orientation the lift keeps; ``applies(coords)``: starts on which ``u`` is a
    valid clock (increasing from the start, lift single-valued). ``g_ov(u, delta)``: the kind's
    :math:`G_{OV}(u) = \int_0^u y/\rho_{OV}(y)\,dy` (without ``R``; a test holds ``R g_ov`` to the generated
    ``r_g_ov``), ``u_of_g(G, delta)`` its inverse on ``u > 0`` and ``dg_ov(u0, h, delta)`` its increment
    :math:`G_{OV}(u_0 + h) - G_{OV}(u_0)` in a form without cancellation (all closed form for both kinds).
    ``panel_u``, ``panel_w``: quadrature panel widths in local scales when the curve is walked in ``u`` or in ``w``
    (the nearest singularity of the integrand differs by kind: a pole of :math:`1/u` at ``u = 0`` for factorized OV
    in ``u``, a square-root branch point at :math:`Y = 0` for collapsed OV in ``w``, :math:`u = \sqrt{2Y/R}`); a
    panel the error control rejects is shortened (:data:`SHRINK`).
    """

    size: int
    lift: Callable[..., tuple]
    u_rate: Callable[[tuple, tuple], np.ndarray]
    sign: Callable[[tuple], np.ndarray]
    applies: Callable[[tuple], np.ndarray]
    g_ov: Callable[[Any, Any], Any]
    u_of_g: Callable[[Any, Any], Any]
    dg_ov: Callable[[Any, Any, Any], Any]
    panel_u: float
    panel_w: float
    graded_u: bool = False


@dataclass(frozen=True)
class QkKind:
    r"""How one QK circuit kind's reduced coordinates follow from its walk coordinate and its conserved constants.

    ``constants(coords, K, M, A) -> tuple``: what the lift needs besides :math:`A_{QK}` (conserved along the flow,
    and the start's own coordinates, from which the lift adds increments); ``v_rate(coords, rates) -> dv/dt``;
    ``applies(coords, A)``: starts the lift and the clock hold on. Then either

    * ``dv_of_dg(v0, D, M, settle) -> dv``: the increment of ``v`` whose increment of :math:`G_{QK}` is ``D``
      (collapsed: closed form), ``dg_qk(v0, dv, M)`` its inverse; the curve is walked in ``u`` and
      ``lift(v) -> coords``;
    * or ``scale(K, M, A) -> alpha``: :math:`\rho_{QK}(v) = |A|\cosh w` for :math:`v = \alpha\sinh w` (factorized);
      the curve is walked in ``w`` (``u(w)`` from the inverse of :math:`G_{OV}`, :math:`R\,G_{OV}` carried along),
      ``lift_dw(w0, h, A, consts, K, M) -> coords`` at :math:`w = w_0 + h` and ``dg_dw(v, consts, K, M)`` =
      :math:`dG_{QK}/dw` (a test holds it to the generated integrands of :math:`G_{QK}`).
    """

    size: int
    constants: Callable[..., tuple]
    v_rate: Callable[[tuple, tuple], Any]
    applies: Callable[[tuple, Any], np.ndarray]
    dv_of_dg: Callable[..., np.ndarray] | None = None
    dg_qk: Callable[..., Any] | None = None
    lift: Callable[[Any], tuple] | None = None
    scale: Callable[..., Any] | None = None
    lift_dw: Callable[..., tuple] | None = None
    dg_dw: Callable[..., Any] | None = None


def _factorized_lift(u, delta, sign):
    r""":math:`s_O^2 - s_V^2 = \delta`, :math:`s_O s_V = u`: the larger square is :math:`(\rho + |\delta|)/2`,
    :math:`\rho = \sqrt{\delta^2 + 4u^2}`, the smaller :math:`u^2` over it (no cancellation for either sign of
    :math:`\delta`); :math:`s_O^2` is the larger for :math:`\delta \ge 0`."""
    big = (np.sqrt(delta * delta + 4 * u * u) + np.abs(delta)) / 2
    s_O = sign * np.sqrt(np.where(delta >= 0, big, u * u / big))
    return s_O, u / s_O


def _factorized_g_ov(u, delta):
    r""":math:`\int_0^u y/\sqrt{\delta^2 + 4y^2}\,dy = (\sqrt{\delta^2 + 4u^2} - |\delta|)/4
    = u^2/(\sqrt{\delta^2 + 4u^2} + |\delta|)` (the second form: no cancellation for :math:`u \ll |\delta|`)."""
    return u * u / (np.sqrt(delta * delta + 4 * u * u) + np.abs(delta))


def _factorized_u_of_g(G, delta):
    r"""The inverse of :func:`_factorized_g_ov` on ``u > 0``: :math:`u = \tfrac12\sqrt{4G\,(4G + 2|\delta|)}`
    (no cancellation)."""
    return np.sqrt(4 * G * (4 * G + 2 * np.abs(delta))) / 2


def _factorized_dg_ov(u0, h, delta):
    r""":math:`G_{OV}(u_0 + h) - G_{OV}(u_0) = (\rho - \rho_0)/4 = h\,(u + u_0)/(\rho + \rho_0)`,
    :math:`\rho = \sqrt{\delta^2 + 4u^2}`: exact in ``h`` (no difference of the two values)."""
    u = u0 + h
    return h * (u + u0) / (np.sqrt(delta * delta + 4 * u * u) + np.sqrt(delta * delta + 4 * u0 * u0))


def _collapsed_dg_ov(u0, h, delta):
    r""":math:`(u_0 + h)^2/2 - u_0^2/2 = h\,(u_0 + h/2)`."""
    return h * (u0 + h / 2)


def _kappa(K, M):
    r""":math:`\kappa = K(M+1)/(K+M+1)`: factorized QK's :math:`\rho_{QK}(v) = \sqrt{A^2 + 4\kappa v^2}`."""
    return K * (M + 1) / (K + M + 1)


def _factorized_qk_constants(c, K, M, A):
    r"""Factorized QK ``(a, b, c)``: the sign of ``a``, the lift's scales :math:`\sqrt{A}`, :math:`\sqrt{A/\kappa}`,
    :math:`1/(2\sqrt\kappa)`, and the start ``(a_0, b_0, c_0)`` the increments are added to."""
    sk = np.sqrt(_kappa(K, M))
    rA = np.sqrt(np.maximum(A, 0.0))
    return np.sign(c[0]), rA, rA / sk, 1 / (2 * sk), c[0], c[1], c[2]


def _factorized_qk_lift_dw(w0, h, A, consts, K, M):
    r"""Factorized QK ``(a, b, c)`` at :math:`w = w_0 + h`, :math:`v = \alpha\sinh w`: with :math:`d = b - c`,
    :math:`v = ad` and :math:`A = a^2 - \kappa d^2` (theory's :math:`A_{QK}` with the conserved
    :math:`L = Kb + (M+1)c` substituted), :math:`a = \sqrt{A}\cosh(w/2)`, :math:`d = \sqrt{A/\kappa}\sinh(w/2)`.
    Added to the start as increments, :math:`\Delta a = 2\sqrt{A}\sinh(w_0/2 + h/4)\sinh(h/4)`,
    :math:`\Delta d = 2\sqrt{A/\kappa}\cosh(w_0/2 + h/4)\sinh(h/4)`, :math:`\Delta b = (M+1)\Delta d/(K+M+1)`,
    :math:`\Delta c = -K\Delta d/(K+M+1)` (``L`` unchanged): a coordinate that starts at 0 (``c``) or barely moves
    keeps its relative accuracy."""
    sign, rA, rAk, _, a0, b0, c0 = consts
    q = np.sinh(h / 4)
    m = w0 / 2 + h / 4
    da = sign * rA * 2 * np.sinh(m) * q
    dd = sign * rAk * 2 * np.cosh(m) * q
    n = K + M + 1
    return a0 + da, b0 + (M + 1) * dd / n, c0 - K * dd / n


def _factorized_qk_dg_dw(v, consts, K, M):
    r""":math:`dG_{QK}/dw = \frac{e^v + M + 1}{\rho_{QK}(v)}\frac{dv}{dw} = \frac{e^v + M + 1}{2\sqrt\kappa}`
    (:math:`dv/dw = \alpha\cosh w`, :math:`\rho_{QK} = |A|\cosh w`)."""
    return (np.exp(v) + M + 1) * consts[3]


def _factorized_qk_scale(K, M, A):
    r""":math:`\alpha = |A|/(2\sqrt\kappa)`: with :math:`v = \alpha\sinh w`, :math:`\rho_{QK} = |A|\cosh w`."""
    return np.abs(A) / (2 * np.sqrt(_kappa(K, M)))


def _collapsed_dg_qk(v0, dv, M):
    r""":math:`G_{QK}(v_0 + \Delta v) - G_{QK}(v_0) = e^{v_0}\,\mathrm{expm1}(\Delta v) + (M+1)\Delta v` for
    :math:`G_{QK}(v) = e^v + (M+1)v - 1`."""
    return np.exp(v0) * np.expm1(dv) + (M + 1) * dv


def _collapsed_dv_of_dg(v0, D, M, settle: bool = True):
    r"""The increment :math:`x = \Delta v` with :math:`f(x) = E\,\mathrm{expm1}(x) + c\,x - D = 0`, :math:`E = e^{v_0}`,
    :math:`c = M + 1` (the increment form of the Lambert-W closed form of
    :func:`theory.first_integrals.v_of_u_collapsed_qk`), by Halley's method.

    ``f`` is convex and increasing, and :math:`x_0 = D/(E + c)` (for ``D >= 0`` also :math:`\log(1 + D/E)`, the
    smaller) lies at or above the root (:math:`\mathrm{expm1}(x) \ge x`), so the iteration converges from it; the
    result has the relative accuracy of ``D`` however small it is. For complex ``D`` (a complex step) the real root is
    corrected by one Newton step, exact to first order in the imaginary part. From this start 3 iterations leave at
    most 5e-16 relative (measured on 200,000 draws of ``D`` in 1e-300..1e40, :math:`v_0` in 1e-12..50, ``c`` in
    2..101; the second leaves 9e-7); ``settle`` adds a fourth. Inside the quadrature (``settle=False``) only
    :math:`e^v` enters the integrand, so :math:`\mathrm{expm1}(x)` is taken as :math:`e^x - 1` there (three times
    cheaper; absolute accuracy in ``v``); the returned coordinates use ``expm1``.
    """
    c = M + 1.0
    if np.iscomplexobj(D):
        x = _collapsed_dv_of_dg(v0, np.real(D), M, settle)
        E = np.exp(v0)
        return x - (E * np.expm1(x) + c * x - D) / (E * np.exp(x) + c)
    E = np.exp(v0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = D / (E + c)
        x = np.where(D > 0, np.minimum(x, np.log1p(D / E)), x)
    for _ in range(4 if settle else 3):
        ex = np.exp(x)
        if settle:                                     # the coordinate itself: relative accuracy of a tiny dv
            em = np.expm1(x)
        else:                                          # inside the quadrature only e^v matters: absolute is enough
            em = ex - 1.0
        f = E * em + c * x - D
        d1 = E * ex + c
        x = x - f / (d1 - f * (d1 - c) / (2 * d1))
    return x


OV_KINDS: dict[str, OvKind] = {
    "collapsed": OvKind(1, lambda u, delta, sign: (u,), lambda c, r: r[0],
                        lambda c: np.ones_like(c[0]), lambda c: np.isfinite(c[0]),
                        lambda u, delta: u * u / 2, lambda G, delta: np.sqrt(2 * G), _collapsed_dg_ov,
                        panel_u=PANEL, panel_w=8.0),
    "factorized": OvKind(2, _factorized_lift, lambda c, r: r[0] * c[1] + c[0] * r[1],
                         lambda c: np.sign(c[0]), lambda c: (c[0] > 0) & (c[1] > 0),
                         _factorized_g_ov, _factorized_u_of_g, _factorized_dg_ov, panel_u=12.0, panel_w=12.0,
                         graded_u=True),
}
"""OV circuit kind -> its lift from ``(u, delta)`` and its closed-form :math:`G_{OV}`, inverse and increment."""

QK_KINDS: dict[str, QkKind] = {
    "collapsed": QkKind(1, lambda c, K, M, A: (), lambda c, r: r[0], lambda c, A: np.isfinite(c[0]),
                        dv_of_dg=_collapsed_dv_of_dg, dg_qk=_collapsed_dg_qk, lift=lambda v: (v,)),
    "factorized": QkKind(3, _factorized_qk_constants, lambda c, r: r[0] * (c[1] - c[2]) + c[0] * (r[1] - r[2]),
                         lambda c, A: (A > 0) & np.isfinite(c[1]) & np.isfinite(c[2]),
                         scale=_factorized_qk_scale, lift_dw=_factorized_qk_lift_dw, dg_dw=_factorized_qk_dg_dw),
}
"""QK circuit kind -> its lift from the walk and its conserved constants, and how its level curve is walked."""


def _first_integral(param: str) -> dict[str, Any]:
    """The generated first integral of ``param`` (an untyped table of generated functions)."""
    return cast(dict[str, Any], generated.FIRST_INTEGRALS[param])


def _rhs(param: str) -> Callable[..., tuple]:
    """The generated right-hand side of ``param``."""
    return cast(Callable[..., tuple], generated.RHS[param])


def _walk_rate(param: str) -> Callable[..., Any]:
    r"""The generated :math:`dw/dt(u, v, K, M, \eta_{QK}, \eta_{OV})` of a factorized-QK ``param``."""
    return cast(Callable[..., Any], generated.WALK_RATE[param])


def clock_free_capable(param: Parametrization) -> bool:
    """Whether ``param`` has a first integral and both its circuit kinds an entry in :data:`OV_KINDS`/:data:`QK_KINDS`
    (CACO, CAFO walked in ``u``; FACO, FAFO in ``w``)."""
    p = Parametrization(param)
    return str(p) in generated.FIRST_INTEGRALS and p.ov.kind.name in OV_KINDS and p.qk.kind.name in QK_KINDS


@lru_cache(maxsize=None)
def _rule(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1) / 2, w / 2                     # on [0, 1]


@lru_cache(maxsize=None)
def _legendre_inverse(n: int) -> np.ndarray:
    """Values at the ``n`` Gauss-Legendre nodes -> Legendre coefficients of the interpolating polynomial."""
    z, _ = np.polynomial.legendre.leggauss(n)
    return np.linalg.inv(np.polynomial.legendre.legvander(z, n - 1))


@lru_cache(maxsize=None)
def _antiderivative(n: int) -> np.ndarray:
    """``(n + 1, n)``: values at the ``n`` Gauss-Legendre nodes -> the Legendre coefficients of the interpolant's
    antiderivative in ``z`` that is 0 at ``z = -1``."""
    return np.polynomial.legendre.legint(_legendre_inverse(n), lbnd=-1, axis=0)


@lru_cache(maxsize=None)
def _legendre_to_chebyshev(n: int) -> np.ndarray:
    r"""``(n, n)``: Legendre coefficients -> Chebyshev coefficients of the same polynomial (degree ``< n``), by
    interpolation at the ``n`` Chebyshev points (both bases well conditioned there; the monomial basis is not: its
    conversion entries reach 1.5e6 at degree 20). A Chebyshev series is evaluated in two calls,
    :math:`T_k(z) = \cos(k\arccos z)`, where a Legendre one takes a recurrence of ``n`` steps."""
    cheb, leg = np.polynomial.chebyshev, np.polynomial.legendre
    z = cheb.chebpts1(n)
    return np.linalg.solve(cheb.chebvander(z, n - 1), leg.legvander(z, n - 1))


@lru_cache(maxsize=None)
def _cumulative(n: int) -> np.ndarray:
    r"""Spectral integration on ``[0, 1]``: ``S @ f(x)`` at the ``n`` Gauss nodes ``x`` is :math:`\int_0^{x_i} p`,
    ``p`` the polynomial interpolating ``f`` at the nodes (exact for degree ``n - 1``; ``(n, n)``)."""
    leg = np.polynomial.legendre
    z, _ = leg.leggauss(n)
    return leg.legvander(z, n) @ _antiderivative(n) / 2


@lru_cache(maxsize=None)
def _tail_rows(n: int) -> np.ndarray:
    """``(3, n)``: node values -> the interpolant's Legendre coefficients 0, n - 2 and n - 1."""
    return _legendre_inverse(n)[[0, n - 2, n - 1]]


def _panel_error(g: np.ndarray) -> np.ndarray:
    r"""Estimated relative error of the Gauss-Legendre sum of ``g`` over a panel, from ``g`` at its nodes
    ``(NODES, m)``: with :math:`\tau` the larger of the interpolant's last two Legendre coefficients over the first
    (the mean), :math:`0.1\,\tau^2`. For an integrand analytic in a Bernstein ellipse :math:`\rho` the coefficients
    fall like :math:`\rho^{-k}` and the ``n``-node rule's error like :math:`\rho^{-2n}`, so :math:`\tau^2` bounds it;
    measured on a pole, a square-root branch point and an exponential at every distance, the error was 4e-3 to 1e-4
    of :math:`\tau^2` wherever :math:`\tau < 10^{-2}` (tests/unit/simulation/test_clockfree.py)."""
    c = _tail_rows(g.shape[0]) @ g
    with np.errstate(all="ignore"):
        tail = np.maximum(np.abs(c[1]), np.abs(c[2])) / np.abs(c[0])
    return np.where(np.isfinite(tail), 0.1 * tail * tail, np.inf)


class _Curve:
    r"""The level curves of a batch, walked in a monotone coordinate :math:`s = s_0 + h` with a carried quantity
    ``c(h)``; everything is a function of the offset ``h`` (``(..., m)`` arrays over the trajectories ``cols``).

    The walk needs: ``rate(h, c, cols)`` (:math:`ds/dt`), ``quad(h_a, r, c_a, cols)`` (:math:`\int_{h_a}^{h_a+r} dt`,
    the integrand at the nodes, ``c`` at the end and the panel's carry error), ``carry_at``, ``log_scale``
    (:math:`|d\log(ds/dt)/ds|`), ``limit`` (panel widths shortened where the curve turns faster than the local scale
    foresees), ``max_width(h_a, cols)`` (the largest panel), ``state(h, c)`` (the reduced coordinates of every trajectory) and ``rhs_params`` ``(4, B)``.
    """

    panel: float
    panel_max: float
    c0: np.ndarray
    param: str
    pars: tuple

    def rate(self, h, c, cols):
        raise NotImplementedError

    def quad(self, h_a, r, c_a, cols):
        raise NotImplementedError

    def carry_at(self, h_a, r, c_a, cols):
        raise NotImplementedError

    def log_scale(self, h, c, cols):
        r""":math:`|d\log(ds/dt)/ds|` at offset ``h`` by a complex step of :meth:`rate` (the carry held at ``c``; a
        walk whose rate reads its carry steps that too, :meth:`_WCurve.log_scale`)."""
        with np.errstate(all="ignore"):
            rt = self.rate(h + 1j * _STEP, c, cols)
        return np.abs(rt.imag / _STEP / rt.real)

    def limit(self, h_a, width, c_a, cols):
        raise NotImplementedError

    def max_width(self, h_a, cols):
        raise NotImplementedError

    def state(self, h, c):
        raise NotImplementedError


def _coefficient(param, pars, delta, A, ov) -> np.ndarray:
    r""":math:`R` of :math:`H = G_{QK} - R\,G_{OV}` per trajectory: the generated :math:`R\,G_{OV}` over the kind's
    :math:`G_{OV}` at ``u = 1 + |delta|`` (well conditioned there: no cancellation in :math:`\sqrt{\delta^2+4u^2} - |\delta|`)."""
    ref = 1.0 + np.abs(delta)
    return np.asarray(_first_integral(param)["r_g_ov"](ref, 0.0, *pars, delta, A) / ov.g_ov(ref, delta), dtype=float)


class _UCurve(_Curve):
    r"""Collapsed QK: walked in :math:`u = u_0 + h`, :math:`v = v_0 + \Delta v` with :math:`\Delta v` from
    :math:`\Delta G_{QK} = R\,\Delta G_{OV}(u_0, h)` in closed form (nothing carried)."""

    panel_max = PANEL_MAX

    def __init__(self, param, pars, delta, A, sign, ov, qk, u0, v0):
        self.param, self.pars, self.ov, self.qk = param, pars, ov, qk
        self.panel = ov.panel_u
        R = _coefficient(param, pars, delta, A, ov)
        self.c0 = np.zeros_like(u0)
        self.table = np.stack(np.broadcast_arrays(*pars, delta, A, sign, R, u0, v0)).astype(float)
        self._cols: Any = None
        self._rows: tuple = ()

    def _sub(self, cols):
        if cols is self._cols:                   # the panel loop passes one index array to several calls
            return self._rows
        rows = self.table[:, cols]
        self._cols, self._rows = cols, (tuple(rows[:4]), *rows[4:])
        return self._rows

    def _coords_sub(self, h, sub, settle: bool = True):
        pars, delta, A, sign, R, u0, v0 = sub
        dv = self.qk.dv_of_dg(v0, R * self.ov.dg_ov(u0, h, delta), pars[1], settle)
        return (*self.ov.lift(u0 + h, delta, sign), *self.qk.lift(v0 + dv))

    def rate(self, h, c, cols, settle: bool = False):
        sub = self._sub(cols)
        y = self._coords_sub(h, sub, settle)
        rates = _rhs(self.param)(*y, *sub[0])
        n = self.ov.size
        return self.ov.u_rate(y[:n], rates[:n])

    def quad(self, h_a, r, c_a, cols):
        x, _ = _rule(NODES)
        return self.nodes_quad(h_a + r * x[:, None], 1.0, r, c_a, cols)

    def nodes_quad(self, H, dH, r, c_a, cols):
        """:meth:`quad` from the offsets ``H`` at the panel's nodes and :math:`dH/dh` there (:class:`_Graded`)."""
        _, w = _rule(NODES)
        g = dH / self.rate(H, None, cols)
        return r * (w @ g), g, c_a, 0.0

    def carry_at(self, h_a, r, c_a, cols):
        return c_a

    def max_width(self, h_a, cols):
        """Largest panel width in ``u``: :data:`PANEL_MAX` or :data:`U_GROWTH` times ``u`` at the panel's start."""
        u0 = self._sub(cols)[5]
        return np.maximum(PANEL_MAX, U_GROWTH * np.abs(u0 + h_a))

    def limit(self, h_a, width, c_a, cols, iterations: int = 30):
        r"""``width`` shortened where ``v`` would change by more than :data:`PANEL_V` over ``[h_a, h_a + width]``.

        The end is where :math:`R\,\Delta G_{OV}(u_0, h) = \Delta G_{QK}(v_0, \Delta v(h_a) + \text{PANEL\_V})`; for
        ``u > 0`` the OV kind's closed-form inverse of :math:`G_{OV}` gives it. A collapsed-OV start at ``u <= 0``
        (``v`` first falls) takes Newton's method in ``h`` instead (derivative by a complex step; a rough end is
        enough, so it stops at a relative step of 1e-6).
        """
        pars, delta, A, sign, R, u0, v0 = self._sub(cols)
        M = pars[1]
        dv_a = self.qk.dv_of_dg(v0, R * self.ov.dg_ov(u0, h_a, delta), M, False)     # a rough end is enough
        target = self.qk.dg_qk(v0, dv_a + PANEL_V, M)
        over = R * self.ov.dg_ov(u0, h_a + width, delta) > target
        if not over.any():
            return width
        out = width.copy()
        closed = over & (u0 + h_a > 0)
        if closed.any():
            sel = closed
            u_end = self.ov.u_of_g(self.ov.g_ov(u0[sel], delta[sel]) + target[sel] / R[sel], delta[sel])
            out[sel] = np.maximum(u_end - u0[sel] - h_a[sel], 1e-3 * width[sel])
        newton = over & ~closed
        if newton.any():
            x, tgt = h_a[newton] + width[newton], target[newton] / R[newton]
            u0_, d_ = u0[newton], delta[newton]
            for _ in range(iterations):
                r = self.ov.dg_ov(u0_, x + 1j * _STEP, d_)
                step = (r.real - tgt) / (r.imag / _STEP)
                x = x - step
                if not np.any(np.abs(step) > 1e-6 * (1.0 + np.abs(x))):
                    break
            out[newton] = np.maximum(x - h_a[newton], 1e-3 * width[newton])
        return out

    def state(self, h, c):
        return self._coords_sub(h, self._sub(slice(None)))

    @property
    def rhs_params(self):
        return self.table[:4]


class _WCurve(_Curve):
    r"""Factorized QK: walked in :math:`w = w_0 + h` with :math:`v = \alpha\sinh w`,
    :math:`\alpha = |A_{QK}|/(2\sqrt\kappa)`.

    :math:`G_{QK}` is an integral with no closed-form inverse, but :math:`\rho_{QK}(v)\,dw = |A|\cosh w\,dw` makes its
    integrand in ``w`` entire: the carried :math:`Y(h) = R\,G_{OV}(u) = Y_0 + G_{QK}(v(w)) - G_{QK}(v_0)` grows by
    :math:`dY/dw = (e^v + M + 1)/(2\sqrt\kappa)` (the kind's ``dg_dw``), summed spectrally from the panel's own nodes,
    and :math:`u = G_{OV}^{-1}(Y/R)` is closed form. The rate at the nodes is the generated :math:`dw/dt(u, v)`
    (:meth:`rate`); the lifts make the returned coordinates only (:meth:`state`).
    """

    panel_max = PANEL_MAX_W

    def __init__(self, param, pars, delta, A, sign, ov, qk, u0, w0, qk_consts):
        self.param, self.ov, self.qk = param, ov, qk
        self.panel = ov.panel_w
        K, M = pars[0], pars[1]
        alpha = np.asarray(qk.scale(K, M, A), dtype=float)
        R = _coefficient(param, pars, delta, A, ov)
        self.c0 = np.asarray(R * ov.g_ov(u0, delta), dtype=float)       # Y0 = R G_OV(u0), without cancellation
        # every per-trajectory constant in one (rows, B) table: one gather per call
        self.n_consts = len(qk_consts)
        self.table = np.stack(np.broadcast_arrays(*pars, delta, A, sign, *qk_consts, alpha, R, w0)).astype(float)
        self._cols: Any = None
        self._rows: tuple = ()
        self._walk_rate = _walk_rate(param)

    def _sub(self, cols):
        if cols is self._cols:
            return self._rows
        rows = self.table[:, cols]
        m = self.n_consts
        self._cols, self._rows = cols, (tuple(rows[:4]), rows[4], rows[5], rows[6], tuple(rows[7:7 + m]),
                                        rows[-3], rows[-2], rows[-1])
        return self._rows

    def dY(self, h, cols):
        r""":math:`dY/dw` at offset ``h`` (any shape ending in the trajectories ``cols``)."""
        pars, _, _, _, consts, alpha, _, w0 = self._sub(cols)
        return self.qk.dg_dw(alpha * np.sinh(w0 + h), consts, pars[0], pars[1])

    def _coords_sub(self, h, Y, sub):
        pars, delta, A, sign, consts, alpha, R, w0 = sub
        u = self.ov.u_of_g(Y / R, delta)
        return (*self.ov.lift(u, delta, sign), *self.qk.lift_dw(w0, h, A, consts, pars[0], pars[1]))

    def rate(self, h, c, cols):
        r""":math:`dw/dt` at offset ``h`` with carried ``c`` = :math:`Y`: the generated walk rate
        (:data:`simulation.generated.WALK_RATE`, :mod:`theory.walk_rate`) at :math:`u = G_{OV}^{-1}(Y/R)` and
        :math:`v = \alpha\sinh w`; the :math:`\cosh w` of :math:`\dot v/(dv/dw)` cancels there, so neither the
        QK lift nor the full right-hand side is evaluated at the nodes (a test holds it to that composition)."""
        pars, delta, _, _, _, alpha, R, w0 = self._sub(cols)
        u = self.ov.u_of_g(c / R, delta)
        return self._walk_rate(u, alpha * np.sinh(w0 + h), *pars)

    def rate_composed(self, h, c, cols):
        r""":meth:`rate` the long way: the OV and QK lifts, the full generated right-hand side, :math:`\dot v`
        over :math:`dv/dw = \alpha\cosh w` (what :meth:`rate` replaces; kept for its test)."""
        sub = self._sub(cols)
        y = self._coords_sub(h, c, sub)
        rates = _rhs(self.param)(*y, *sub[0])
        n = self.ov.size
        return self.qk.v_rate(y[n:], rates[n:]) / (sub[5] * np.cosh(sub[7] + h))

    def carry_at(self, h_a, r, c_a, cols):
        x, w = _rule(NODES)
        return c_a + r * (w @ self.dY(h_a + r * x[:, None], cols))

    def max_width(self, h_a, cols):
        """Largest panel width in ``w``: :data:`PANEL_MAX_W` (``u`` is capped in :meth:`limit`)."""
        return PANEL_MAX_W

    def quad(self, h_a, r, c_a, cols):
        """(:meth:`dY` and :meth:`rate` at the nodes, fused: ``v`` at the nodes is computed once for both; run under
        the caller's ``np.errstate``.)"""
        x, w = _rule(NODES)
        pars, delta, _, _, consts, alpha, R, w0 = self._sub(cols)
        v = alpha * np.sinh(w0 + (h_a + r * x[:, None]))
        q = self.qk.dg_dw(v, consts, pars[0], pars[1])
        Y = c_a + r * (_cumulative(NODES) @ q)
        g = 1.0 / self._walk_rate(self.ov.u_of_g(Y / R, delta), v, *pars)
        # the carried Y at the nodes is the interpolant's integral: its error, relative to Y, is ~ r |last coefficients|
        cq = _tail_rows(NODES) @ q
        carry_err = r * np.maximum(np.abs(cq[1]), np.abs(cq[2])) / np.min(np.abs(Y), axis=0)
        return r * (w @ g), g, c_a + r * (w @ q), carry_err

    def log_scale(self, h, c, cols):
        with np.errstate(all="ignore"):
            rt = self.rate(h + 1j * _STEP, c + 1j * _STEP * self.dY(h, cols), cols)
        return np.abs(rt.imag / _STEP / rt.real)

    def limit(self, h_a, width, c_a, cols):
        r"""``width`` shortened where ``v`` would change by more than :data:`PANEL_V` (closed form in ``w``) or ``u``
        by more than ``max(PANEL_MAX, U_GROWTH u)`` (``Y`` grows at most at the end's rate :math:`dY/dw`, which increases)."""
        _, delta, _, _, _, alpha, R, w0 = self._sub(cols)
        w_a = w0 + h_a
        v_a = alpha * np.sinh(w_a)
        with np.errstate(all="ignore"):
            width = np.minimum(width, np.arcsinh((v_a + PANEL_V) / alpha) - w_a)
            u_a = self.ov.u_of_g(c_a / R, delta)
            room = R * self.ov.dg_ov(u_a, np.maximum(PANEL_MAX, U_GROWTH * u_a), delta)
            cap = room / self.dY(h_a + width, cols)
        return np.where(cap < width, np.maximum(cap, 1e-300), width)

    def state(self, h, c):
        return self._coords_sub(h, c, self._sub(slice(None)))

    @property
    def rhs_params(self):
        return self.table[:4]


class _Graded(_Curve):
    r"""A curve walked in the logarithm of the distance to its integrand's singularity behind the start: the inner
    curve's offset is :math:`H = d\,\mathrm{expm1}(h/d)` (``d`` per trajectory, :math:`dH/dh = 1 + H/d`), and its
    integrand :math:`dt/dH` becomes :math:`dt/dh = (1 + H/d)\,dt/dH`. Used for the ``u`` walk of an OV kind with
    ``graded_u`` (factorized OV: :math:`\dot u \propto \sqrt{\delta^2 + 4u^2}`, a pole of :math:`dt/du` at
    ``u = 0`` for a balanced start, ``d = u0`` behind it).

    Next to the pole the integrand in ``h`` is near constant, so the panels that walked away from a start near it in
    a geometric sequence (each at most ~6 times its distance to the pole: about 15 panels from 1e-12 to 1) cover a
    factor of up to :math:`e^{\text{LOG\_MAX}}` in ``u`` each; far from it the local scale sets the widths as before
    (a panel of width :math:`\Delta h` is one of :math:`\approx (H + d)\Delta h/d` in ``u``). On the admissible
    benchmark problem (2,000 CAFO starts, ``t = 1e12``) it cut the quadratures per trajectory from 14.9 to 12.3 (at 20 nodes).
    The offset keeps its relative accuracy to ~``h/d`` ulp (at most ~20 here: ``u`` grows by up to 1e15).
    ``max_width`` and ``limit`` are the inner curve's, mapped to ``h`` (and at most ``LOG_MAX d``). Not used for the
    ``w`` walk: there the walk near ``Y = 0`` is short, and in ``log w`` its later panels (``v`` large, where
    :data:`PANEL_V` binds) were rejected more often than they saved (FACO 27.4 -> 31.1 quadratures per trajectory, at 20 nodes).
    """

    def __init__(self, inner: _Curve, d: np.ndarray):
        self.inner, self.d = inner, d
        self.panel, self.c0, self.param = inner.panel, inner.c0, inner.param
        self.panel_max = inner.panel_max

    def _map(self, h, cols):
        d = self.d[cols]
        with np.errstate(all="ignore"):
            e = np.exp(h / d)
            return d * np.expm1(h / d), e

    def _back(self, H_a, width_H, cols):
        r"""``h`` width of the inner width ``width_H`` from the inner offset ``H_a``: :math:`d\log(1 + w/(H_a + d))`."""
        d = self.d[cols]
        with np.errstate(all="ignore"):
            return d * np.log1p(width_H / (H_a + d))

    def rate(self, h, c, cols):
        H, dH = self._map(h, cols)
        return self.inner.rate(H, c, cols) / dH

    def quad(self, h_a, r, c_a, cols):
        x, _ = _rule(NODES)
        H, dH = self._map(h_a + r * x[:, None], cols)
        return self.inner.nodes_quad(H, dH, r, c_a, cols)

    def carry_at(self, h_a, r, c_a, cols):
        return c_a

    def limit(self, h_a, width, c_a, cols):
        H_a, _ = self._map(h_a, cols)
        H_b, _ = self._map(h_a + width, cols)
        lim = self.inner.limit(H_a, H_b - H_a, c_a, cols)
        return np.minimum(width, self._back(H_a, lim, cols))

    def max_width(self, h_a, cols):
        H_a, _ = self._map(h_a, cols)
        return np.minimum(LOG_MAX * self.d[cols], self._back(H_a, self.inner.max_width(H_a, cols), cols))

    def state(self, h, c):
        return self.inner.state(self._map(h, slice(None))[0], c)

    @property
    def rhs_params(self):
        return self.inner.rhs_params


def _curve(param: Parametrization, y0: np.ndarray, params: np.ndarray) -> tuple[_Curve, np.ndarray]:
    """The batch's curve and where the clock-free path applies (``(B,)``)."""
    p = Parametrization(param)
    fi = _first_integral(str(p))
    pars = tuple(np.asarray(x, dtype=float) for x in params)
    u0, v0, delta, A = (np.broadcast_to(np.asarray(x, dtype=float), y0.shape[1:]).copy()
                        for x in fi["constants"](*y0, *pars))
    ov, qk = OV_KINDS[p.ov.kind.name], QK_KINDS[p.qk.kind.name]
    ov_y, qk_y = tuple(y0[:ov.size]), tuple(y0[ov.size:])
    sign = np.broadcast_to(ov.sign(ov_y), u0.shape).astype(float)
    with np.errstate(all="ignore"):
        ok = np.asarray(ov.applies(ov_y), dtype=bool) & np.asarray(qk.applies(qk_y, A), dtype=bool)
        curve: _Curve
        if qk.dv_of_dg is not None:
            curve = _UCurve(str(p), pars, delta, A, sign, ov, qk, u0, v0)
            if ov.graded_u:                                 # the pole at u = 0 is u0 behind the start
                curve = _Graded(curve, np.where(u0 > 0, u0, 1.0))
        else:
            consts = tuple(np.broadcast_to(np.asarray(x, dtype=float), u0.shape).copy()
                           for x in qk.constants(qk_y, pars[0], pars[1], A))
            assert qk.scale is not None
            w0 = np.arcsinh(v0 / np.asarray(qk.scale(pars[0], pars[1], A), dtype=np.float64))
            curve = _WCurve(str(p), pars, delta, A, sign, ov, qk, u0, w0, consts)
            ok &= u0 > 0                                    # v (and w) increase only where u > 0
        ok &= np.all(np.isfinite(y0), axis=0)
    return curve, ok


@lru_cache(maxsize=None)
def _end_derivative(n: int) -> np.ndarray:
    r"""Row ``(n,)``: node values on ``[-1, 1]`` -> the interpolant's derivative at ``z = 1``
    (:math:`P_k'(1) = k(k+1)/2`)."""
    k = np.arange(n)
    return (k * (k + 1) / 2) @ _legendre_inverse(n)


def _end_log_slope(g, width) -> np.ndarray:
    r""":math:`|d\log g/ds|` at a panel's end from ``g`` at its Gauss nodes ``(NODES, m)`` (the degree-(NODES - 1) interpolant
    of :math:`\log g`, differentiated at the end; ``2/width`` maps ``z`` to ``s``)."""
    with np.errstate(all="ignore"):
        return np.abs(_end_derivative(g.shape[0]) @ np.log(g)) * 2 / width


def _log_ratio(t, tj):
    r""":math:`\log(t/t_j)` to a few ulp: the ratio first (exact to one rounding), the difference of logs only where
    the ratio leaves the float range (``t_j`` down to the smallest subnormal)."""
    with np.errstate(all="ignore"):
        q = t / tj
        return np.where(np.isfinite(q) & (q > 0), np.log(q), np.log(t) - np.log(tj))


def _dense_start(G, k, bb, width, t_lo, tj, x, iterations: int = 16) -> np.ndarray:
    r"""Newton starts (offsets inside the panel) from the panels' own nodes: the interpolating polynomial of ``g`` at
    the panel's Gauss nodes, integrated (a Legendre series), gives ``t`` inside the panel to ~1e-7 relative without
    new evaluations; a few safeguarded Newton steps on it (clipped to the panel) put each start within ~1e-7, so the
    exact Newton iteration that follows needs one or two quadratures instead of four or five.

    ``G``: ``(P, NODES, B)`` node values per panel; ``k, bb``: panel and trajectory of each requested time.
    """
    ok = k < G.shape[0]
    out = x.copy()
    if not ok.any():
        return out
    g = G[k[ok], :, bb[ok]].T                                 # (NODES, m)
    to_cheb = _legendre_to_chebyshev(NODES + 1)
    coef = to_cheb[:, :NODES] @ (_legendre_inverse(NODES) @ g)    # g's series on z in [-1, 1], Chebyshev form
    anti = to_cheb @ (_antiderivative(NODES) @ g)             # its antiderivative, 0 at z = -1
    degree = np.arange(NODES + 1)
    h = width[ok]
    with np.errstate(all="ignore"):
        z = np.clip(2 * x[ok] / h - 1, -1.0, 1.0)
        z_lo, z_hi = np.full_like(z, -1.0), np.ones_like(z)     # the root's bracket on the interpolant
        for _ in range(iterations):
            basis = np.cos(np.arccos(z)[:, None] * degree)    # (m, NODES + 1): T_k(z) = cos(k arccos z), both series
            tz = t_lo[ok] + h / 2 * np.einsum("mk,km->m", basis, anti)
            gz = np.einsum("mk,km->m", basis, coef)
            F = _log_ratio(tz, tj[ok])
            below = F < 0
            z_lo, z_hi = np.where(below, z, z_lo), np.where(below, z_hi, z)
            z_new = z - F * tz / (h / 2 * gz)
            # a step that leaves the bracket (or is not finite: t = 0 at the panel's start) bisects it instead
            z_new = np.where((z_new > z_lo) & (z_new < z_hi), z_new, (z_lo + z_hi) / 2)
            settled = not np.any(np.abs(z_new - z) > 1e-9)    # ~1e-9 of the panel: the exact Newton finishes it
            z = z_new
            if settled:
                break
        good = np.isfinite(z) & (z > -1.0)                    # never the panel's start itself (log t = -inf there)
    out[np.flatnonzero(ok)[good]] = ((z + 1) / 2 * h)[good]
    return out


def integrate_clock_free(param: Parametrization, y0: np.ndarray, params: np.ndarray, t_eval: np.ndarray, *,
                         curves: LevelCurves | None = None):
    r"""States of ``B`` trajectories at times ``t_eval`` from their first integral and one quadrature.

    Args:
        y0: reduced start states ``(n_state, B)`` on which :func:`applies` holds.
        params: ``(4, B)``: K, M, eta_qk, eta_ov per trajectory.
        t_eval: strictly increasing times ``>= 0``, ``(T,)``.
        curves: these starts' :func:`level_curves`, where the caller has them already (built once, not twice).

    Returns:
        :class:`simulation.batch.BatchSolution` with ``y (n_state, T, B)``, ``tau = log(1 + t_eval)`` and ``error``
        ``(B,)`` (the estimated relative error per trajectory, module docstring); ``steps`` counts accepted quadrature
        panels, ``rejected`` the panels shortened by the error control, ``nfev`` right-hand-side evaluations (each over
        the trajectories then running), ``success`` that every state is finite.
    """

    y0 = np.asarray(y0, dtype=float)
    params = np.asarray(params, dtype=float)
    t_eval = np.asarray(t_eval, dtype=float)
    if curves is not None and curves.curve.c0.shape != (y0.shape[1],):
        raise ValueError(f"curves: built for {curves.curve.c0.shape[0]} trajectories, y0 has {y0.shape[1]}")
    with _one_blas_thread():
        return _integrate_chunks(param, y0, params, t_eval, None if curves is None else curves.curve)


@dataclass(frozen=True)
class LevelCurves:
    """A batch's level curves, as :func:`integrate_clock_free` walks them, and ``applies`` ``(B,)``: where the
    clock-free path is valid (:func:`applies`)."""

    curve: Any
    applies: np.ndarray


def level_curves(param: Parametrization, y0: np.ndarray, params: np.ndarray) -> LevelCurves:
    """The batch's :class:`LevelCurves` (``y0 (n_state, B)``, ``params (4, B)``): :func:`applies` and the curves
    :func:`integrate_clock_free` would build, for a router that needs both."""
    y0 = np.asarray(y0, dtype=float)
    curve, ok = _curve(param, y0, np.broadcast_to(np.asarray(params, dtype=float), (4, y0.shape[1])))
    return LevelCurves(curve, ok)


@lru_cache(maxsize=1)
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_blas_thread():
    r"""BLAS on one thread for the panel loop (``threadpoolctl``; 8 us per call once the controller exists): its
    products are ``(NODES, NODES) @ (NODES, m)`` with ``m`` up to :data:`CHUNK`, where OpenBLAS's threads doubled the
    CPU time of 1,000-10,000 trajectories and saved no wall time (FACO, 30 nodes: 34 ms wall, 67 ms CPU at 1,000 with
    two threads; 34 ms both with one), and a result should not depend on the thread count."""
    return _blas_controller().limit(limits=1, user_api="blas")


def _integrate_chunks(param, y0, params, t_eval, curve=None):
    from simulation.batch import BatchSolution

    n, B = y0.shape
    if B > CHUNK:                                 # (a whole batch's curve is not split: each chunk builds its own)
        parts = [_integrate_chunks(param, y0[:, i:i + CHUNK], params[:, i:i + CHUNK], t_eval)
                 for i in range(0, B, CHUNK)]
        return BatchSolution(parts[0].tau, np.concatenate([s.y for s in parts], axis=2),
                             np.concatenate([s.steps for s in parts]), np.concatenate([s.rejected for s in parts]),
                             sum(s.nfev for s in parts), np.concatenate([s.success for s in parts]), "clock-free",
                             np.concatenate([s.error for s in parts]))
    with np.errstate(all="ignore"):
        return _integrate(param, y0, params, t_eval, BatchSolution, curve)


def _integrate(param, y0, params, t_eval, BatchSolution, curve=None):
    n, B = y0.shape
    T = t_eval.size
    if curve is None:
        curve, _ = _curve(param, y0, params)
    t_max = float(t_eval[-1])
    # -- panels: offsets H_k, the carried c_k, the cumulative time t_k and error e_k at their starts ----------------
    Hs, carries, times, errs, rel = [np.zeros(B)], [curve.c0.copy()], [np.zeros(B)], [np.zeros(B)], []
    nodes: list[np.ndarray] = []
    h, c, t, e = np.zeros(B), curve.c0.copy(), np.zeros(B), np.zeros(B)
    steps, rejected = np.zeros(B, dtype=np.int64), np.zeros(B, dtype=np.int64)
    fit = np.ones(B)                              # per trajectory: fraction of the proposed width (shrinks on rejection)
    retry = np.full(B, np.nan)                    # the shortened width of a rejected panel, redone in the next round
    tries = np.zeros(B, dtype=np.int64)           # rejections of the panel a trajectory is on
    running = np.flatnonzero(t < t_max)
    nfev = 0
    for _ in range(MAX_PANELS * 2):
        if running.size == 0:
            break
        h_a, c_a = h[running], c[running]
        width = retry[running]
        fresh = np.isnan(width)
        if fresh.any():
            new = running if fresh.all() else running[fresh]
            if nodes:                             # the previous panel's interpolant, at its end (= this start)
                scale = _end_log_slope(nodes[-1][:, new], (h - Hs[-2])[new])
            else:
                scale = curve.log_scale(h[new], c[new], new)
            w_new = np.minimum(curve.max_width(h[new], new), curve.panel / np.maximum(scale, 1e-300))
            width[fresh] = fit[new] * curve.limit(h[new], w_new, c[new], new)
        dt, g_nodes, c_b, carry_err = curve.quad(h_a, width, c_a, running)
        nfev += NODES + 1
        err = _panel_error(g_nodes) + carry_err
        # error control: a panel whose estimate is too large is redone shorter in the next round (with the others)
        redo = ~(err <= PANEL_TOL) & (width > 0) & (tries[running] < MAX_HALVINGS)
        ok = ~redo
        if redo.any():
            shrink = np.where(redo, _shrink(err), 1.0)
            rejected[running] += redo
            tries[running] = np.where(redo, tries[running] + 1, 0)
            fit[running] *= shrink
            retry[running] = np.where(redo, width * shrink, np.nan)
            dt = np.where(ok, dt, 0.0)            # a panel redone leaves its trajectory where it was
            err = np.where(ok, err, 0.0)
            h[running] = np.where(ok, h_a + width, h_a)
            c[running] = np.where(ok, c_b, c_a)
        else:
            tries[running] = 0
            retry[running] = np.nan
            h[running] = h_a + width
            c[running] = c_b
        fit[running] = np.where(ok & (err <= PANEL_TOL * FIT_RELAX), np.minimum(fit[running] * FIT_GROW, 1.0),
                                fit[running])
        at = np.full((NODES, B), np.nan)
        at[:, running] = g_nodes
        nodes.append(at)
        t[running] += dt
        e[running] += np.minimum(err, 1.0) * dt
        panel_rel = np.zeros(B)
        panel_rel[running] = np.minimum(err, 1.0)
        rel.append(panel_rel)
        steps[running] += ok
        bad = ok & (~np.isfinite(t[running]) | ~(dt > 0))
        t[running[bad]] = np.nan
        Hs.append(h.copy())
        carries.append(c.copy())
        times.append(t.copy())
        errs.append(e.copy())
        running = running[~bad & (t[running] < t_max)]
    H = np.array(Hs)                              # (P + 1, B): panel boundaries (the last repeats once reached)
    C = np.array(carries)
    Tc = np.array(times)
    Ec = np.array(errs)
    Er = np.array(rel + [np.zeros(B)])            # (P + 1, B): each panel's relative error estimate
    # -- the panel of each requested time, then Newton on log t (in the offset inside it) ----------------------------
    out_h = np.full((T, B), np.nan)
    out_c = np.full((T, B), np.nan)
    time_err = np.zeros((T, B))
    jj, bb = np.repeat(np.arange(T), B), np.tile(np.arange(B), T)       # every (time, trajectory) pair
    tj = t_eval[jj]
    at_start = tj <= 0
    out_h[jj[at_start], bb[at_start]] = 0.0
    out_c[jj[at_start], bb[at_start]] = curve.c0[bb[at_start]]
    live = ~at_start & np.isfinite(Tc[-1, bb]) & (Tc[-1, bb] >= tj)
    jj, bb, tj = jj[live], bb[live], tj[live]
    # k: last boundary with t_k <= t_j  (column-wise search; Tc is non-decreasing in k)
    k = np.sum(Tc[:, bb] <= tj[None, :], axis=0) - 1
    k1 = np.minimum(k + 1, H.shape[0] - 1)
    h0, width = H[k, bb], H[k1, bb] - H[k, bb]
    t_lo, t_hi = Tc[k, bb], Tc[k1, bb]
    frac = np.where(t_lo > 0, _log_ratio(tj, t_lo) / _log_ratio(t_hi, t_lo), tj / t_hi)
    x = width * np.clip(np.nan_to_num(frac, nan=0.5), 0.0, 1.0)
    if nodes:
        x = _dense_start(np.array(nodes), k, bb, width, t_lo, tj, x)
    lo, hi = np.zeros_like(x), width.copy()
    c0 = C[k, bb]
    F_last = np.zeros_like(x)
    idx = np.arange(tj.size)
    for _ in range(NEWTON_STEPS):
        if idx.size == 0:
            break
        xa = x[idx]
        part, _, cx, _ = curve.quad(h0[idx], xa, c0[idx], bb[idx])
        nfev += NODES
        tx = t_lo[idx] + part
        gx = 1.0 / curve.rate(h0[idx] + xa, cx, bb[idx])
        nfev += 1
        F = _log_ratio(tx, tj[idx])
        below = F < 0
        lo[idx] = np.where(below, xa, lo[idx])
        hi[idx] = np.where(below, hi[idx], xa)
        step = -F * tx / gx
        done = (np.abs(step) <= 1e-8 * np.abs(xa)) | (np.abs(F) <= 1e-15)
        # the residual after this step: Newton converges quadratically, |F_new| ~ |F''/F'| step^2 / 2 with
        # |F''/F'| <~ 10/x here, i.e. <~ 10 |F| |step| / x
        F_last[idx] = np.where(np.isfinite(step), 10 * np.abs(F) * np.minimum(np.abs(step) / np.abs(xa), 1.0), np.abs(F))
        # Newton on log t; where its step leaves the bracket (from above where t is near linear in the offset: the
        # step on log t overshoots past the panel's start) or is not finite (log t = -inf at the start), Newton on t
        # itself (exact where t is linear); where that leaves it too, bisection
        lo_i, hi_i = lo[idx], hi[idx]
        new = xa + step
        linear = xa - (tx - tj[idx]) / gx
        inside = (new >= lo_i) & (new <= hi_i)
        new = np.where(inside, new, np.where((linear >= lo_i) & (linear <= hi_i), linear, (lo_i + hi_i) / 2))
        new = np.where(done, xa + np.where(np.isfinite(step), step, 0.0), new)
        x[idx] = new
        idx = idx[~done & (hi[idx] > lo[idx])]
    out_h[jj, bb] = h0 + x
    out_c[jj, bb] = curve.carry_at(h0, x, c0, bb)
    # relative error of the time reached: the panels before (their estimates), the part of the one it lies in (a
    # rule on a sub-interval of an accepted panel: at most the panel's relative estimate) and the last Newton residual
    # (at most 1: a time so small that the offset underflows leaves the start, and the sensitivity below is ~t)
    te = (Ec[k, bb] + Er[k, bb] * (tj - t_lo)) / tj + np.abs(F_last)
    time_err[jj, bb] = np.where(te < 1, te, 1.0)
    ys = np.stack(np.broadcast_arrays(*curve.state(out_h, out_c)))
    # t = 0 exactly: the start itself, bit for bit
    zero = t_eval <= 0
    if zero.any():
        ys[:, zero, :] = y0[:, None, :]
    success = np.all(np.isfinite(ys), axis=(0, 1))
    # how a relative error in time moves each coordinate: |t dy/dt / y|
    rates = np.stack(np.broadcast_arrays(*_rhs(curve.param)(*ys, *curve.rhs_params[:, None, :])))
    sens = np.abs(t_eval[None, :, None] * rates) / np.abs(ys)
    sens = np.max(np.where(np.isfinite(sens), sens, 0.0), axis=0)
    error = np.max(time_err * sens, axis=0) + ROUNDING
    error = np.where(success, error, np.inf)
    return BatchSolution(np.log1p(t_eval), ys, steps, rejected, nfev, success, "clock-free", error)


def applies(param: Parametrization, y0: np.ndarray, params: np.ndarray) -> np.ndarray:
    """Per start ``(B,)``: the clock-free path is valid (the kinds' ``applies``: for factorized OV ``s_O, s_V > 0``,
    for factorized QK :math:`A_{QK} > 0` and ``u > 0``). ``params``: ``(4, B)`` as for
    :func:`integrate_clock_free`."""
    return level_curves(param, y0, params).applies


__all__ = ["OV_KINDS", "QK_KINDS", "LevelCurves", "OvKind", "QkKind", "applies", "clock_free_capable",
           "integrate_clock_free", "level_curves",
           "NODES", "PANEL", "PANEL_MAX", "PANEL_TOL", "TOLERANCE"]
