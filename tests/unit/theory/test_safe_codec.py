"""theory.safe_codec: theory's results as JSON read back without executing anything (issue 44)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import sympy as sp

from theory.safe_codec import CodecError, decode, encode, parse_srepr, tree_srepr

x = sp.Symbol("x", positive=True)
u, v = sp.symbols("u v")
f = sp.Function("f")

EXPRESSIONS = [
    u + 1, -u * v / 2, sp.exp(v) / (3 + sp.exp(v)), sp.log(1 + (sp.Integer(3) - 1) * sp.exp(-u)),
    sp.Integral((1 + sp.exp(x)) / sp.sqrt(4 + x**2), (x, 0, v)), sp.LambertW(u, -1), sp.Abs(u - v),
    f(x) + sp.oo, sp.pi * sp.E * sp.I, sp.Float("1.25"), sp.Rational(-7, 3), sp.Dummy("d") + u,
    sp.ImmutableMatrix([[1, u], [v, 2]]), sp.Tuple(u, 1, 2), sp.Eq(u, 2), sp.zoo, sp.nan,
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=[str(i) for i in range(len(EXPRESSIONS))])
def test_expressions_read_back_equal(expr):
    """Every node kind theory's derivations hold (sums and products in args order, an Integral, LambertW, an
    undefined function, constants, a Float, a Dummy, a matrix) reads back structurally equal."""
    back = parse_srepr(tree_srepr(expr))
    assert back == expr or (expr is sp.nan and back is sp.nan)
    assert type(back) is type(expr)


@dataclasses.dataclass(frozen=True)
class _NotTheory:
    a: int = 1


def test_theory_dataclasses_and_containers_round_trip_through_json():
    from theory.checks import SYMBOLIC, Check
    from theory.parametrization import Parametrization

    check = Check(name="c", statement="u = v", method=SYMBOLIC, passed=True, claims=("a", "b"))
    value = {"p": Parametrization("FACO"), "t": (u, [v, 1.5, float("inf")], None), 3: check}
    back = decode(json.loads(json.dumps(encode(value))))
    assert back == value and isinstance(back["p"], Parametrization) and isinstance(back["t"], tuple)
    with pytest.raises(CodecError):
        encode(_NotTheory())
    with pytest.raises(CodecError):
        encode({1, 2})


MARKER = "qkov-codec-marker"

PAYLOADS = [
    f"__import__('os').system('touch {MARKER}')",
    f"Symbol('x').__class__.__init__.__globals__['os'].system('touch {MARKER}')",
    f"exp(\"__import__('os').system('touch {MARKER}')\")",             # sympify of a string would eval it
    f"Function('f')(\"__import__('os').system('touch {MARKER}')\")",
    f"Symbol(\"x); __import__('os').system('touch {MARKER}'); (\")",   # a name that printed code would run
    f"Add(Symbol('x'), lambda: __import__('os').system('touch {MARKER}'))",
    "Symbol('x', evaluate=print)", "sympify('1')", "parse_expr('1')", "lambdify(Symbol('x'), Symbol('x'))",
    "Float('nan; 1')", "Integral(Symbol('x'), Integer(1))", "S.Half", "[" * 100_000, "Add(" * 5000 + ")" * 5000,
]


@pytest.mark.parametrize("text", PAYLOADS, ids=[str(i) for i in range(len(PAYLOADS))])
def test_crafted_srepr_is_refused_and_never_runs(text, tmp_path, monkeypatch):
    """Attribute access, calls of anything but a sympy class, strings outside names (sympy's sympify of a string
    evals it), names that are not identifiers, sympify/parse_expr/lambdify, nesting too deep: a CodecError,
    and the marker file a successful payload would create never appears."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CodecError):
        parse_srepr(text)
    assert not (tmp_path / MARKER).exists()


@pytest.mark.parametrize("data", [
    {"__dataclass__": "os.system", "fields": {}},
    {"__dataclass__": "theory.checks.Check", "fields": {"name": "x"}},            # fields differ from the class's
    {"__dataclass__": "theory.no_such_module.Thing", "fields": {}},               # never imported by decoding
    {"__dataclass__": "tests.unit.theory.test_safe_codec._NotTheory", "fields": {"a": 1}},
    {"__parametrization__": "NOPE"}, {"__float__": "1e999999"}, {"__dict__": [[1]]}, {"other": 1},
])
def test_foreign_encoded_values_are_refused(data):
    with pytest.raises(CodecError):
        decode(data)
