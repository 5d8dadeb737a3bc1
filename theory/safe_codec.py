r"""JSON for theory's results: sympy expressions as ``srepr`` text read back without executing anything.

:func:`encode` turns a :class:`~theory.derivation.Derivation` (or any tree of theory's dataclasses, sympy
expressions, tuples, lists, dicts, strings and numbers) into JSON values; :func:`decode` builds it again.
Nothing in the text can run code (the reason the derivation cache is not a pickle, issue 44):

* a sympy expression is its ``srepr`` (``Add(Symbol('u'), Integer(1))``, arguments in ``args`` order:
  :func:`tree_srepr`), parsed by :func:`parse_srepr`
  with :func:`ast.parse` and built node by node: a call may only name a sympy class (a subclass of
  ``sympy.Basic`` or a dense matrix) or an undefined function ``Function('f')``; a bare name only a sympy
  constant (``oo``, ``pi``, ``E``, ...); a string only a symbol's or function's name (an identifier, so it
  can never become code in a printed or generated expression) or a ``Float``'s digits; keywords only
  booleans and integers (assumptions, ``precision``, ``dummy_index``). Everything is built under
  ``sympy.evaluate(False)``, so a crafted ``Pow(10, 10**4000)`` is not computed either;
* a dataclass is ``{"__dataclass__": "theory.<module>.<Class>", "fields": {...}}`` and is only rebuilt for a
  dataclass defined in a ``theory`` module already imported (decoding imports nothing), its fields set as a
  pickle would set them, without calling ``__init__``;
* a :class:`~theory.parametrization.Parametrization` is rebuilt through its validating constructor.

A value that is none of these is a :class:`CodecError` on either side. The caller checks that what it read
is what it expected (the derivation cache: a ``Derivation`` of the asked parametrization).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
import sys
from typing import Any

MAX_SREPR = 2_000_000
"""Longest ``srepr`` text :func:`parse_srepr` reads (the largest derived expression is a few kB)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")
_NAMED = ("Symbol", "Dummy", "Function", "Wild")
"""sympy classes whose first argument is a name (a string)."""
_KEYWORDS = (bool, int)


class CodecError(ValueError):
    """A value that cannot be encoded, or text that is not a value :func:`decode` builds."""


def _sympy():
    import sympy

    return sympy


def _allowed_callable(name: str) -> Any:
    sp = _sympy()
    obj = getattr(sp, name, None)
    if isinstance(obj, type) and (issubclass(obj, sp.Basic) or issubclass(obj, sp.MatrixBase)):
        return obj
    raise CodecError(f"srepr: {name!r} is not a sympy class")


def _allowed_constant(name: str) -> Any:
    sp = _sympy()
    obj = getattr(sp, name, None)
    if isinstance(obj, sp.Basic) and not isinstance(obj, type):
        return obj
    raise CodecError(f"srepr: {name!r} is not a sympy constant")


def _node(node: ast.AST) -> Any:
    """The value of one node of a ``srepr`` syntax tree (module docstring: what is allowed)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)) and node.value is not None:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return -node.operand.value
    if isinstance(node, ast.Name):
        return _allowed_constant(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_node(e) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Call):
        return _call(node)
    raise CodecError(f"srepr: {type(node).__name__} is not allowed")


def _call(node: ast.Call) -> Any:
    """A call: a sympy class (or ``Function('f')``) on built values; a string only as a name or a Float's digits."""
    sp = _sympy()
    if isinstance(node.func, ast.Name):
        func, name = _allowed_callable(node.func.id), node.func.id
    else:
        func, name = _node(node.func), ""
        if not isinstance(func, sp.core.function.UndefinedFunction):
            raise CodecError("srepr: only an undefined function Function('f') may be called")
    args = list(node.args)
    first: list[Any] = []
    if name in _NAMED or name == "Float":
        if not args or not (isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)):
            raise CodecError(f"srepr: {name} needs a name or digits first")
        text = args[0].value
        if not (_NAME if name in _NAMED else _FLOAT).match(text):
            raise CodecError(f"srepr: {name}({text[:40]!r}): not an identifier" if name in _NAMED
                             else f"srepr: Float({text[:40]!r}): not a number")
        first, args = [text], args[1:]
    kwargs = {}
    for kw in node.keywords:
        if kw.arg is None or not (isinstance(kw.value, ast.Constant) and type(kw.value.value) in _KEYWORDS):
            raise CodecError("srepr: a keyword may only be a boolean or an integer")
        kwargs[kw.arg] = kw.value.value
    values = first + [_node(a) for a in args]  # _node builds no str: a string is only ever a name
    try:
        if isinstance(func, type) and issubclass(func, sp.concrete.expr_with_limits.ExprWithLimits):
            return _with_limits(func, values, kwargs)
        return func(*values, **kwargs)
    except CodecError:
        raise
    except Exception as exc:  # noqa: BLE001 - sympy refusing the arguments: not a value we wrote
        raise CodecError(f"srepr: {name or 'function'}: {type(exc).__name__}") from None


def tree_srepr(expr: Any) -> str:
    """``sympy.srepr(expr)`` with every node's arguments in ``expr.args`` order (``srepr`` itself prints sums and
    products in printing order), so that :func:`parse_srepr`, building under ``evaluate(False)``, gives back an
    expression equal to ``expr`` (``expr.func(*expr.args) == expr``)."""
    sp = _sympy()
    if isinstance(expr, sp.MatrixBase):
        rows = ", ".join("[" + ", ".join(tree_srepr(x) for x in expr.row(i)) + "]" for i in range(expr.rows))
        return f"{type(expr).__name__}([{rows}])"
    if not isinstance(expr, sp.Basic):
        raise CodecError(f"encode: {type(expr).__qualname__} inside a sympy expression")
    if not expr.args or isinstance(expr, (sp.Symbol, sp.Number)):
        return sp.srepr(expr)
    args = ", ".join(tree_srepr(a) for a in expr.args)
    if isinstance(expr, sp.core.function.AppliedUndef):
        return f"{sp.srepr(expr.func)}({args})"
    if getattr(sp, type(expr).__name__, None) is not type(expr):
        raise CodecError(f"encode: {type(expr).__qualname__}: not a sympy class by that name")
    return f"{type(expr).__name__}({args})"


