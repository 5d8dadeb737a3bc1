r"""Clock-free integration of the reduced flows that have a first integral with ``v(u)`` in closed form.

Along every trajectory :math:`H(u, v) = G_{QK}(v) - R\,G_{OV}(u)` is constant (:mod:`theory.first_integrals`,
generated into :data:`simulation.generated.FIRST_INTEGRALS`), and ``u`` increases strictly (:math:`\dot u > 0`).
Where :math:`G_{QK}` inverts in closed form the 2-D flow collapses to one quadrature:

.. math::
    v(u) = G_{QK}^{-1}\bigl(H_0 + R\,G_{OV}(u)\bigr),\qquad
    t(u) = \int_{u_0}^{u}\frac{dx}{\dot u\bigl(x, v(x)\bigr)},

and the state at a requested time is the root of :math:`\log t(u) = \log t_j`. Nothing is stepped in time, so the
cost does not grow with ``t`` the way a clock's error does: it is the number of quadrature panels over
``[u_0, u(t)]`` (:math:`u \sim \log t`).

* **Quadrature**: Gauss-Legendre with :data:`NODES` nodes on panels of ``u``; a panel's width is
  :data:`PANEL` times the local scale of the integrand, :math:`|d\log g/du|^{-1}` with :math:`g = 1/\dot u` (by a
  complex step), and at most :data:`PANEL_MAX`. Panels advance for all trajectories at once until each has passed
  its last requested time.
* **Root**: inside the panel that holds :math:`t_j`, a bracketed Newton iteration on :math:`\log t` (derivative
  :math:`g/t`), each iterate's :math:`t` by the same Gauss-Legendre rule from the panel's start; a step leaving the
  bracket bisects instead.

All of it is vectorised in numpy over trajectories (and requested times); the only Python loops run over panels and
Newton iterations.

Which systems: :data:`OV_KINDS` and :data:`QK_KINDS` hold, per circuit kind, how the kind's reduced coordinates
follow from ``(u, v)`` and the conserved constants, and (QK) the closed-form inverse of :math:`G_{QK}`. A
parametrization is integrated clock-free when it has a first integral and both its kinds have an entry
(:func:`clock_free_capable`): CACO and CAFO. Factorized QK (FACO, FAFO) has :math:`G_{QK}` only as an integral and no
closed-form inverse; it stays on the batch integrator (:mod:`simulation.batch`), like every system without a first
integral.
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
    valid clock (increasing from the start, lift single-valued).
    """

    size: int
    lift: Callable[..., tuple]
    u_rate: Callable[[tuple, tuple], np.ndarray]
    sign: Callable[[tuple], np.ndarray]
    applies: Callable[[tuple], np.ndarray]


@dataclass(frozen=True)
class QkKind:
    r"""A QK kind whose :math:`G_{QK}` inverts in closed form: ``v_of_g(G, K, M, settle) -> v`` (``settle=False``: a fixed few iterations, for integrands) and ``lift(v) -> coords``."""

    size: int
    v_of_g: Callable[..., np.ndarray]
    lift: Callable[[np.ndarray], tuple]


def _factorized_lift(u, delta, sign):
    r""":math:`s_O^2 - s_V^2 = \delta`, :math:`s_O s_V = u`: :math:`s_O^2 = (\delta + \rho)/2`,
    :math:`\rho = \sqrt{\delta^2 + 4u^2}` (written without cancellation for :math:`\delta < 0`)."""
    rho = np.sqrt(delta * delta + 4 * u * u)
    so2 = np.where(delta >= 0, (delta + rho) / 2, 2 * u * u / (rho - delta + (delta == 0)))
    s_O = sign * np.sqrt(so2)
    return s_O, u / s_O


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
                        lambda c: np.ones_like(c[0]), lambda c: np.isfinite(c[0])),
    "factorized": OvKind(2, _factorized_lift, lambda c, r: r[0] * c[1] + c[0] * r[1],
                         lambda c: np.sign(c[0]), lambda c: (c[0] > 0) & (c[1] > 0)),
}
"""OV circuit kind -> its lift from ``(u, delta)``."""

