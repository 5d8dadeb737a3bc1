"""Machine checks: every identity qkov states carries the check that established it."""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


SYMBOLIC = "symbolic"
AT_ONE_POINT = "symbolic at one point"
"""A symbolic result (a limit, an identity) established at one parameter point only, not for symbolic K, M, r."""
AT_ONE_SIZE = "exact at one size"
"""An exact result at one concrete size (K, M), not for symbolic K, M."""
SCOPED = (AT_ONE_POINT, AT_ONE_SIZE)


def numeric_method(digits: int, points: int) -> str:
    """The ``method`` label of a check decided by evaluation: ``numeric (N digits, P points)``."""
    return f"numeric ({digits} digits, {points} points)"


@dataclass(frozen=True)
class Check:
    """One verified statement: its name, the statement in LaTeX, how it was checked, the outcome.

    ``method`` is exactly :data:`SYMBOLIC`, one of :data:`SCOPED` (a result at one parameter point or one
    size) or :func:`numeric_method`'s label (what a summary counts);
    ``how`` names the technique (``simplify(lhs - rhs) == 0``, ``limit(u -> oo)``, ...);
    ``claims``: the claim ids (:data:`theory.claims.CLAIMS`) the check supports, set by :func:`tag`.
    """

    name: str
    statement: str
    method: str
    passed: bool
    how: str = ""
    claims: tuple[str, ...] = ()

    def __post_init__(self):
        if self.method != SYMBOLIC and self.method not in SCOPED and not self.method.startswith("numeric ("):
            raise ValueError(f"check {self.name}: method {self.method!r}: must be 'symbolic', "
                             f"{' or '.join(repr(m) for m in SCOPED)} or 'numeric (N digits, P points)'")

    @property
    def numeric(self) -> bool:
        return self.method.startswith("numeric (")

    @property
    def scoped(self) -> bool:
        """True for a check at one parameter point or one size (:data:`SCOPED`)."""
        return self.method in SCOPED

    def as_dict(self) -> dict:
        return {"name": self.name, "statement": self.statement, "method": self.method, "how": self.how,
                "passed": self.passed, "claims": list(self.claims)}


def tag(family: str, checks) -> list[Check]:
    """``checks`` tagged with the claim ids of ``family`` (:data:`theory.claims.CHECK_FAMILIES`); raises
    ``KeyError`` for a family the claims table does not name."""
    from dataclasses import replace

    from theory.claims import CHECK_FAMILIES

    ids = CHECK_FAMILIES[family]
    return [replace(c, claims=tuple(dict.fromkeys(c.claims + ids))) for c in checks]


def method_counts(checks) -> dict[str, int]:
    """The summary of how checks were decided: ``symbolic``, ``scoped`` (one point / one size), ``numeric``."""
    checks = list(checks)
    return {"symbolic": sum(c.method == SYMBOLIC for c in checks), "scoped": sum(c.scoped for c in checks),
            "numeric": sum(c.numeric for c in checks)}


def scoped_counts(checks) -> dict[str, int]:
    """How many scoped checks of each kind: ``{"at one point": n, "at one size": m}``."""
    checks = list(checks)
    return {AT_ONE_POINT.replace("symbolic ", ""): sum(c.method == AT_ONE_POINT for c in checks),
            AT_ONE_SIZE.replace("exact ", ""): sum(c.method == AT_ONE_SIZE for c in checks)}


def exactness_text(summary: dict) -> str:
    """The one phrase every view prints for the derive ``summary`` (:func:`theory.derivation.derivation_json`):
    how many checks passed and how exact each is, e.g. ``211 of 211 checks passed: 205 symbolic, 6 scoped
    (4 at one point, 2 at one size), 0 numeric``. Never calls a scoped or numeric check symbolic."""
    m = summary.get("methods") or {}
    kinds = summary.get("scoped_kinds") or {}
    head = f"{summary.get('passed', 0)} of {summary.get('checks', 0)} checks passed"
    if not m:
        return head
    scoped = f"{m.get('scoped', 0)} scoped"
    if kinds and m.get("scoped"):
        scoped += " (" + ", ".join(f"{n} {k}" for k, n in kinds.items() if n) + ")"
    return f"{head}: {m.get('symbolic', 0)} symbolic, {scoped}, {m.get('numeric', 0)} numeric"


def exact_constant(expr: sp.Expr, state) -> sp.Expr:
    r"""The value of ``expr`` when it does not depend on the ``state`` symbols; raises ``ValueError`` otherwise.

    Exponentials become symbols (:func:`_exp_atoms_as_symbols`, exact), ``expr = N/D`` as polynomials;
    a candidate ``c = c_n/c_d`` is read off at one rational point of the state and the exponential symbols,
    and accepted only if :math:`N c_d - c_n D` expands to the zero polynomial: then ``expr = c`` wherever it
    is defined, for every value of the state and of the exponentials (a sound, exact test; no gcd needed,
    which is what made ``cancel`` slow here). Falls back to ``simplify``.

    >>> a, b = sp.symbols("a b")
    >>> exact_constant((a * sp.exp(2 * b) + sp.exp(2 * b)) / (sp.exp(b) ** 2 * (a + 1)) * 3, state=(a, b))
    3
    """
    import random

    table: dict[sp.Symbol, sp.Expr] = {}
    rational = _exp_atoms_as_symbols(expr, table)
    num, den = sp.fraction(sp.together(rational))
    rng = random.Random(0)
    point = {s: sp.Rational(rng.randint(2, 97), rng.randint(2, 97)) for s in (set(state) | set(table)) & rational.free_symbols}
    cand = sp.cancel(rational.subs(point))
    if not (cand.free_symbols & (set(state) | set(table))):
        c_num, c_den = sp.fraction(cand)
        if sp.expand(num * c_den - c_num * den) == 0:
            return sp.factor(cand)
    value = sp.simplify(expr)
    if value.free_symbols & set(state):
        raise ValueError(f"exact_constant: {str(expr)[:80]}: depends on the state")
    return value


