r"""Code generation: theory's sympy expressions -> one checked-in numpy module (as SymForce and PyDy do).

Every number that :mod:`simulation` and :mod:`validation` compute from a derived formula comes from
``simulation/generated.py``, written by :func:`render_module` from the expressions below, never typed
by hand and never lambdified at run time. A process that simulates or trains therefore imports no
sympy. A test regenerates the module and compares it byte for byte with the checked-in file, so the
numerics cannot drift from the derivation.

Regenerate after changing a derivation::

    python -m theory.codegen            # rewrites simulation/generated.py
    python -m theory.codegen --check    # exit 1 if the checked-in file is stale

What is generated (``P`` is a registered parametrization, :func:`theory.parametrization.registered`; the
tables are keyed by its name; a parametrization off MODEL.md's line, such as tied QK, gets the first item only):

* ``rhs_P(*state, K, M, eta_QK, eta_OV) -> tuple``: the reduced flow :math:`\dot y = f(y)`;
  ``jac_P`` its Jacobian (rows); ``observables_P(*state, K, M) -> (u, v, p, residual, loss)``;
  ``initial_P(u0, v0, K) -> state``: MODEL.md's symmetric/balanced start;
* ``fi_*_P``: the first integral :math:`H = G_{QK}(v) - R\,G_{OV}(u)` in pieces (closed part,
  coefficient and integrand of each unevaluated integral, the trajectory constants from the state);
* ``law_P_<name>(t, u, K, M, eta_QK, eta_OV)``: each asymptotic law of
  :data:`theory.asymptotics.LAW_NAMES`;
* ``next_P_<name>(u, v, K, M, eta_QK, eta_OV, A_QK, H_0, G_QK)``: the next-order law pieces of
  :mod:`theory.asymptotics_next`; ``frozen_qk_time_P``, ``qk_offset_P``: exact test problems (:mod:`theory.problems`);
* ``walk_rate_P(u, v, K, M, eta_QK, eta_OV)`` (factorized QK): the clock-free walk's :math:`dw/dt`
  (:mod:`theory.walk_rate`);
* ``sign_u_P``, ``sign_v_P(t, eta_OV, eta_QK, u0, v0, K)``: Adam's sign-descent limit (:mod:`theory.adam`);
* ``paper_rhs``, ``paper_attention``, ``paper_loss``: the paper's reduced equations (:mod:`theory.paper`),
  and its simulation settings ``PAPER_SIMULATION_SETTINGS``;
* ``margin_loss(u, P, K)``, ``p_of_v(v, M)``, ``rho_qk_balanced(u0, v0, K, M)``, ``rho_ov_balanced(...)``.

Tables ``STATE_NAMES``, ``RHS``, ``JAC``, ``OBSERVABLES``, ``INITIAL``, ``LAWS``, ``FIRST_INTEGRALS``, ``WALK_RATE``
index them by parametrization.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import sympy as sp
from sympy.printing.numpy import SciPyPrinter

from theory.parametrization import FULLY_FACTORIZED, Parametrization

TARGET = Path(__file__).resolve().parent.parent / "simulation" / "generated.py"
"""The generated module's path in the source tree."""


@dataclass(frozen=True)
class Function:
    """One generated function: ``name(*args) -> expr`` (a tuple of expressions when ``vector``)."""

    name: str
    args: tuple[sp.Symbol, ...]
    exprs: tuple[sp.Expr, ...]
    doc: str
    vector: bool = True


class _Printer(SciPyPrinter):
    """numpy/scipy printer with fully qualified names (``numpy.exp``, ``scipy.special.lambertw``)."""

    def __init__(self):
        super().__init__({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False,
                          "strict": True})

    def _print_log1p(self, expr):  # sympy.codegen.cfunctions.log1p
        return f"numpy.log1p({self._print(expr.args[0])})"


