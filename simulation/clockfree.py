r"""Clock-free integration of the reduced flows that have a first integral.

Along every trajectory :math:`H(u, v) = G_{QK}(v) - R\,G_{OV}(u)` is constant (:mod:`theory.first_integrals`,
generated into :data:`simulation.generated.FIRST_INTEGRALS`), and ``u`` increases strictly (:math:`\dot u > 0`).
The 2-D flow then collapses to one quadrature along the level curve, walked in a monotone coordinate ``s``:

* **collapsed QK** (CACO, CAFO): :math:`G_{QK}` inverts in closed form, so ``s = u`` and
  :math:`v(u) = G_{QK}^{-1}\bigl(H_0 + R\,G_{OV}(u)\bigr)`, :math:`t(u) = \int_{u_0}^{u} dx/\dot u(x, v(x))`;
* **factorized QK** (FACO, FAFO): :math:`G_{QK}(v) = \int (e^x + M + 1)/\rho_{QK}(x)\,dx` has no closed-form
  inverse, but :math:`G_{OV}` has one (both OV kinds), and with :math:`v = \alpha\sinh w`,
  :math:`\rho_{QK} = |A_{QK}|\cosh w` the integrand becomes entire in ``w``. So ``s = w``, and the quadrature carries
  :math:`Y(w) = G_{QK}(v(w)) - H_0 = R\,G_{OV}(u)` (summed spectrally from each panel's nodes),
  :math:`u(w) = G_{OV}^{-1}(Y/R)`, :math:`t(w) = \int_{w_0}^{w} dx/\dot w`.

The state at a requested time is the root of :math:`\log t(s) = \log t_j`. Nothing is stepped in time, so the
cost does not grow with ``t`` the way a clock's error does: it is the number of quadrature panels over
``[s_0, s(t)]`` (:math:`u \sim \log t`).

* **Quadrature**: Gauss-Legendre with :data:`NODES` nodes on panels of ``s``; a panel's width is a number of local
  scales of the integrand (:data:`PANEL`, or the OV kind's ``panel_u``/``panel_w``), :math:`|d\log g/ds|^{-1}` with
  :math:`g = 1/\dot s` (by a complex step), at most :data:`PANEL_MAX` (``u``) or :data:`PANEL_MAX_W` (``w``), and
  shortened where ``v`` would move by more than :data:`PANEL_V`. Panels advance for all trajectories at once until
  each has passed its last requested time.
* **Root**: inside the panel that holds :math:`t_j`, a bracketed Newton iteration on :math:`\log t` (derivative
  :math:`g/t`), each iterate's :math:`t` by the same Gauss-Legendre rule from the panel's start; a step leaving the
  bracket bisects instead.

All of it is vectorised in numpy over trajectories (and requested times); the only Python loops run over panels and
Newton iterations.

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

NODES = 20
"""Gauss-Legendre nodes per panel (exact for polynomials of degree 31)."""
PANEL = 8.0
"""Panel width in units of the integrand's local scale :math:`|d\\log g/du|^{-1}`."""
PANEL_MAX = 16.0
"""Largest panel width in ``u`` (late, :math:`g \\approx e^{pu}` with :math:`p \\to 1`: a 16-node rule over width 4
integrates :math:`e^x` to ~1e-17 relative)."""
PANEL_V = 1.0
"""Largest change of ``v`` over a panel: the integrand depends on ``v`` through :math:`p(v)`, which changes by
:math:`O(1)` per unit of ``v``; with a large rate ratio ``v`` can run a unit in a tiny range of ``u``, which the local
scale at a panel's start does not foresee."""
MAX_PANELS = 5_000
CHUNK = 1024
"""Largest batch integrated at once (each trajectory's panels are its own, so chunks change nothing). Measured
(10,000 trajectories to 1e12, CPU-s): CACO 0.28 whole, 0.22 in chunks of 2,048 or 1,024, 0.30 of 512; CAFO 0.34,
0.28, 0.22, 0.31: the (nodes x batch) temporaries stay in cache."""
NEWTON_STEPS = 40
_STEP = 1e-30                      # complex step


