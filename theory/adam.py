r"""Adam's limit flows on the symmetric set: sign descent (:math:`\varepsilon \to 0`) and rescaled GD (late phase).

Adam with :math:`\beta_1 = \beta_2 = 0` updates every *entry* :math:`w_e` of every full matrix by

.. math::
    \dot w_e = -\eta_c\,\varphi_\varepsilon(g_e),\qquad \varphi_\varepsilon(g) = \frac{g}{|g| + \varepsilon},
    \qquad g_e = \partial\mathcal L/\partial w_e,

(one step of Adam(lr = :math:`\eta_c\,dt`) is the Euler step of this flow), with
:math:`\eta_c = \eta_{QK}` or :math:`\eta_{OV}` by circuit. Entries with zero gradient do not move
(:math:`\varphi_\varepsilon(0) = 0`).

Reduction. Each reduced coordinate :math:`x_i` of :mod:`theory.reduced` scales a fixed matrix
pattern :math:`D^{(i)}` whose entries take one value :math:`D_o` on each orbit ``o`` of
:math:`|o|` entries (:class:`EntryPattern`), with :math:`\sum_o |o| D_o^2 = n_i` (the multiplicity of
:mod:`theory.reduced`, checked). On the symmetric set the gradient of an entry of orbit ``o`` is
:math:`g_o = G_i D_o / n_i`, :math:`G_i = \partial\mathcal L/\partial x_i`. The update is again constant
on orbits, so it is the pattern times

.. math::
    \dot x_i = -\frac{\eta_c}{n_i}\sum_o |o|\, D_o\, \varphi_\varepsilon\!\Bigl(\frac{G_i D_o}{n_i}\Bigr)

plus a remainder that is constant across each OV column / the QK query column (checked), which
the loss does not see (softmax shift invariance; for a factorized OV circuit the remainder is a
multiple of :math:`\mathbf 1\mathbf 1^\top` and :math:`P\mathbf 1 = 0`). So Adam(0, 0) stays on the
symmetric set and :func:`adam_velocity` is its exact reduced flow, for every :math:`\varepsilon`.

Factor bases. Sign descent is not invariant under rotations of a factor's inner dimension. The
laws here are for MODEL.md's balanced split with the *class-indexed* inner basis of the OV
factors (inner dimension :math:`K`, :math:`R = U`: :math:`W_O = s_O P`, :math:`W_V = s_V P E_d^\top`) and
the rank-one QK factors of MODEL.md. Another basis changes the constants (the :math:`\ell_1` norms).

Limits (each checked):

* :math:`\varepsilon \to 0` (sign descent): :math:`\dot x_i = -\eta_c\,\mathrm{sign}(G_i)\,\|D^{(i)}\|_1/n_i`,
  a constant on the region :math:`u > 0,\ a > 0,\ b > c` (which the flow never leaves). Every
  coordinate is linear in ``t``: a collapsed circuit's observable grows linearly, a factorized one's
  (a product of two coordinates) quadratically.
* :math:`\varepsilon \to \infty` (every :math:`|g_e| \ll \varepsilon`): :math:`\varepsilon\,\dot x_i` tends to the
  gradient-flow right-hand side, so the late phase is GD with rates :math:`\eta_c/\varepsilon` and the
  same ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.parametrization import PARAMETRIZATIONS, Parametrization
from theory.checks import AT_ONE_POINT, SYMBOLIC, Check, identity_check, limit_check
from theory.orbit_gradient import ORBIT_SIZES
from theory.reduced import balanced_initial_state, reduced_system
from theory.symbols import K, M, P, a_, b_, c_, eta_ov, eta_qk, r, s_O, s_V, t, u, v
from theory.symmetric_line import line_geometry, margin_loss, p_of_v

eps_adam = sp.Symbol("epsilon", positive=True)
r"""Adam's :math:`\varepsilon`."""

PARAMS = PARAMETRIZATIONS