def _with_limits(cls: type, values: list[Any], kwargs: dict[str, Any]) -> Any:
    """An ``Integral``/``Sum``/``Product`` with exactly these arguments, made as sympy's own constructor makes it
    (``Expr.__new__``, then ``_args``): called under ``evaluate(False)`` that constructor would write the
    integrand as ``1*f``."""
    sp = _sympy()
    function, limits = (values[0], values[1:]) if values else (None, [])
    if kwargs or not isinstance(function, sp.Expr) or not limits or not all(
            isinstance(li, sp.Tuple) and 1 <= len(li) <= 3 and isinstance(li[0], sp.Symbol) for li in limits):
        raise CodecError(f"srepr: {cls.__name__}: needs an expression and limits (symbol, lower, upper)")
    obj = sp.Expr.__new__(cls)
    obj._args = (function, *limits)
    obj.is_commutative = function.is_commutative
    return obj


def parse_srepr(text: str) -> Any:
    """The sympy expression ``text`` (a ``sympy.srepr``) describes, built without ``eval`` (module docstring);
    :class:`CodecError` for anything else."""
    if not isinstance(text, str) or len(text) > MAX_SREPR:
        raise CodecError(f"srepr: not a string of at most {MAX_SREPR} characters")
    sp = _sympy()
    try:
        tree = ast.parse(text, mode="eval")
        with sp.evaluate(False):
            return _node(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"srepr: unreadable ({type(exc).__name__})") from None


def encode(obj: Any) -> Any:
    """``obj`` as JSON values (module docstring); :class:`CodecError` for a value it does not know."""
    sp = _sympy()
    from theory.parametrization import Parametrization

    if isinstance(obj, Parametrization):
        return {"__parametrization__": str(obj)}
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"__float__": repr(obj)}
    if isinstance(obj, (sp.Basic, sp.MatrixBase)):
        return {"__sympy__": tree_srepr(obj)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        if not cls.__module__.startswith("theory."):
            raise CodecError(f"encode: {cls.__module__}.{cls.__qualname__}: not a theory dataclass")
        return {"__dataclass__": f"{cls.__module__}.{cls.__qualname__}",
                "fields": {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, tuple) and type(obj) is tuple:
        return {"__tuple__": [encode(v) for v in obj]}
    if type(obj) is list:
        return [encode(v) for v in obj]
    if type(obj) is dict:
        return {"__dict__": [[encode(k), encode(v)] for k, v in obj.items()]}
    raise CodecError(f"encode: {type(obj).__module__}.{type(obj).__qualname__}: not encodable")


def _dataclass(name: Any) -> type:
    if not isinstance(name, str) or not name.startswith("theory."):
        raise CodecError(f"decode: {str(name)[:80]!r}: not a theory dataclass")
    module, _, qualname = name.rpartition(".")
    if not all(_NAME.match(part) for part in module.split(".")) or not _NAME.match(qualname):
        raise CodecError(f"decode: {name[:80]!r}: not a theory dataclass")
    cls = getattr(sys.modules.get(module), qualname, None)  # only modules already imported: no import runs
    if cls is None:
        raise CodecError(f"decode: {name[:80]!r}: no such class")
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module):
        raise CodecError(f"decode: {name[:80]!r}: not a theory dataclass")
    return cls


def decode(data: Any) -> Any:
    """The value :func:`encode` made ``data`` from; :class:`CodecError` for anything it would not make."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise CodecError("decode: not an encoded value")
    if "__sympy__" in data and len(data) == 1:
        return parse_srepr(data["__sympy__"])
    if "__tuple__" in data and len(data) == 1 and isinstance(data["__tuple__"], list):
        return tuple(decode(v) for v in data["__tuple__"])
    if "__dict__" in data and len(data) == 1 and isinstance(data["__dict__"], list):
        items = data["__dict__"]
        if not all(isinstance(kv, list) and len(kv) == 2 for kv in items):
            raise CodecError("decode: a dict is a list of [key, value] pairs")
        return {decode(k): decode(v) for k, v in items}
    if "__float__" in data and len(data) == 1 and data["__float__"] in ("nan", "inf", "-inf"):
        return float(data["__float__"])
    if "__parametrization__" in data and len(data) == 1:
        from theory.parametrization import Parametrization

        try:
            return Parametrization(str(data["__parametrization__"]))
        except ValueError:
            raise CodecError("decode: not a registered parametrization") from None
    if "__dataclass__" in data and isinstance(data.get("fields"), dict):
        cls = _dataclass(data["__dataclass__"])
        fields = {f.name for f in dataclasses.fields(cls)}
        if set(data["fields"]) != fields:
            raise CodecError(f"decode: {cls.__qualname__}: fields differ from the class's")
        obj: Any = object.__new__(cls)
        for name, value in data["fields"].items():
            object.__setattr__(obj, name, decode(value))
        return obj
    raise CodecError("decode: not an encoded value")


__all__ = ["CodecError", "parse_srepr", "tree_srepr", "encode", "decode", "MAX_SREPR"]