@dataclass(frozen=True)
class OvKind:
    r"""How one OV circuit kind's reduced coordinates follow from ``u`` and its conserved constant :math:`\delta`.

    ``lift(u, delta, sign) -> coords``; ``u_rate(coords, rates) -> du/dt`` (the chain rule of ``u`` in the
    coordinates); ``sign(coords)``: the orientation the lift keeps; ``applies(coords)``: starts on which ``u`` is a
    valid clock (increasing from the start, lift single-valued). ``g_ov(u, delta)``: the kind's
    :math:`G_{OV}(u) = \int_0^u y/\rho_{OV}(y)\,dy` (without ``R``; a test holds ``R g_ov`` to the generated
    ``r_g_ov``) and ``u_of_g(G, delta)`` its inverse on ``u > 0`` (both closed form for both kinds).
    ``panel_u``, ``panel_w``: quadrature panel widths in local scales when the curve is walked in ``u`` or in ``w``
    (the nearest singularity of the integrand differs by kind: a pole of :math:`1/u` at ``u = 0`` for factorized OV
    in ``u``, a square-root branch point at :math:`Y = 0` for collapsed OV in ``w``, :math:`u = \sqrt{2Y/R}`). Widths
    one step wider left errors above 2e-11: factorized OV in ``u`` at 8, 2.3e-11 (CAFO, K = 12, M = 12, start 1e-3,
    t ~ 560: Hypothesis); in ``w`` at 8, 3.8e-11 (FAFO, 64 trajectories); collapsed OV in ``w`` at 8, 3e-9 (FACO, t ~ 30).
    """

    size: int
    lift: Callable[..., tuple]
    u_rate: Callable[[tuple, tuple], np.ndarray]
    sign: Callable[[tuple], np.ndarray]
    applies: Callable[[tuple], np.ndarray]
    g_ov: Callable[[Any, Any], Any]
    u_of_g: Callable[[Any, Any], Any]
    panel_u: float
    panel_w: float


@dataclass(frozen=True)
class QkKind:
    r"""How one QK circuit kind's reduced coordinates follow from its walk coordinate and its conserved constants.

    ``constants(coords, K, M, A) -> tuple``: what the lift needs besides :math:`A_{QK}` (conserved along the flow);
    ``v_rate(coords, rates) -> dv/dt``; ``applies(coords, A)``: starts the lift and the clock hold on. Then either

    * ``v_of_g(G, K, M, settle) -> v``: :math:`G_{QK}` inverts in closed form (collapsed); the curve is walked in
      ``u`` (``v(u)`` closed form) and ``lift(v) -> coords``;
    * or ``scale(K, M, A) -> alpha``: :math:`\rho_{QK}(v) = |A|\cosh w` for :math:`v = \alpha\sinh w` (factorized);
      the curve is walked in ``w`` (``u(w)`` from the inverse of :math:`G_{OV}`, :math:`G_{QK}` carried along),
      ``lift_w(w, A, consts, K, M) -> coords`` and ``dg_dw(v, consts, K, M)`` = :math:`dG_{QK}/dw` (a test holds it to the
      generated integrands of :math:`G_{QK}`).
    """

    size: int
    constants: Callable[..., tuple]
    v_rate: Callable[[tuple, tuple], Any]
    applies: Callable[[tuple, Any], np.ndarray]
    v_of_g: Callable[..., np.ndarray] | None = None
    lift: Callable[[Any], tuple] | None = None
    scale: Callable[..., Any] | None = None
    lift_w: Callable[..., tuple] | None = None
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


def _kappa(K, M):
    r""":math:`\kappa = K(M+1)/(K+M+1)`: factorized QK's :math:`\rho_{QK}(v) = \sqrt{A^2 + 4\kappa v^2}`."""
    return K * (M + 1) / (K + M + 1)


def _factorized_qk_constants(c, K, M, A):
    r"""Factorized QK ``(a, b, c)``: :math:`L = Kb + (M+1)c` (conserved: :math:`K\dot b = -(M+1)\dot c`), the sign of
    ``a``, and the lift's scales :math:`\sqrt{A}`, :math:`\sqrt{A/\kappa}`, :math:`1/(2\sqrt\kappa)`."""
    sk = np.sqrt(_kappa(K, M))
    rA = np.sqrt(np.maximum(A, 0.0))
    return K * c[1] + (M + 1) * c[2], np.sign(c[0]), rA, rA / sk, 1 / (2 * sk)


def _factorized_qk_lift_w(w, A, consts, K, M):
    r"""Factorized QK ``(a, b, c)`` at :math:`v = \alpha\sinh w` (``A > 0``): with :math:`d = b - c`, :math:`v = ad` and
    :math:`A = a^2 - \kappa d^2` (theory's :math:`A_{QK}` with :math:`L = Kb + (M+1)c` substituted), so
    :math:`a = \sqrt{A}\cosh(w/2)`, :math:`d = \sqrt{A/\kappa}\sinh(w/2)` (:math:`ad = \alpha\sinh w`), and
    :math:`b = (L + (M+1)d)/(K+M+1)`, :math:`c = (L - Kd)/(K+M+1)`."""
    L, sign, rA, rAk, _ = consts
    a = sign * rA * np.cosh(w / 2)
    d = sign * rAk * np.sinh(w / 2)
    n = K + M + 1
    return a, (L + (M + 1) * d) / n, (L - K * d) / n