def _render(fn: Function) -> str:
    printer = _Printer()
    for a in fn.args:
        if not a.name.isidentifier():
            raise ValueError(f"{fn.name}: argument {a.name!r} is not a Python identifier")
    exprs = [sp.sympify(e) for e in fn.exprs]
    for e in exprs:
        stray = e.free_symbols - set(fn.args)
        if stray:
            raise ValueError(f"{fn.name}: free symbols {sorted(map(str, stray))} are not arguments")
    repl, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_x"), order="canonical")
    lines = [f"def {fn.name}({', '.join(a.name for a in fn.args)}):", f'    """{fn.doc}"""']
    for sym, sub in repl:
        lines.append(f"    {sym.name} = {printer.doprint(sub)}")
    body = [printer.doprint(e) for e in reduced]
    if fn.vector:
        lines.append(f"    return ({', '.join(body)}{',' if len(body) == 1 else ''})")
    else:
        lines.append(f"    return {body[0]}")
    return "\n".join(lines)


def _reduced_functions(param: Parametrization) -> list[Function]:
    from sympy.codegen.cfunctions import log1p

    from theory.reduced import balanced_initial_state, reduced_system
    from theory.symbols import K, M, eta_ov, eta_qk, u0, v0

    s = reduced_system(param)
    args = (*s.state, K, M, eta_qk, eta_ov)
    jac = sp.Matrix(s.rhs).jacobian(sp.Matrix(s.state))
    residual = sp.simplify(1 - s.p_expr)
    loss = log1p((K - 1) * sp.exp(-s.p_expr * s.u_expr))
    init = balanced_initial_state(param)
    names = ", ".join(x.name for x in s.state)
    return [
        Function(f"rhs_{param}", args, tuple(s.rhs), f"{param}: d({names})/dt of the reduced gradient flow."),
        Function(f"jac_{param}", args, tuple(jac), f"{param}: Jacobian of rhs_{param}, row-major "
                 f"({s.dimension}x{s.dimension} entries)."),
        Function(f"observables_{param}", (*s.state, K, M), (s.u_expr, s.v_expr, s.p_expr, residual, loss),
                 f"{param}: (u, v, p, 1 - p, loss) of a reduced state."),
        Function(f"initial_{param}", (u0, v0, K), tuple(init[x] for x in s.state),
                 f"{param}: MODEL.md's symmetric/balanced start ({names}) with effective values u0, v0."),
    ]


def _first_integral_functions(param: Parametrization) -> tuple[list[Function], int]:
    from theory.first_integrals import first_integral
    from theory.reduced import reduced_system
    from theory.rescaling import ov_rescaling, qk_rescaling
    from theory.symbols import A_qk, K, M, delta, eta_ov, eta_qk, u, v

    p = Parametrization(param)
    s = reduced_system(param)
    fi = first_integral(param)
    state_args = (*s.state, K, M, eta_qk, eta_ov)
    uv_args = (u, v, K, M, eta_qk, eta_ov, delta, A_qk)
    delta_expr = ov_rescaling().constants["delta"] if p.ov.kind.rescales else sp.Integer(0)
    a_expr = qk_rescaling().constants["A_QK"] if p.qk.kind.rescales else sp.Integer(1)
    rest = sp.Integer(0)
    pieces = []
    for term in sp.Add.make_args(sp.expand(fi.G_qk, deep=False)):
        if term.has(sp.Integral):
            c, integral = term.as_independent(sp.Integral, as_Add=False)
            (x, lo, hi), = integral.limits
            if not isinstance(integral, sp.Integral) or lo != 0 or hi != v:
                raise NotImplementedError(f"{param}: cannot generate {term}")
            pieces.append((c, integral.function.subs(x, sp.Symbol("x")), x))
        else:
            rest += term
    xs = sp.Symbol("x")
    fns = [
        Function(f"fi_constants_{param}", state_args, (s.u_expr, s.v_expr, delta_expr, a_expr),
                 f"{param}: (u, v, delta, A_QK) of a reduced state; delta, A_QK are conserved along the flow."),
        Function(f"fi_r_g_ov_{param}", uv_args, (fi.coefficient * fi.G_ov,),
                 f"{param}: R * G_OV(u), the OV part of the first integral H = G_QK(v) - R G_OV(u).", vector=False),
        Function(f"fi_g_qk_closed_{param}", uv_args, (rest,),
                 f"{param}: the closed-form part of G_QK(v).", vector=False),
    ]
    for i, (c, f, _) in enumerate(pieces):
        fns.append(Function(f"fi_g_qk_coef{i}_{param}", uv_args, (c,),
                            f"{param}: coefficient of integral {i} in G_QK(v).", vector=False))
        fns.append(Function(f"fi_g_qk_integrand{i}_{param}", (xs, K, M, A_qk), (f,),
                            f"{param}: integrand of integral {i} of G_QK, integrated over x in [0, v].",
                            vector=False))
    return fns, len(pieces)


