"""Typed, declarative run specifications for the science packages (no validation code here).

A spec is a frozen :func:`dataclasses.dataclass` whose fields carry their allowed ranges as
:mod:`annotated_types` metadata (``Annotated[int, Ge(2), Le(1000)]``). The science packages take specs
as plain data; the ``qkov`` app validates user input against the same metadata (with pydantic,
:func:`qkov.core.config.parse_config`) and reports a bad value in one line, so the ranges are written once.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Example(Spec):
    ...     K: Annotated[int, Ge(2)] = 4
    >>> Example(K=5).to_json_dict()
    {'K': 5}
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated, Any

from annotated_types import Ge, Gt, Le, Lt

FLOAT_MAX = sys.float_info.max

PositiveFinite = Annotated[float, Gt(0), Le(FLOAT_MAX)]
"""A float that is finite and > 0 (``inf`` fails the upper bound, ``nan`` every comparison)."""

NonNegativeFinite = Annotated[float, Ge(0), Le(FLOAT_MAX)]
"""A float that is finite and >= 0."""


def _plain(x: Any) -> Any:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, str):
        return str(x)  # a str subclass (Parametrization) becomes a plain string
    return x


class Spec:
    """Mixin of frozen dataclass specs: unknown fields are rejected when validated, JSON round trip."""

    __pydantic_config__ = {"extra": "forbid"}

    def to_json_dict(self) -> dict[str, Any]:
        """The spec as plain JSON data (tuples as lists, nested specs as dicts)."""
        return _plain(self)

    def replace(self, **changes: Any):
        """A copy with ``changes`` (no validation: validate user input with the app's ``parse_config``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]  # every Spec subclass is a dataclass


__all__ = ["Spec", "PositiveFinite", "NonNegativeFinite", "Ge", "Gt", "Le", "Lt", "FLOAT_MAX"]