def _exp_atoms_as_symbols(expr: sp.Expr, back: dict | None = None) -> sp.Expr:
    """Replace every ``exp(a)`` by a fresh symbol (``exp(-a)`` by its reciprocal, ``exp(a + b)`` by a product,
    ``exp(n a)`` by a power for integer ``n``), bottom-up and consistently.

    If the result is identically zero as a rational function of independent symbols, the original is
    zero for every value of the exponentials: a sound (if incomplete) exact test that ``cancel`` decides fast.
    """
    table: dict[sp.Expr, sp.Symbol] = {}

    def sym_for(arg: sp.Expr) -> sp.Expr:
        if arg.could_extract_minus_sign():
            return 1 / sym_for(-arg)
        if arg.is_Add:                       # exp(a + b) = exp(a) exp(b)
            return sp.Mul(*(sym_for(term) for term in arg.args))
        coeff, rest = arg.as_coeff_Mul()
        if coeff.is_Integer and coeff > 1:   # exp(n a) = exp(a)^n
            return sym_for(rest) ** int(coeff)
        if arg not in table:
            table[arg] = sp.Dummy("E", positive=True)
            if back is not None:
                back[table[arg]] = sp.exp(arg)
        return table[arg]

    expr = sp.expand_power_exp(expr)
    return expr.replace(lambda e: isinstance(e, sp.exp), lambda e: sym_for(sp.expand(e.args[0])))


def is_zero(expr: sp.Expr | sp.MatrixBase) -> bool:
    """Exact zero test, cheapest first: exponentials as symbols + ``cancel``, then ``simplify``."""
    if isinstance(expr, sp.MatrixBase):
        return all(is_zero(e) for e in expr)
    expr = sp.sympify(expr)
    if expr == 0:
        return True
    has_roots = any(isinstance(e, sp.Pow) and not e.exp.is_integer for e in sp.preorder_traversal(expr))
    # As rational functions of exponentials: a zero numerator polynomial (expand, no gcd) is cheapest;
    # cancel() is next, but can blow up with square roots.
    fast = () if has_roots else (lambda e: sp.expand(sp.numer(sp.together(_exp_atoms_as_symbols(e)))),
                                 lambda e: sp.cancel(_exp_atoms_as_symbols(e)))
    attempts = (*fast, sp.simplify, lambda e: sp.simplify(sp.expand(sp.powsimp(e, force=True))))
    for attempt in attempts:
        if attempt(expr) == 0:
            return True
    return False


def numerically_zero(expr, samples: int = 5, digits: int = 40, seed: int = 0) -> bool:
    """``expr`` evaluates to 0 (relative 1e-25) at random positive points, with ``digits`` precision.

    Integer symbols (K, M) get integers >= 2, other symbols rationals in (0.2, 3).
    Unevaluated integrals are evaluated by mpmath quadrature.
    """
    import random

    rng = random.Random(seed)
    expr = sp.sympify(expr)
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    for _ in range(samples):
        point = {s: (sp.Integer(rng.randint(2, 7)) if s.is_integer else sp.Rational(rng.randint(2, 30), 10)) for s in syms}
        val = sp.N(expr.subs(point), digits)
        if isinstance(val, sp.MatrixBase):
            vals = list(val)
        else:
            vals = [val]
        for x in vals:
            if not x.is_number or abs(complex(x)) > 1e-25:
                return False
    return True


def identity_check(name: str, statement: str, lhs, rhs) -> Check:
    r"""Check ``lhs == rhs``: exactly by ``simplify(lhs - rhs) == 0``, else numerically.

    The numeric fallback (40 digits at 5 random points, integrals by quadrature) is recorded
    in the check's ``method``, so a report never presents a numeric check as a proof.
    """
    diff = sp.sympify(lhs) - sp.sympify(rhs)
    if is_zero(diff):
        return Check(name, statement, SYMBOLIC, True, "simplify(lhs - rhs) == 0")
    return Check(name, statement, numeric_method(40, 5), numerically_zero(diff, samples=5, digits=40),
                 "|lhs - rhs| < 1e-25 at random points (integrals by quadrature)")


def limit_check(name: str, statement: str, expr, var, point, expected, method: str = SYMBOLIC) -> Check:
    r"""Check :math:`\lim_{var \to point} expr = expected` with ``sympy.limit``; ``method``
    :data:`AT_ONE_POINT` when ``expr`` has its parameters fixed at one point."""
    try:
        got = sp.limit(expr, var, point)
        ok = bool(sp.simplify(got - expected) == 0)
    except (NotImplementedError, ValueError, TypeError):  # pragma: no cover - sympy gave up
        ok = False
    return Check(name, statement, method, ok, f"sympy.limit({var} -> {point}) == {expected}")