def _factorized_qk_dg_dw(v, consts, K, M):
    r""":math:`dG_{QK}/dw = \frac{e^v + M + 1}{\rho_{QK}(v)}\frac{dv}{dw} = \frac{e^v + M + 1}{2\sqrt\kappa}`
    (:math:`dv/dw = \alpha\cosh w`, :math:`\rho_{QK} = |A|\cosh w`)."""
    return (np.exp(v) + M + 1) * consts[4]


def _factorized_qk_scale(K, M, A):
    r""":math:`\alpha = |A|/(2\sqrt\kappa)`: with :math:`v = \alpha\sinh w`, :math:`\rho_{QK} = |A|\cosh w`."""
    return np.abs(A) / (2 * np.sqrt(_kappa(K, M)))


def _collapsed_v_of_g(G, K, M, settle: bool = True):
    r""":math:`e^v + (M+1)v - 1 = G` solved for ``v``: the Lambert-W closed form of
    :func:`theory.first_integrals.v_of_u_collapsed_qk`, :math:`v = Y/c - W_0(e^{Y/c}/c)` with :math:`c = M + 1`,
    :math:`Y = G + 1`, evaluated as the root of :math:`f(v) = e^v + cv - Y` by Halley's method (several times faster
    than :func:`scipy.special.wrightomega` here, and no overflow of :math:`e^{Y/c}`).

    ``f`` is convex and increasing, and the start :math:`\min(\log Y, Y/c)` (``Y > 1``) or :math:`Y/c` lies above
    the root (:math:`f > 0` there), so the iteration converges from it; for complex ``G`` (a complex step) the real root is
    corrected by one Newton step, exact to first order in the imaginary part.
    """
    c = M + 1.0
    Y = G + 1.0
    if np.iscomplexobj(Y):                     # complex step: the real root, then one Newton step for the rest
        v = _collapsed_v_of_g(np.real(G), K, M, settle)
        ev = np.exp(v)
        return v - (ev + c * v - Y) / (ev + c)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(Y > 1, np.minimum(np.log(Y), Y / c), Y / c)
    for k in range(60):
        # Halley: from this start the error is <= 4e-16 relative after 3 iterations for M + 1 in [2, 2000] and
        # G in [1e-3, 1e40] (measured); the 4th is checked, and the loop goes on only where it did not settle.
        # Inside the quadrature (``settle=False``) the 3 iterations are enough: the integrand needs ~1e-13.
        if k == 3 and not settle:
            break
        ev = np.exp(v)
        f = ev + c * v - Y
        d1 = ev + c
        step = f / (d1 - f * ev / (2 * d1))
        v = v - step
        if k >= 3 and not np.any(np.abs(step) > 4e-16 * np.maximum(1.0, np.abs(v))):
            break
    return v


OV_KINDS: dict[str, OvKind] = {
    "collapsed": OvKind(1, lambda u, delta, sign: (u,), lambda c, r: r[0],
                        lambda c: np.ones_like(c[0]), lambda c: np.isfinite(c[0]),
                        lambda u, delta: u * u / 2, lambda G, delta: np.sqrt(2 * G), panel_u=PANEL, panel_w=4.0),
    "factorized": OvKind(2, _factorized_lift, lambda c, r: r[0] * c[1] + c[0] * r[1],
                         lambda c: np.sign(c[0]), lambda c: (c[0] > 0) & (c[1] > 0),
                         _factorized_g_ov, _factorized_u_of_g, panel_u=6.0, panel_w=6.0),
}
"""OV circuit kind -> its lift from ``(u, delta)`` and its closed-form :math:`G_{OV}` and inverse."""

QK_KINDS: dict[str, QkKind] = {
    "collapsed": QkKind(1, lambda c, K, M, A: (), lambda c, r: r[0], lambda c, A: np.isfinite(c[0]),
                        v_of_g=_collapsed_v_of_g, lift=lambda v: (v,)),
    "factorized": QkKind(3, _factorized_qk_constants, lambda c, r: r[0] * (c[1] - c[2]) + c[0] * (r[1] - r[2]),
                         lambda c, A: (A > 0) & np.isfinite(c[1]) & np.isfinite(c[2]),
                         scale=_factorized_qk_scale, lift_w=_factorized_qk_lift_w, dg_dw=_factorized_qk_dg_dw),
}
"""QK circuit kind -> its lift from ``(v, A_QK, constants)`` and how its level curve is walked."""


def _first_integral(param: str) -> dict[str, Any]:
    """The generated first integral of ``param`` (an untyped table of generated functions)."""
    return cast(dict[str, Any], generated.FIRST_INTEGRALS[param])


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
def _cumulative(n: int) -> np.ndarray:
    r"""Spectral integration on ``[0, 1]``: ``S @ f(x)`` at the ``n`` Gauss nodes ``x`` is :math:`\int_0^{x_i} p`,
    ``p`` the polynomial interpolating ``f`` at the nodes (exact for degree ``n - 1``; ``(n, n)``)."""
    leg = np.polynomial.legendre
    z, _ = leg.leggauss(n)
    anti = leg.legint(_legendre_inverse(n), lbnd=-1, axis=0)          # (n + 1, n): antiderivatives, 0 at z = -1
    return leg.legvander(z, n) @ anti / 2