# Region where the signs of the gradient are fixed: K = k2 + 2, M = m1 + 1, p = 1/(1+q_p), b = c + w_p.
_k2, _m1 = sp.symbols("k_2 m_1", nonnegative=True)
_qp, _wp = sp.symbols("q_p w_p", positive=True)
_up, _ap = sp.symbols("u_p a_p", positive=True)


@dataclass(frozen=True)
class EntryPattern:
    r"""Entries a reduced coordinate scales: ``orbits`` = ``(name, number of entries, value D_o)``."""

    coord: sp.Symbol
    orbits: tuple[tuple[str, sp.Expr, sp.Expr], ...]

    @property
    def l2sq(self) -> sp.Expr:
        r""":math:`\sum_o |o| D_o^2` (equals the multiplicity :math:`n_i`)."""
        return sp.factor(sp.simplify(sum(n * d ** 2 for _, n, d in self.orbits)))

    @property
    def l1(self) -> sp.Expr:
        r""":math:`\|D\|_1 = \sum_o |o|\,|D_o|` (symbolic ``K, M`` are positive, so signs are known)."""
        return sp.factor(sp.simplify(sum(n * sp.Abs(_in_region(d)) for _, n, d in self.orbits).subs(_region_back())))


def _region() -> dict:
    return {K: _k2 + 2, M: _m1 + 1}


def _region_back() -> dict:
    return {_k2: K - 2, _m1: M - 1}


def _in_region(expr: sp.Expr) -> sp.Expr:
    return sp.simplify(sp.sympify(expr).subs(_region()))


def entry_patterns(param: str) -> tuple[EntryPattern, ...]:
    """Patterns of the coordinates of ``reduced_system(param).state``, in that order."""
    geo = line_geometry()
    ov, qk = geo.ov_direction, geo.qk_direction
    ov_orbits = tuple((f"W_OV {o}", ORBIT_SIZES[o], ov[o]) for o in ("A", "B", "C", "E"))
    out: list[EntryPattern] = []
    if Parametrization(param).ov.factorized:   # class-indexed inner basis: W_O = s_O P (K x K), W_V = s_V P E_d^T
        out.append(EntryPattern(s_O, (("W_O diag", ORBIT_SIZES["A"], ov["A"]), ("W_O off-diag", ORBIT_SIZES["B"], ov["B"]))))
        out.append(EntryPattern(s_V, tuple((n.replace("W_OV", "W_V"), k, d) for n, k, d in ov_orbits)))
    else:
        out.append(EntryPattern(u, ov_orbits))
    if Parametrization(param).qk.factorized:   # rank one: W_Q = a e e_q^T, W_K = e (b 1_d + c 1_c + c e_q)^T
        out.append(EntryPattern(a_, (("W_Q[e,q]", sp.Integer(1), sp.Integer(1)),)))
        out.append(EntryPattern(b_, (("W_K[e,d_k]", K, sp.Integer(1)),)))
        out.append(EntryPattern(c_, (("W_K[e,c_j]", M, sp.Integer(1)), ("W_K[e,q]", sp.Integer(1), sp.Integer(1)))))
    else:
        out.append(EntryPattern(v, tuple((f"W_KQ[{o}]", ORBIT_SIZES[o], qk[o]) for o in ("alpha", "beta", "gamma"))))
    return tuple(out)


def _rates(param: str) -> tuple[sp.Symbol, ...]:
    s = reduced_system(param)
    return tuple([s.ov.rate] * len(s.ov.coords) + [s.qk.rate] * len(s.qk.coords))


def _multiplicities(param: str) -> tuple[sp.Expr, ...]:
    s = reduced_system(param)
    return s.ov.multiplicity + s.qk.multiplicity


@lru_cache(maxsize=None)
def reduced_gradients(param: str) -> tuple[sp.Expr, ...]:
    r""":math:`G_i = \partial\mathcal L/\partial x_i = -n_i\,\dot x_i^{GD}/\eta_c`, with ``p`` as a symbol."""
    s = reduced_system(param)
    return tuple(sp.factor(-n * f / eta) for f, n, eta in zip(s.rhs_display, _multiplicities(param), _rates(param)))