def _walk_rate_function(param: Parametrization) -> Function:
    """Factorized QK: the clock-free walk's :math:`dw/dt` in ``(u, v)`` (:func:`theory.walk_rate.walk_rate`)."""
    from theory.symbols import K, M, eta_ov, eta_qk, u, v
    from theory.walk_rate import walk_rate

    return Function(f"walk_rate_{param}", (u, v, K, M, eta_qk, eta_ov), (walk_rate(param),),
                    f"{param}: dw/dt of the clock-free walk in w, v = alpha sinh w (no QK lift needed).",
                    vector=False)


def _law_functions(param: Parametrization) -> list[Function]:
    from theory.asymptotics import LAW_NAMES, asymptotic_laws
    from theory.symbols import K, M, eta_ov, eta_qk, t, u

    laws = asymptotic_laws(param)
    return [Function(f"law_{param}_{name}", (t, u, K, M, eta_qk, eta_ov), (getattr(laws, name),),
                     f"{param}: asymptotic law {name} (as a function of t and/or u; complex where "
                     "LambertW leaves its real branch: take the real part).", vector=False)
            for name in LAW_NAMES]


def _next_order_functions(param: Parametrization) -> list[Function]:
    from theory.asymptotics_next import NEXT_ORDER_EXPRESSIONS, G_level, H0, next_order_laws
    from theory.symbols import A_qk, K, M, eta_ov, eta_qk, u, v

    laws = next_order_laws(param)
    args = (u, v, K, M, eta_qk, eta_ov, A_qk, H0, G_level)
    for a in args:  # sanity: the printer needs plain identifiers
        if not a.name.isidentifier():
            raise ValueError(a)
    return [Function(f"next_{param}_{name}", args, (getattr(laws, name),),
                     f"{param}: next-order law piece {name} (theory.asymptotics_next).", vector=False)
            for name in NEXT_ORDER_EXPRESSIONS]


def _problem_functions(param: Parametrization) -> list[Function]:
    """Exact test problems (theory.problems): t(u) at frozen attention, and G_QK's constant for collapsed QK."""
    from theory.problems import U0, U_, frozen_qk_time_expr, qk_offset
    from theory.symbols import K, P, eta_ov

    fns = [Function(f"frozen_qk_time_{param}", (U_, U0, P, K, eta_ov), (frozen_qk_time_expr(param),),
                    f"{param}: exact t(u) of the flow with eta_QK = 0 (attention frozen at p) from u0.", vector=False)]
    if not Parametrization(param).qk.kind.rescales:
        fns.append(Function(f"qk_offset_{param}", (), (qk_offset(param),),
                            f"{param}: c in G_QK(v) = e^v + (M+1) v - c (collapsed QK).", vector=False))
    return fns


def _sign_law_functions(param: Parametrization) -> list[Function]:
    """Adam's sign-descent limit (theory.adam.sign_laws): exact u(t), v(t) from MODEL.md's start."""
    from theory.adam import sign_laws
    from theory.symbols import K, eta_ov, eta_qk, t, u0, v0

    from theory.symbols import r

    laws = sign_laws(param)
    args = (t, eta_ov, eta_qk, u0, v0, K)
    return [Function(f"sign_{name}_{param}", args, (getattr(laws, f"{name}_of_t"),),
                     f"{param}: {name}(t) under sign descent (Adam beta1 = beta2 = 0, eps -> 0).", vector=False)
            for name in ("u", "v")] + [
        Function(f"sign_exponent_{param}", (r,), (laws.residual_exponent,),
                 f"{param}: lim log(1-p)/log L at matched loss under sign descent, with eta_QK = r eta_OV "
                 "(inf: faster than any power, 0: slower).", vector=False)]