class _Curve:
    r"""The level curves of a batch, walked in a monotone coordinate ``s`` with a carried quantity ``c(s)``.

    Per trajectory ``(B,)`` constants; ``cols`` selects trajectories. The walk needs: ``rate(s, c, cols)``
    (:math:`ds/dt`), ``quad(a, b, c_a, cols)`` (:math:`\int_a^b dt`, the integrand at the nodes, and ``c(b)``),
    ``carry_at``, ``log_scale`` (:math:`|d\log(ds/dt)/ds|`), ``limit`` (panel widths shortened where the curve turns
    faster than the local scale foresees) and ``state(s, c)`` (the reduced coordinates).
    """

    panel: float
    panel_max: float
    s0: np.ndarray
    c0: np.ndarray

    def rate(self, s, c, cols):
        raise NotImplementedError

    def quad(self, a, b, c_a, cols):
        raise NotImplementedError

    def carry_at(self, a, b, c_a, cols):
        raise NotImplementedError

    def log_scale(self, s, c, cols):
        raise NotImplementedError

    def limit(self, a, width, c_a, cols):
        raise NotImplementedError

    def state(self, s, c):
        raise NotImplementedError

    def newton_done(self, step, x):
        raise NotImplementedError


def _coefficient(param, pars, delta, A, ov) -> np.ndarray:
    r""":math:`R` of :math:`H = G_{QK} - R\,G_{OV}` per trajectory: the generated :math:`R\,G_{OV}` over the kind's
    :math:`G_{OV}` at ``u = 1 + |delta|`` (well conditioned there: no cancellation in :math:`\sqrt{\delta^2+4u^2} - |\delta|`)."""
    ref = 1.0 + np.abs(delta)
    return np.asarray(_first_integral(param)["r_g_ov"](ref, 0.0, *pars, delta, A) / ov.g_ov(ref, delta), dtype=float)


class _UCurve(_Curve):
    r"""Collapsed QK: walked in ``u``, :math:`v(u) = G_{QK}^{-1}(H_0 + R\,G_{OV}(u))` in closed form (nothing carried)."""

    panel_max = PANEL_MAX

    def __init__(self, param, pars, delta, A, sign, g0, ov, qk, u0):
        self.param, self.pars, self.delta, self.A, self.sign, self.g0 = param, pars, delta, A, sign, g0
        self.ov, self.qk = ov, qk
        self.panel = ov.panel_u
        self.R = _coefficient(param, pars, delta, A, ov)
        self.s0, self.c0 = u0, np.zeros_like(u0)

    def _sub(self, cols):
        return (tuple(q[cols] for q in self.pars), self.sign[cols], self.delta[cols], self.A[cols], self.g0[cols])

    def v(self, u, pars=None, delta=None, A=None, g0=None, settle: bool = True):
        pars = self.pars if pars is None else pars
        fi = _first_integral(self.param)
        d = self.delta if delta is None else delta
        a = self.A if A is None else A
        h0 = self.g0 if g0 is None else g0
        G = h0 + fi["r_g_ov"](u, 0.0, *pars, d, a)
        return self.qk.v_of_g(G, pars[0], pars[1], settle)

    def _coords(self, u, v, sign=None, delta=None):
        return (*self.ov.lift(u, self.delta if delta is None else delta, self.sign if sign is None else sign),
                *self.qk.lift(v))

    def u_rate(self, u, pars=None, sign=None, delta=None, A=None, g0=None):
        pars = self.pars if pars is None else pars
        v = self.v(u, pars, delta, A, g0, settle=False)             # inside the quadrature: 1e-13 is plenty
        y = self._coords(u, v, sign, delta)
        rates = generated.RHS[self.param](*y, *pars)
        n = self.ov.size
        return self.ov.u_rate(y[:n], rates[:n])

    def rate(self, s, c, cols):
        return self.u_rate(s, *self._sub(cols))

    def quad(self, a, b, c_a, cols):
        x, w = _rule(NODES)
        h = b - a
        g = 1.0 / self.rate(a + h * x[:, None], None, cols)
        return h * (w @ g), g, c_a

    def carry_at(self, a, b, c_a, cols):
        return c_a

    def log_scale(self, s, c, cols):
        with np.errstate(all="ignore"):
            r = self.rate(s + 1j * _STEP, None, cols)
        return np.abs(r.imag / _STEP / r.real)

    def limit(self, a, width, c_a, cols, iterations: int = 30):
        r"""``width`` shortened where ``v`` would change by more than :data:`PANEL_V` over ``[a, a + width]``.

        ``v(u)`` increases for ``u > 0``, so the end is where :math:`v = v(a) + ` :data:`PANEL_V`, i.e. where
        :math:`R\,G_{OV}(u) = G_{QK}(v(a) + \text{PANEL\_V}) - H_0` (both sides closed form): for ``a > 0`` the OV
        kind's closed-form inverse of :math:`G_{OV}` gives it. A collapsed-OV start at ``u <= 0`` (``v`` first falls)
        takes Newton's method from ``a + width`` instead (:math:`R\,G_{OV}` is convex; derivative by a complex step;
        a rough end is enough, so it stops at a relative step of 1e-6).
        """
        pars, _, delta, A, g0 = self._sub(cols)
        fi = _first_integral(self.param)
        v_a = self.v(a, pars, delta, A, g0)
        target = fi["g_qk_closed"](a, v_a + PANEL_V, *pars, delta, A) - g0
        x = a + width
        over = fi["r_g_ov"](x, 0.0, *pars, delta, A) > target
        if not over.any():
            return width
        out = width.copy()
        closed = over & (a > 0)
        if closed.any():
            end = self.ov.u_of_g(target[closed] / self.R[cols][closed], delta[closed])
            out[closed] = np.maximum(end - a[closed], 1e-3 * width[closed])
        newton = over & ~closed
        if newton.any():
            x, tgt, sub_pars = x[newton], target[newton], tuple(q[newton] for q in pars)
            d_, A_ = delta[newton], A[newton]
            for _ in range(iterations):
                r = fi["r_g_ov"](x + 1j * _STEP, 0.0, *sub_pars, d_, A_)
                step = (r.real - tgt) / (r.imag / _STEP)
                x = x - step
                if not np.any(np.abs(step) > 1e-6 * (1.0 + np.abs(x))):
                    break
            out[newton] = np.maximum(x - a[newton], 1e-3 * width[newton])
        return out

    def state(self, s, c):
        return self._coords(s, self.v(s))

    def newton_done(self, step, x):
        # quadratic convergence: the error after a step is ~ step^2 |F''/2F'| (F = log t(u)), and |F''/F'| <~ 1/u
        # (g ~ 1/u near a factorized start), so a step <= 1e-8 |u| leaves ~1e-16 |u|; from the dense start that is
        # usually the first step late, the second early (a relative 1e-6 here failed near u = 1e-3: Hypothesis)
        return np.abs(step) <= 1e-8 * np.abs(x) + 1e-300