def _phi(g: sp.Expr, eps: sp.Expr) -> sp.Expr:
    return g / (sp.Abs(g) + eps)


def adam_velocity_of_gradient(pattern: EntryPattern, G: sp.Expr, eta: sp.Expr, eps: sp.Expr = eps_adam) -> sp.Expr:
    r""":math:`\dot x = -\frac{\eta}{n}\sum_o |o| D_o\,\varphi_\varepsilon(G D_o/n)` for reduced gradient ``G``."""
    n = pattern.l2sq
    return -eta / n * sum(k * d * _phi(G * d / n, eps) for _, k, d in pattern.orbits)


@lru_cache(maxsize=None)
def adam_velocity(param: str) -> tuple[sp.Expr, ...]:
    r"""Exact reduced Adam(:math:`\beta_1 = \beta_2 = 0`, :math:`\varepsilon`) flow, ``p`` as the symbol ``p``."""
    pats = entry_patterns(param)
    return tuple(adam_velocity_of_gradient(pt, G, eta)
                 for pt, G, eta in zip(pats, reduced_gradients(param), _rates(param)))


def _sign_on_region(expr: sp.Expr) -> int:
    r"""Sign of ``expr`` for ``K >= 2, M >= 1, 0 < p < 1, u, s_O, s_V, a > 0, b > c`` (decided by sympy)."""
    sub = {**_region(), P: 1 / (1 + _qp), u: _up, a_: _ap, b_: c_ + _wp}
    e = sp.factor(sp.sympify(expr).subs(sub))
    if e.is_positive:
        return 1
    if e.is_negative:
        return -1
    raise ValueError(f"sign of {expr} not decided on the region")


@dataclass(frozen=True)
class SignLaws:
    r"""Sign-descent (:math:`\varepsilon \to 0`) laws of one parametrization from its balanced start.

    ``velocity`` maps each coordinate to its constant :math:`\dot x_i`; ``u_of_t``/``v_of_t`` are the
    exact trajectories; ``*_degree`` their degree in ``t``; ``v_over_u`` is
    :math:`\lim_{t\to\infty} v/u` with :math:`\eta_{QK} = r\,\eta_{OV}`, which is also the exponent
    :math:`\lim \log(1-p)/\log\mathcal L` at matched loss (``0`` or ``oo`` when the degrees differ);
    ``rho_ov`` is :math:`\dot u/(2\eta_{OV})` along the trajectory as a function of ``u``;
    ``v_of_u_leading`` is :math:`c\,u^{k_v/k_u}` with :math:`v \sim c\,u^{k_v/k_u}`, so at matched loss
    :math:`\log(1-p) \simeq -c\,\log(1/\mathcal L)^{k_v/k_u}`.
    """

    param: str
    gradient_sign: dict[sp.Symbol, int]
    velocity: dict[sp.Symbol, sp.Expr]
    u_of_t: sp.Expr
    v_of_t: sp.Expr
    u_degree: int
    v_degree: int
    v_over_u: sp.Expr
    residual_exponent: sp.Expr
    rho_ov: sp.Expr
    v_of_u_leading: sp.Expr


def _with_ratio(expr: sp.Expr) -> sp.Expr:
    return sp.sympify(expr).subs(eta_qk, r * eta_ov)