def _paper_functions() -> list[Function]:
    from theory.paper import paper_system

    ps = paper_system()
    args = (*ps.state, *ps.parameters)
    return [
        Function("paper_rhs", args, tuple(ps.rhs), "The paper's reduced equations: d(mu_OV, mu_QK)/dt."),
        Function("paper_attention", args, (ps.attention,), "The paper's attention on relevant tokens.",
                 vector=False),
        Function("paper_loss", args, (ps.loss,), "The paper's loss.", vector=False),
    ]


def _symmetric_line_functions() -> list[Function]:
    from theory.reduced import balanced_initial_state
    from theory.rescaling import ov_rescaling, qk_rescaling
    from theory.symbols import K, M, P, u, u0, v, v0
    from theory.symmetric_line import margin_loss, p_of_v

    start = balanced_initial_state(Parametrization(FULLY_FACTORIZED))
    return [
        Function("margin_loss", (u, P, K), (margin_loss(u, P),),
                 "Loss on the symmetric line, log(1 + (K-1) exp(-p u)).", vector=False),
        Function("p_of_v", (v, M), (p_of_v(),), "Attention on the distinct token, e^v / (e^v + M + 1).",
                 vector=False),
        Function("rho_qk_balanced", (u0, v0, K, M), (qk_rescaling().in_state.subs(start),),
                 "QK rescaling factor of a factorized circuit at MODEL.md's balanced start (u0, v0).", vector=False),
        Function("rho_ov_balanced", (u0, v0, K, M), (ov_rescaling().in_state.subs(start),),
                 "OV rescaling factor of a factorized circuit at MODEL.md's balanced start (u0, v0).", vector=False),
    ]


HEADER = '''"""GENERATED by theory/codegen.py from theory's sympy expressions: do not edit.

Regenerate with ``python -m theory.codegen``; tests/unit/test_generated_module.py fails when this file
differs from a fresh generation. Imports numpy, and scipy.special on first use (no sympy).
"""
# fmt: off
# flake8: noqa

import numpy


class _LazyScipy:
    """``scipy.special`` imported when a law first needs it (0.26 s of ``import simulation`` otherwise)."""

    @property
    def special(self):
        import scipy.special
        return scipy.special


scipy = _LazyScipy()
'''