PANEL_MAX_W = 3.0
"""Largest panel width in ``w`` (factorized QK): the carried :math:`G_{QK}` is integrated spectrally from the panel's
nodes, and its integrand holds :math:`e^{\\alpha\\sinh w}`; a degree-19 interpolant of :math:`e^{w}` over width 3 is
good to ~1e-15 relative."""


class _WCurve(_Curve):
    r"""Factorized QK: walked in ``w`` with :math:`v = \alpha\sinh w`, :math:`\alpha = |A_{QK}|/(2\sqrt\kappa)`.

    :math:`G_{QK}` is an integral with no closed-form inverse, but :math:`\rho_{QK}(v)\,dw = |A|\cosh w\,dw` makes its
    integrand in ``w`` entire: the carried :math:`Y(w) = G_{QK}(v(w)) - H_0 = R\,G_{OV}(u)` grows by
    :math:`dY/dw = (e^v + M + 1)/(2\sqrt\kappa)` (the kind's ``dg_dw``), summed spectrally from the panel's own nodes,
    and :math:`u(w) = G_{OV}^{-1}(Y/R)` is closed form.
    """

    panel_max = PANEL_MAX_W

    def __init__(self, param, pars, delta, A, sign, ov, qk, u0, v0, qk_consts):
        self.param, self.ov, self.qk = param, ov, qk
        self.panel = ov.panel_w
        K, M = pars[0], pars[1]
        alpha = np.asarray(qk.scale(K, M, A), dtype=float)
        R = _coefficient(param, pars, delta, A, ov)
        self.s0 = np.arcsinh(v0 / alpha)
        self.c0 = np.asarray(R * ov.g_ov(u0, delta), dtype=float)       # = r_g_ov(u0), without its cancellation
        # every per-trajectory constant in one (rows, B) table: one gather per call
        self.n_pars, self.n_consts = len(pars), len(qk_consts)
        self.table = np.stack(np.broadcast_arrays(*pars, delta, A, sign, *qk_consts, alpha, R)).astype(float)
        self._cols: Any = None
        self._rows: tuple = ()

    def _sub(self, cols):
        if cols is self._cols:                   # the panel loop passes one index array to several calls
            return self._rows
        rows = self.table[:, cols]
        n, m = self.n_pars, self.n_consts
        self._cols, self._rows = cols, (tuple(rows[:n]), rows[n], rows[n + 1], rows[n + 2], tuple(rows[n + 3:n + 3 + m]), rows[-2], rows[-1])
        return self._rows

    def dY(self, w, cols):
        r""":math:`dY/dw = dG_{QK}/dw` at ``w`` (any shape ending in the trajectories ``cols``)."""
        pars, _, _, _, consts, alpha, _ = self._sub(cols)
        return self.qk.dg_dw(alpha * np.sinh(w), consts, pars[0], pars[1])

    def _coords_sub(self, w, Y, sub):
        pars, delta, A, sign, consts, alpha, R = sub
        u = self.ov.u_of_g(Y / R, delta)
        return (*self.ov.lift(u, delta, sign), *self.qk.lift_w(w, A, consts, pars[0], pars[1]))

    def rate(self, s, c, cols):
        sub = self._sub(cols)
        y = self._coords_sub(s, c, sub)
        rates = generated.RHS[self.param](*y, *sub[0])
        n = self.ov.size
        return self.qk.v_rate(y[n:], rates[n:]) / (sub[5] * np.cosh(s))

    def carry_at(self, a, b, c_a, cols):
        x, w = _rule(NODES)
        h = b - a
        return c_a + h * (w @ self.dY(a + h * x[:, None], cols))

    def quad(self, a, b, c_a, cols):
        x, w = _rule(NODES)
        h = b - a
        nodes = a + h * x[:, None]
        q = self.dY(nodes, cols)
        Y = c_a + h * (_cumulative(NODES) @ q)
        g = 1.0 / self.rate(nodes, Y, cols)
        return h * (w @ g), g, c_a + h * (w @ q)

    def log_scale(self, s, c, cols):
        with np.errstate(all="ignore"):
            r = self.rate(s + 1j * _STEP, c + 1j * _STEP * self.dY(s, cols), cols)
        return np.abs(r.imag / _STEP / r.real)

    def limit(self, a, width, c_a, cols):
        r"""``width`` shortened where ``v`` would change by more than :data:`PANEL_V` (closed form in ``w``) or ``u``
        by more than :data:`PANEL_MAX` (``Y`` grows at most at the end's rate :math:`dY/dw`, which increases)."""
        _, delta, _, _, _, alpha, R = self._sub(cols)
        v_a = alpha * np.sinh(a)
        width = np.minimum(width, np.arcsinh((v_a + PANEL_V) / alpha) - a)
        u_a = self.ov.u_of_g(c_a / R, delta)
        room = R * self.ov.g_ov(u_a + PANEL_MAX, delta) - c_a
        with np.errstate(all="ignore"):
            cap = room / self.dY(a + width, cols)
        return np.where(cap < width, np.maximum(cap, 1e-3 * width), width)

    def state(self, s, c):
        return self._coords_sub(s, c, self._sub(slice(None)))

    def newton_done(self, step, x):
        # w = O(1-10) and |F''/F'| (F = log t(w)) ~ u v late: a step <= 1e-10 leaves ~1e-18 in w
        return np.abs(step) <= 1e-10 * np.maximum(1.0, np.abs(x))