QK_KINDS: dict[str, QkKind] = {
    "collapsed": QkKind(1, _collapsed_v_of_g, lambda v: (v,)),
}
"""QK circuit kind -> closed-form inverse of :math:`G_{QK}` (only where there is one)."""


def _first_integral(param: str) -> dict[str, Any]:
    """The generated first integral of ``param`` (an untyped table of generated functions)."""
    return cast(dict[str, Any], generated.FIRST_INTEGRALS[param])


def clock_free_capable(param: Parametrization) -> bool:
    """Whether ``param`` has a first integral and both its circuit kinds an entry in :data:`OV_KINDS`/:data:`QK_KINDS`."""
    p = Parametrization(param)
    return (str(p) in generated.FIRST_INTEGRALS and p.ov.kind.name in OV_KINDS and p.qk.kind.name in QK_KINDS
            and not _first_integral(str(p))["g_qk_integrals"])


@dataclass(frozen=True)
class _Curve:
    """The level curves of a batch: constants per trajectory ``(B,)`` and the maps along them."""

    param: str
    pars: tuple[np.ndarray, ...]          # K, M, eta_qk, eta_ov
    delta: np.ndarray
    A: np.ndarray
    sign: np.ndarray
    g0: np.ndarray                        # G_QK(v0) - R G_OV(u0) = H0
    ov: OvKind
    qk: QkKind

    def v(self, u, pars=None, delta=None, A=None, g0=None, settle: bool = True):
        pars = self.pars if pars is None else pars
        fi = _first_integral(self.param)
        d = self.delta if delta is None else delta
        a = self.A if A is None else A
        h0 = self.g0 if g0 is None else g0
        G = h0 + fi["r_g_ov"](u, 0.0, *pars, d, a)
        return self.qk.v_of_g(G, pars[0], pars[1], settle)

    def state(self, u, v, sign=None, delta=None):
        return (*self.ov.lift(u, self.delta if delta is None else delta, self.sign if sign is None else sign),
                *self.qk.lift(v))

    def u_rate(self, u, pars=None, sign=None, delta=None, A=None, g0=None):
        pars = self.pars if pars is None else pars
        v = self.v(u, pars, delta, A, g0, settle=False)             # inside the quadrature: 1e-13 is plenty
        y = self.state(u, v, sign, delta)
        rates = generated.RHS[self.param](*y, *pars)
        n = self.ov.size
        return self.ov.u_rate(y[:n], rates[:n])


def _curve(param: Parametrization, y0: np.ndarray, params: np.ndarray) -> tuple[_Curve, np.ndarray, np.ndarray]:
    p = Parametrization(param)
    fi = _first_integral(str(p))
    pars = tuple(np.asarray(x, dtype=float) for x in params)
    u0, v0, delta, A = (np.broadcast_to(np.asarray(x, dtype=float), y0.shape[1:]).copy()
                        for x in fi["constants"](*y0, *pars))
    ov, qk = OV_KINDS[p.ov.kind.name], QK_KINDS[p.qk.kind.name]
    sign = np.broadcast_to(ov.sign(tuple(y0[:ov.size])), u0.shape).astype(float)
    g0 = fi["g_qk_closed"](u0, v0, *pars, delta, A) - fi["r_g_ov"](u0, v0, *pars, delta, A)
    curve = _Curve(str(p), pars, delta, A, sign, np.asarray(g0, dtype=float), ov, qk)
    return curve, u0, np.asarray(ov.applies(tuple(y0[:ov.size])), dtype=bool)


@lru_cache(maxsize=None)
def _rule(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1) / 2, w / 2                     # on [0, 1]


def _integral(curve: _Curve, a, b, cols):
    r""":math:`\int_a^b g` for arrays ``a, b`` of trajectories ``cols`` (Gauss-Legendre, :data:`NODES` nodes)."""
    x, w = _rule(NODES)
    h = b - a
    uu = a + h * x[:, None]
    g = 1.0 / curve.u_rate(uu, *_sub(curve, cols))
    return h * (w @ g), g