@lru_cache(maxsize=None)
def sign_laws(param: str) -> SignLaws:
    """Derive the sign-descent laws of ``param`` (see :class:`SignLaws`)."""
    if param not in PARAMS:
        raise ValueError(f"parametrization {param!r}: must be one of {', '.join(PARAMS)}")
    s = reduced_system(param)
    pats = entry_patterns(param)
    signs = {x: _sign_on_region(G) for x, G in zip(s.state, reduced_gradients(param))}
    vel = {pt.coord: sp.factor(-eta * signs[pt.coord] * pt.l1 / pt.l2sq) for pt, eta in zip(pats, _rates(param))}
    x0 = balanced_initial_state(param)
    traj = {x: x0[x] + vel[x] * t for x in s.state}
    u_t = sp.expand(s.u_expr.subs(traj))
    v_t = sp.expand(s.v_expr.subs(traj))
    du, dv = int(sp.degree(u_t, t)), int(sp.degree(v_t, t))
    ratio = sp.simplify(sp.limit(_with_ratio(v_t / u_t), t, sp.oo))
    # v/u -> exponent when both grow alike; otherwise the exponent is 0 (v slower) or oo (v faster).
    exponent = ratio
    # rho_OV: du/dt / (2 eta_OV) written in u along the trajectory (s_O = s_V on the balanced start).
    rate_u = sp.diff(u_t, t)
    if Parametrization(param).ov.factorized:
        sq = sp.Symbol("sqrt_u", positive=True)
        su = sp.solve(sp.Eq(traj[s_O], sq), t)[0]
        rho = sp.simplify((rate_u.subs(t, su) / (2 * eta_ov)).subs(sq, sp.sqrt(u)))
    else:
        rho = sp.simplify(rate_u / (2 * eta_ov))
    # Leading v(u) = c u^(dv/du): with log L ~ -u and log(1-p) ~ -v, log(1-p) ~ -c log(1/L)^(dv/du).
    power = sp.Rational(dv, du)
    c_lead = sp.simplify(sp.limit(_with_ratio(v_t / u_t ** power), t, sp.oo))
    return SignLaws(param, signs, vel, u_t, v_t, du, dv, ratio, exponent, rho, c_lead * u ** power)


def late_phase_rhs(param: str) -> tuple[sp.Expr, ...]:
    r""":math:`\lim_{\varepsilon\to\infty}\varepsilon\,\dot x`: gradient flow with the same rates (``p`` a symbol)."""
    return reduced_system(param).rhs_display


def entry_gradient_scales(param: str) -> dict[str, sp.Expr]:
    r"""Per-orbit :math:`|g_o| = |G_i|\,|D_o|/n_i` on the region, ``p`` as a symbol.

    Adam is in its sign regime on an orbit while :math:`|g_o| \gg \varepsilon` and in its GD regime
    while :math:`|g_o| \ll \varepsilon`; the smallest :math:`|g_o|` of a circuit leaves the sign regime first.
    """
    out = {}
    for pt, G in zip(entry_patterns(param), reduced_gradients(param)):
        sgn = _sign_on_region(G)
        for name, _, d in pt.orbits:
            if d != 0:
                out[name] = sp.factor(sgn * G * sp.Abs(_in_region(d)).subs(_region_back()) / pt.l2sq)
    return out