def _curve(param: Parametrization, y0: np.ndarray, params: np.ndarray) -> tuple[_Curve, np.ndarray, np.ndarray]:
    """The batch's curve, its start ``s0`` and where the clock-free path applies (``(B,)``)."""
    p = Parametrization(param)
    fi = _first_integral(str(p))
    pars = tuple(np.asarray(x, dtype=float) for x in params)
    u0, v0, delta, A = (np.broadcast_to(np.asarray(x, dtype=float), y0.shape[1:]).copy()
                        for x in fi["constants"](*y0, *pars))
    ov, qk = OV_KINDS[p.ov.kind.name], QK_KINDS[p.qk.kind.name]
    ov_y, qk_y = tuple(y0[:ov.size]), tuple(y0[ov.size:])
    sign = np.broadcast_to(ov.sign(ov_y), u0.shape).astype(float)
    ok = np.asarray(ov.applies(ov_y), dtype=bool) & np.asarray(qk.applies(qk_y, A), dtype=bool)
    curve: _Curve
    if qk.v_of_g is not None:
        g0 = fi["g_qk_closed"](u0, v0, *pars, delta, A) - fi["r_g_ov"](u0, v0, *pars, delta, A)
        curve = _UCurve(str(p), pars, delta, A, sign, np.asarray(g0, dtype=float), ov, qk, u0)
    else:
        consts = tuple(np.broadcast_to(np.asarray(x, dtype=float), u0.shape).copy()
                       for x in qk.constants(qk_y, pars[0], pars[1], A))
        curve = _WCurve(str(p), pars, delta, A, sign, ov, qk, u0, v0, consts)
        ok &= u0 > 0                                      # v (and w) increase only where u > 0
    return curve, curve.s0, ok