def _sub(curve: _Curve, cols):
    return (tuple(q[cols] for q in curve.pars), curve.sign[cols], curve.delta[cols], curve.A[cols], curve.g0[cols])


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


@lru_cache(maxsize=None)
def _legendre_inverse(n: int) -> np.ndarray:
    """Values at the ``n`` Gauss-Legendre nodes -> Legendre coefficients of the interpolating polynomial."""
    z, _ = np.polynomial.legendre.leggauss(n)
    return np.linalg.inv(np.polynomial.legendre.legvander(z, n - 1))


def _log_scale(curve: _Curve, u, cols) -> np.ndarray:
    r""":math:`|d\log g/du|` at ``u`` by a complex step (``g = 1/\dot u``; every map on the curve is analytic)."""
    with np.errstate(all="ignore"):
        r = curve.u_rate(u + 1j * _STEP, *_sub(curve, cols))
    return np.abs(r.imag / _STEP / r.real)


def _limit_v_change(curve: _Curve, a, width, cols, iterations: int = 30) -> np.ndarray:
    r"""``width`` shortened where ``v`` would change by more than :data:`PANEL_V` over ``[a, a + width]``.

    ``v(u)`` increases for ``u > 0``, so the end is where :math:`v = v(a) + ` :data:`PANEL_V`, i.e. where
    :math:`R\,G_{OV}(u) = G_{QK}(v(a) + \text{PANEL\_V}) - H_0` (both sides closed form). :math:`R\,G_{OV}` is
    convex and increasing in ``u`` (:math:`u^2` collapsed, :math:`\sqrt{\delta^2 + 4u^2}` factorized), so Newton's
    method from ``a + width`` (above the root) decreases monotonically to it; the derivative is a complex step.
    Only a rough end is needed (a panel's width), so it stops at a relative step of 1e-6.
    """
    pars, _, delta, A, g0 = _sub(curve, cols)
    fi = _first_integral(curve.param)
    v_a = curve.v(a, pars, delta, A, g0)
    target = fi["g_qk_closed"](a, v_a + PANEL_V, *pars, delta, A) - g0
    x = a + width
    over = fi["r_g_ov"](x, 0.0, *pars, delta, A) > target
    if not over.any():
        return width
    x, tgt, sub_pars = x[over], target[over], tuple(q[over] for q in pars)
    d_, A_ = delta[over], A[over]
    for _ in range(iterations):
        r = fi["r_g_ov"](x + 1j * _STEP, 0.0, *sub_pars, d_, A_)
        step = (r.real - tgt) / (r.imag / _STEP)
        x = x - step
        if not np.any(np.abs(step) > 1e-6 * (1.0 + np.abs(x))):
            break
    out = width.copy()
    out[over] = np.maximum(x - a[over], 1e-3 * width[over])
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
    curve, u0, _ = _curve(param, y0, params)
    t_max = float(t_eval[-1])
    # -- panels: u_k and the cumulative time t_k at their starts, for all trajectories in lock step --------
    starts, times, nodes = [u0.copy()], [np.zeros(B)], []
    u, t = u0.copy(), np.zeros(B)
    running = np.flatnonzero(t < t_max)
    nfev = 0
    for _ in range(MAX_PANELS):
        if running.size == 0:
            break
        a = u[running]
        width = np.minimum(PANEL_MAX, PANEL / np.maximum(_log_scale(curve, a, running), 1e-300))
        width = _limit_v_change(curve, a, width, running)
        dt, g_nodes = _integral(curve, a, a + width, running)
        at = np.full((NODES, B), np.nan)
        at[:, running] = g_nodes
        nodes.append(at)
        nfev += NODES + 1
        u[running] = a + width
        t[running] += dt
        bad = ~np.isfinite(t[running]) | ~(dt > 0)
        t[running[bad]] = np.nan
        starts.append(u.copy())
        times.append(t.copy())
        running = running[~bad & (t[running] < t_max)]
    U = np.array(starts)                          # (P + 1, B): panel boundaries (the last repeats once reached)
    Tc = np.array(times)
    # -- the panel of each requested time, then Newton on log t inside it --------------------------------
    out_u = np.full((T, B), np.nan)
    jj, bb = np.repeat(np.arange(T), B), np.tile(np.arange(B), T)       # every (time, trajectory) pair
    tj = t_eval[jj]
    at_start = tj <= 0
    out_u[jj[at_start], bb[at_start]] = u0[bb[at_start]]
    live = ~at_start & np.isfinite(Tc[-1, bb]) & (Tc[-1, bb] >= tj)
    jj, bb, tj = jj[live], bb[live], tj[live]
    # k: last boundary with t_k <= t_j  (column-wise search; Tc is non-decreasing in k)
    k = np.sum(Tc[:, bb] <= tj[None, :], axis=0) - 1
    lo, hi = U[k, bb], U[np.minimum(k + 1, U.shape[0] - 1), bb]
    t_lo, t_hi = Tc[k, bb], Tc[np.minimum(k + 1, U.shape[0] - 1), bb]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(t_lo > 0, np.log(tj / t_lo) / np.log(t_hi / t_lo), tj / t_hi)
    x = lo + (hi - lo) * np.clip(np.nan_to_num(frac, nan=0.5), 0.0, 1.0)
    if nodes:
        x = _dense_start(np.array(nodes), k, bb, lo, hi, t_lo, tj, x)
    a0, t0 = lo.copy(), t_lo.copy()
    idx = np.arange(tj.size)
    for _ in range(NEWTON_STEPS):
        if idx.size == 0:
            break
        xa = x[idx]
        part, g = _integral(curve, a0[idx], xa, bb[idx])
        nfev += NODES
        tx = t0[idx] + part
        gx = 1.0 / curve.u_rate(xa, *_sub(curve, bb[idx]))
        nfev += 1
        F = np.log(tx / tj[idx])
        below = F < 0
        lo[idx] = np.where(below, xa, lo[idx])
        hi[idx] = np.where(below, hi[idx], xa)
        step = -F * tx / gx
        # quadratic convergence: the error after a step is ~ step^2 |F''/2F'| (F = log t(u)), and |F''/F'| <~ 1/u
        # (g ~ 1/u near a factorized start), so a step <= 1e-8 |u| leaves ~1e-16 |u|; from the dense start that is
        # usually the first step late, the second early (a relative 1e-6 here failed near u = 1e-3: Hypothesis)
        done = np.abs(step) <= 1e-8 * np.abs(xa) + 1e-300
        new = xa + step
        outside = ~((new >= lo[idx]) & (new <= hi[idx]))
        new = np.where(outside & ~done, (lo[idx] + hi[idx]) / 2, new)
        x[idx] = new
        idx = idx[~done & (hi[idx] > lo[idx])]
    out_u[jj, bb] = x
    uu = out_u
    vv = curve.v(uu)
    ys = np.stack(np.broadcast_arrays(*curve.state(uu, vv)))
    # t = 0 exactly: the start itself, bit for bit
    zero = t_eval <= 0
    if zero.any():
        ys[:, zero, :] = y0[:, None, :]
    success = np.all(np.isfinite(ys), axis=(0, 1))
    steps = np.sum(np.diff(U, axis=0) != 0, axis=0).astype(np.int64)
    return BatchSolution(np.log1p(t_eval), ys, steps, np.zeros(B, dtype=np.int64), nfev, success, "clock-free")


def applies(param: Parametrization, y0: np.ndarray) -> np.ndarray:
    """Per start ``(B,)``: the clock-free path is valid (see :class:`OvKind`'s ``applies``)."""
    p = Parametrization(param)
    y0 = np.asarray(y0, dtype=float)
    return np.asarray(OV_KINDS[p.ov.kind.name].applies(tuple(y0[:OV_KINDS[p.ov.kind.name].size])), dtype=bool)


__all__ = ["OV_KINDS", "QK_KINDS", "OvKind", "QkKind", "applies", "clock_free_capable", "integrate_clock_free",
           "NODES", "PANEL", "PANEL_MAX"]