@lru_cache(maxsize=None)
def adam_checks(param: str) -> tuple[Check, ...]:
    """Symbolic checks of the reduction, the two limits, the trajectories and the matched-loss exponent."""
    s = reduced_system(param)
    pats = entry_patterns(param)
    laws = sign_laws(param)
    checks: list[Check] = []
    for pt, n in zip(pats, _multiplicities(param)):
        checks.append(identity_check(f"{param}-adam-pattern-norm-{pt.coord}",
                                     rf"\sum_o |o| D_o^2 = n_{{{sp.latex(pt.coord)}}} \text{{ (pattern of }} {sp.latex(pt.coord)})",
                                     pt.l2sq, n))
    Gs = sp.Symbol("G_abs", positive=True)
    for pt, eta in zip(pats, _rates(param)):
        sgn = laws.gradient_sign[pt.coord]
        vel = adam_velocity_of_gradient(pt, sgn * Gs, eta)
        vel_r = sp.simplify(vel.subs(_region()))
        checks.append(limit_check(f"{param}-adam-eps0-is-sign-descent-{pt.coord}",
                                  rf"\lim_{{\varepsilon\to0}} \dot{{{sp.latex(pt.coord)}}} = "
                                  rf"-\eta\,\mathrm{{sign}}(G)\|D\|_1/n = {sp.latex(laws.velocity[pt.coord])}",
                                  vel_r, eps_adam, 0, sp.simplify(laws.velocity[pt.coord].subs(_region()))))
        checks.append(limit_check(f"{param}-adam-eps-large-is-gd-{pt.coord}",
                                  rf"\lim_{{\varepsilon\to\infty}} \varepsilon\,\dot{{{sp.latex(pt.coord)}}} = -\eta\,G/n",
                                  sp.simplify(eps_adam * vel_r), eps_adam, sp.oo,
                                  sp.simplify((-eta * sgn * Gs / pt.l2sq).subs(_region()))))
        # The update minus its projection on the pattern is the same on every orbit of nonzero D_o
        # (column-constant / query-column-constant: not seen by the loss); zero-D orbits do not move.
        g_sym = sp.Symbol("g", real=True)
        upd = {name: -eta * _phi(g_sym * d / pt.l2sq, eps_adam) for name, _, d in pt.orbits}
        proj = adam_velocity_of_gradient(pt, g_sym, eta)
        rem = [sp.simplify((upd[name] - proj * d).subs(_region())) for name, _, d in pt.orbits if d != 0]
        zero_rem = [sp.simplify(upd[name]) for name, _, d in pt.orbits if d == 0]
        checks.append(identity_check(f"{param}-adam-remainder-null-{pt.coord}",
                                     r"\text{update} - \dot x\,D \text{ equal on every moving orbit, 0 on frozen ones}",
                                     sp.Matrix([x - rem[0] for x in rem] + zero_rem),
                                     sp.zeros(len(rem) + len(zero_rem), 1)))
    # The sign region is invariant: u, a and b - c only grow.
    for name, expr in (("u", laws.u_of_t), ("v", laws.v_of_t)):
        checks.append(Check(f"{param}-sign-{name}-increasing",
                            rf"\dot {name}(t) > 0 \text{{ for }} t > 0",
                            SYMBOLIC, all(c.is_positive for c in sp.Poly(expr, t).all_coeffs()[:-1]),
                            how="every coefficient of the t-polynomial is positive"))
    traj_sub = {}
    x0 = balanced_initial_state(param)
    for x in s.state:
        traj_sub[x] = x0[x] + laws.velocity[x] * t
    checks.append(identity_check(f"{param}-sign-trajectory-solves-flow",
                                 r"\tfrac{d}{dt}x_i(t) = \dot x_i,\ x_i(0) = x_{i,0}",
                                 sp.Matrix([sp.diff(traj_sub[x], t) - laws.velocity[x] for x in s.state]
                                           + [traj_sub[x].subs(t, 0) - x0[x] for x in s.state]),
                                 sp.zeros(2 * len(s.state), 1)))
    checks.append(Check(f"{param}-sign-growth-degrees",
                        rf"u = \Theta(t^{{{laws.u_degree}}}),\ v = \Theta(t^{{{laws.v_degree}}})",
                        SYMBOLIC,
                        laws.u_degree == (2 if Parametrization(param).ov.factorized else 1)
                        and laws.v_degree == (2 if Parametrization(param).qk.factorized else 1),
                        how="degree of the exact polynomial trajectory"))
    got = sp.limit(_with_ratio(laws.v_of_t / laws.u_of_t), t, sp.oo)
    checks.append(Check(f"{param}-sign-v-over-u", rf"\lim_{{t\to\infty}} v/u = {sp.latex(laws.v_over_u)}",
                        SYMBOLIC,
                        bool(got == laws.v_over_u) if not laws.v_over_u.is_finite else sp.simplify(got - laws.v_over_u) == 0,
                        how=f"limit(t -> oo) == {laws.v_over_u}"))
    lead = laws.v_of_u_leading
    checks.append(limit_check(f"{param}-sign-v-of-u-leading", rf"v / ({sp.latex(lead)}) \to 1 \ (t\to\infty)",
                              _with_ratio(laws.v_of_t / lead.subs(u, laws.u_of_t)), t, sp.oo, 1))
    # Matched loss: log(1-p) ~ -v and log L ~ -u (p -> 1, (1-p) u -> 0), so log(1-p)/log L -> lim v/u.
    vv, uu = sp.Symbol("v_big", positive=True), sp.Symbol("u_big", positive=True)
    one_minus_p = 1 - p_of_v().subs(v, vv)
    checks.append(limit_check(f"{param}-residual-log-is-minus-v", r"\log(1-p)/v \to -1 \ (v\to\infty)",
                              sp.log(one_minus_p) / vv, vv, sp.oo, -1))
    checks.append(limit_check(f"{param}-loss-log-is-minus-u", r"\log\Lambda(u, 1)/u \to -1 \ (u\to\infty)",
                              sp.log(margin_loss(uu, 1)) / uu, uu, sp.oo, -1))
    pu = sp.expand(_with_ratio(laws.u_of_t * (1 - p_of_v()).subs(v, laws.v_of_t)).subs(
        {eta_ov: 1, r: 2, K: 3, M: 4} | {sym: 1 for sym in laws.u_of_t.free_symbols | laws.v_of_t.free_symbols
                                          if sym.name in ("u_0", "v_0")}))
    checks.append(limit_check(f"{param}-loss-shift-vanishes", r"(1-p)\,u \to 0 \text{ along the sign trajectory (one numeric point)}",
                              pu, t, sp.oo, 0, method=AT_ONE_POINT))
    # u_0 = w^2 with w > 0 (u_0 > 0) and every symbol positive, so that the square root of the factorized
    # OV's perfect square, sqrt((w + 2 eta t)^2), is w + 2 eta t and the identity is decided symbolically.
    w = sp.Dummy("w", positive=True)
    start = {sym: w ** 2 for sym in laws.u_of_t.free_symbols if sym.name == "u_0"}
    (lhs, rhs), _ = sp.posify([sp.diff(laws.u_of_t, t).subs(start),
                               (2 * eta_ov * laws.rho_ov.subs(u, laws.u_of_t)).subs(start)])
    rhs = rhs.replace(lambda e: e.is_Pow and e.exp == sp.S.Half, lambda e: sp.sqrt(sp.factor(e.base)))
    checks.append(identity_check(f"{param}-sign-rho-ov", rf"\dot u = 2\eta_{{OV}}\,{sp.latex(laws.rho_ov)} \text{{ along the trajectory}}",
                                 lhs, rhs))
    return tuple(checks)