@lru_cache(maxsize=None)
def _end_derivative(n: int) -> np.ndarray:
    r"""Row ``(n,)``: node values on ``[-1, 1]`` -> the interpolant's derivative at ``z = 1``
    (:math:`P_k'(1) = k(k+1)/2`)."""
    k = np.arange(n)
    return (k * (k + 1) / 2) @ _legendre_inverse(n)


def _end_log_slope(g, width) -> np.ndarray:
    r""":math:`|d\log g/ds|` at a panel's end from ``g`` at its Gauss nodes ``(NODES, m)`` (the degree-19 interpolant
    of :math:`\log g`, differentiated at the end; ``2/width`` maps ``z`` to ``s``)."""
    with np.errstate(all="ignore"):
        return np.abs(_end_derivative(g.shape[0]) @ np.log(g)) * 2 / width


def _dense_start(G, k, bb, lo, hi, t_lo, tj, x, iterations: int = 8) -> np.ndarray:
    r"""Newton starts from the panels' own nodes: the interpolating polynomial of ``g`` at the panel's Gauss nodes,
    integrated (a Legendre series), gives ``t`` inside the panel to ~1e-7 relative without new evaluations; a few
    safeguarded Newton steps on it (clipped to the panel) put each start within ~1e-7, so the exact Newton iteration
    that follows needs one or two quadratures instead of four or five.

    ``G``: ``(P, NODES, B)`` node values per panel; ``k, bb``: panel and trajectory of each requested time.
    """
    leg = np.polynomial.legendre
    vinv = _legendre_inverse(NODES)
    ok = k < G.shape[0]
    out = x.copy()
    if not ok.any():
        return out
    g = G[k[ok], :, bb[ok]].T                                 # (NODES, m)
    coef = vinv @ g                                           # Legendre series of g on z in [-1, 1]
    anti = leg.legint(coef, lbnd=-1, axis=0)                  # its antiderivative, 0 at z = -1
    h = (hi - lo)[ok]
    with np.errstate(all="ignore"):
        z = np.clip(2 * (x[ok] - lo[ok]) / h - 1, -1.0, 1.0)
        for _ in range(iterations):
            tz = t_lo[ok] + h / 2 * leg.legval(z, anti, tensor=False)
            gz = leg.legval(z, coef, tensor=False)
            z = np.clip(z - np.log(tz / tj[ok]) * tz / (h / 2 * gz), -1.0, 1.0)
        good = np.isfinite(z)
    out[np.flatnonzero(ok)[good]] = (lo[ok] + (z + 1) / 2 * h)[good]
    return out