def render_module(params: Sequence[str] | None = None) -> str:
    """The full text of ``simulation/generated.py``, for every registered parametrization (default).

    Every parametrization gets its reduced flow (``rhs``, ``jac``, ``observables``, ``initial``); the
    pieces that rest on MODEL.md's line :math:`p = p(v)` (first integrals, laws, next order, exact problems,
    sign laws) only those whose QK circuit stays on it (:attr:`theory.reduced.ReducedCircuit.on_line`; not tied QK) and whose
    kinds have theory's closed-form line results (:attr:`theory.parametrization.Parametrization.line_theory`).
    The tables are keyed by name, generated from the registry (:func:`theory.parametrization.registered`).
    """
    from theory.asymptotics import LAW_NAMES, LAW_TARGETS
    from theory.asymptotics_next import NEXT_ORDER_EXPRESSIONS
    from theory.reduced import reduced_system

    blocks: list[str] = [HEADER]
    tables: dict[str, list[str]] = {"STATE_NAMES": [], "RHS": [], "JAC": [], "OBSERVABLES": [], "INITIAL": [], "LAWS": [],
              "FIRST_INTEGRALS": [], "NEXT_ORDER": [], "FROZEN_QK_TIME": [], "QK_OFFSET": [], "SIGN_LAWS": [],
              "SIGN_EXPONENT": [], "WALK_RATE": []}
    for param in (Parametrization.registered() if params is None else [Parametrization(p) for p in params]):
        for fn in _reduced_functions(param):
            blocks.append(_render(fn))
        names = tuple(x.name for x in reduced_system(param).state)
        tables["STATE_NAMES"].append(f"    {str(param)!r}: {names!r},")
        for key, prefix in (("RHS", "rhs"), ("JAC", "jac"), ("OBSERVABLES", "observables"), ("INITIAL", "initial")):
            tables[key].append(f"    {str(param)!r}: {prefix}_{param},")
        if not (reduced_system(param).qk.on_line and param.line_theory):
            continue
        fi_fns, n_pieces = _first_integral_functions(param)
        for fn in fi_fns:
            blocks.append(_render(fn))
        for fn in (_law_functions(param) + _next_order_functions(param) + _problem_functions(param)
                   + _sign_law_functions(param)):
            blocks.append(_render(fn))
        laws = ", ".join(f"{n!r}: law_{param}_{n}" for n in LAW_NAMES)
        tables["LAWS"].append(f"    {str(param)!r}: {{{laws}}},")
        nxt = ", ".join(f"{n!r}: next_{param}_{n}" for n in NEXT_ORDER_EXPRESSIONS)
        tables["NEXT_ORDER"].append(f"    {str(param)!r}: {{{nxt}}},")
        tables["FROZEN_QK_TIME"].append(f"    {str(param)!r}: frozen_qk_time_{param},")
        tables["SIGN_LAWS"].append(f"    {str(param)!r}: (sign_u_{param}, sign_v_{param}),")
        tables["SIGN_EXPONENT"].append(f"    {str(param)!r}: sign_exponent_{param},")
        if reduced_system(param).qk.kind == "factorized":
            blocks.append(_render(_walk_rate_function(param)))
            tables["WALK_RATE"].append(f"    {str(param)!r}: walk_rate_{param},")
        if not param.qk.kind.rescales:
            tables["QK_OFFSET"].append(f"    {str(param)!r}: qk_offset_{param}(),")
        pieces = ", ".join(f"(fi_g_qk_coef{i}_{param}, fi_g_qk_integrand{i}_{param})" for i in range(n_pieces))
        tables["FIRST_INTEGRALS"].append(
            f"    {str(param)!r}: {{'constants': fi_constants_{param}, 'r_g_ov': fi_r_g_ov_{param}, "
            f"'g_qk_closed': fi_g_qk_closed_{param}, 'g_qk_integrals': ({pieces}{',' if n_pieces == 1 else ''})}},")
    for fn in _paper_functions() + _symmetric_line_functions():
        blocks.append(_render(fn))
    for name, rows in tables.items():
        blocks.append(f"{name} = {{\n" + "\n".join(rows) + "\n}")
    blocks.append(f"LAW_NAMES = {tuple(LAW_NAMES)!r}")
    blocks.append(f"LAW_TARGETS = {dict(LAW_TARGETS)!r}")
    blocks.append(f"NEXT_ORDER_EXPRESSIONS = {tuple(NEXT_ORDER_EXPRESSIONS)!r}")
    from theory.paper import PAPER_SIMULATION_SETTINGS

    blocks.append(f"PAPER_SIMULATION_SETTINGS = {dict(PAPER_SIMULATION_SETTINGS)!r}")
    return "\n\n\n".join(blocks) + "\n"


def run_codegen(module: str, doc: str, render: Callable[[], str], target: Path,
                argv: Sequence[str] | None = None) -> int:
    """``python -m <module> [--check] [--out PATH]``: write ``render()`` to ``target`` atomically, or with
    ``--check`` exit 1 when the file there differs from a fresh generation (the command line of every
    generator in :mod:`theory`)."""
    ap = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the file differs from a fresh generation")
    ap.add_argument("--out", type=Path, default=target)
    ns = ap.parse_args(argv)
    text = render()
    if ns.check:
        same = ns.out.is_file() and ns.out.read_text() == text
        print(f"{ns.out}: {'up to date' if same else f'STALE: run python -m {module}'}")
        return 0 if same else 1
    from theory.files import atomic_write_bytes

    atomic_write_bytes(ns.out, text.encode())
    print(f"wrote {ns.out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m theory.codegen [--check] [--out PATH]``."""
    return run_codegen("theory.codegen", __doc__ or "", render_module, TARGET, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