def sign_summary(param: str) -> dict[str, str]:
    """Plain-text summary for JSON and the ledger."""
    laws = sign_laws(param)
    return {
        "velocity": {x.name: sp.sstr(vv) for x, vv in laws.velocity.items()},
        "u(t)": sp.sstr(laws.u_of_t), "v(t)": sp.sstr(laws.v_of_t),
        "u degree": laws.u_degree, "v degree": laws.v_degree,
        "lim v/u (eta_QK = r eta_OV)": sp.sstr(laws.v_over_u),
        "log(1-p)/log L at matched loss": sp.sstr(laws.residual_exponent),
        "du/dt / (2 eta_OV)": sp.sstr(laws.rho_ov),
        "v(u) leading (eta_QK = r eta_OV)": sp.sstr(laws.v_of_u_leading),
        "log(1-p) at matched loss L": f"~ -{sp.sstr(laws.v_of_u_leading.subs(u, sp.Symbol('log(1/L)')))}",
        "per-entry gradients |g|": {k: sp.sstr(vv) for k, vv in entry_gradient_scales(param).items()},
    }


__all__ = ["EntryPattern", "SignLaws", "entry_patterns", "adam_velocity", "adam_velocity_of_gradient", "sign_laws",
           "adam_checks", "late_phase_rhs", "entry_gradient_scales", "reduced_gradients", "sign_summary", "eps_adam"]