def integrate_clock_free(param: Parametrization, y0: np.ndarray, params: np.ndarray, t_eval: np.ndarray):
    r"""States of ``B`` trajectories at times ``t_eval`` from their first integral and one quadrature.

    Args:
        y0: reduced start states ``(n_state, B)`` on which :func:`applies` holds.
        params: ``(4, B)``: K, M, eta_qk, eta_ov per trajectory.
        t_eval: strictly increasing times ``>= 0``, ``(T,)``.

    Returns:
        :class:`simulation.batch.BatchSolution` with ``y (n_state, T, B)`` and ``tau = log(1 + t_eval)``;
        ``steps`` counts quadrature panels, ``rejected`` is 0, ``nfev`` counts right-hand-side evaluations (each over
        the trajectories then running), ``success`` that every state is finite.
    """
    from simulation.batch import BatchSolution

    y0 = np.asarray(y0, dtype=float)
    params = np.asarray(params, dtype=float)
    t_eval = np.asarray(t_eval, dtype=float)
    n, B = y0.shape
    if B > CHUNK:
        parts = [integrate_clock_free(param, y0[:, i:i + CHUNK], params[:, i:i + CHUNK], t_eval)
                 for i in range(0, B, CHUNK)]
        return BatchSolution(parts[0].tau, np.concatenate([s.y for s in parts], axis=2),
                             np.concatenate([s.steps for s in parts]), np.concatenate([s.rejected for s in parts]),
                             sum(s.nfev for s in parts), np.concatenate([s.success for s in parts]), "clock-free")
    T = t_eval.size
    curve, s0, _ = _curve(param, y0, params)
    t_max = float(t_eval[-1])
    # -- panels: s_k, the carried c_k and the cumulative time t_k at their starts, all trajectories in lock step --
    starts, carries, times = [s0.copy()], [curve.c0.copy()], [np.zeros(B)]
    nodes: list[np.ndarray] = []
    s, c, t = s0.copy(), curve.c0.copy(), np.zeros(B)
    running = np.flatnonzero(t < t_max)
    nfev = 0
    for _ in range(MAX_PANELS):
        if running.size == 0:
            break
        a, c_a = s[running], c[running]
        if nodes:                                 # the previous panel's interpolant, at its end (= this start)
            scale = _end_log_slope(nodes[-1][:, running], (s - starts[-2])[running])
        else:
            scale = curve.log_scale(a, c_a, running)
        width = np.minimum(curve.panel_max, curve.panel / np.maximum(scale, 1e-300))
        width = curve.limit(a, width, c_a, running)
        dt, g_nodes, c_b = curve.quad(a, a + width, c_a, running)
        at = np.full((NODES, B), np.nan)
        at[:, running] = g_nodes
        nodes.append(at)
        nfev += NODES + 1
        s[running] = a + width
        c[running] = c_b
        t[running] += dt
        bad = ~np.isfinite(t[running]) | ~(dt > 0)
        t[running[bad]] = np.nan
        starts.append(s.copy())
        carries.append(c.copy())
        times.append(t.copy())
        running = running[~bad & (t[running] < t_max)]
    S = np.array(starts)                          # (P + 1, B): panel boundaries (the last repeats once reached)
    C = np.array(carries)
    Tc = np.array(times)
    # -- the panel of each requested time, then Newton on log t inside it --------------------------------
    out_s = np.full((T, B), np.nan)
    out_c = np.full((T, B), np.nan)
    jj, bb = np.repeat(np.arange(T), B), np.tile(np.arange(B), T)       # every (time, trajectory) pair
    tj = t_eval[jj]
    at_start = tj <= 0
    out_s[jj[at_start], bb[at_start]] = s0[bb[at_start]]
    out_c[jj[at_start], bb[at_start]] = curve.c0[bb[at_start]]
    live = ~at_start & np.isfinite(Tc[-1, bb]) & (Tc[-1, bb] >= tj)
    jj, bb, tj = jj[live], bb[live], tj[live]
    # k: last boundary with t_k <= t_j  (column-wise search; Tc is non-decreasing in k)
    k = np.sum(Tc[:, bb] <= tj[None, :], axis=0) - 1
    k1 = np.minimum(k + 1, S.shape[0] - 1)
    lo, hi = S[k, bb], S[k1, bb]
    t_lo, t_hi = Tc[k, bb], Tc[k1, bb]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(t_lo > 0, np.log(tj / t_lo) / np.log(t_hi / t_lo), tj / t_hi)
    x = lo + (hi - lo) * np.clip(np.nan_to_num(frac, nan=0.5), 0.0, 1.0)
    if nodes:
        x = _dense_start(np.array(nodes), k, bb, lo, hi, t_lo, tj, x)
    a0, t0, c0 = lo.copy(), t_lo.copy(), C[k, bb]
    idx = np.arange(tj.size)
    for _ in range(NEWTON_STEPS):
        if idx.size == 0:
            break
        xa = x[idx]
        part, _, cx = curve.quad(a0[idx], xa, c0[idx], bb[idx])
        nfev += NODES
        tx = t0[idx] + part
        gx = 1.0 / curve.rate(xa, cx, bb[idx])
        nfev += 1
        F = np.log(tx / tj[idx])
        below = F < 0
        lo[idx] = np.where(below, xa, lo[idx])
        hi[idx] = np.where(below, hi[idx], xa)
        step = -F * tx / gx
        done = curve.newton_done(step, xa)
        new = xa + step
        outside = ~((new >= lo[idx]) & (new <= hi[idx]))
        new = np.where(outside & ~done, (lo[idx] + hi[idx]) / 2, new)
        x[idx] = new
        idx = idx[~done & (hi[idx] > lo[idx])]
    out_s[jj, bb] = x
    out_c[jj, bb] = curve.carry_at(a0, x, c0, bb)
    ys = np.stack(np.broadcast_arrays(*curve.state(out_s, out_c)))
    # t = 0 exactly: the start itself, bit for bit
    zero = t_eval <= 0
    if zero.any():
        ys[:, zero, :] = y0[:, None, :]
    success = np.all(np.isfinite(ys), axis=(0, 1))
    steps = np.sum(np.diff(S, axis=0) != 0, axis=0).astype(np.int64)
    return BatchSolution(np.log1p(t_eval), ys, steps, np.zeros(B, dtype=np.int64), nfev, success, "clock-free")


def applies(param: Parametrization, y0: np.ndarray, params: np.ndarray) -> np.ndarray:
    """Per start ``(B,)``: the clock-free path is valid (the kinds' ``applies``: for factorized OV ``s_O, s_V > 0``,
    for factorized QK :math:`A_{QK} > 0` and ``u > 0``). ``params``: ``(4, B)`` as for :func:`integrate_clock_free`."""
    y0 = np.asarray(y0, dtype=float)
    return _curve(param, y0, np.broadcast_to(np.asarray(params, dtype=float), (4, y0.shape[1])))[2]


__all__ = ["OV_KINDS", "QK_KINDS", "OvKind", "QkKind", "applies", "clock_free_capable", "integrate_clock_free",
           "NODES", "PANEL", "PANEL_MAX"]
