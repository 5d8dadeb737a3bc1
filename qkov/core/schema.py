"""The shape every JSON file of a run must have to be read: one check for every reader of results.

A run's ``COMPLETE`` marker proves each listed file is the one the run wrote (its SHA-256), not that the file
has the shape its readers expect: a file rewritten with its true hash (``derivation.json`` holding
``{"ledger": 7}``) or an integer beyond the float range (``10**400``, which ``float()`` cannot convert) used
to crash the report and ``qkov reproduce``'s report step. :func:`run_file_problem` is what
:func:`qkov.core.runstore.completeness` asks of every listed ``*.json`` file, so the engine (resume), the
report (:mod:`qkov.report.collect`), provenance and the tables all see such a run as *incomplete*, with a
one-line reason, and ``qkov reproduce`` redoes it.

The rules (a file breaking one is a bad file, never a crash):

* every number is a float or an integer inside the float range (``|x| <= sys.float_info.max``);
  ``NaN``/``Infinity`` literals are floats and allowed (runs record a diverged loss that way);
* ``config.json`` and ``manifest.json`` are objects; a manifest's ``kind``, ``started`` and ``ended`` are
  strings (or null);
* ``derivation.json`` is an object whose known keys have their types (:func:`derivation_problem`, the same
  check theory's derivation cache applies to its entries with every key required).
"""

from __future__ import annotations

import sys
from typing import Any

from theory.derivation_cache import payload_problem

FLOAT_MAX = sys.float_info.max


def number_problem(data: Any) -> str | None:
    """``None`` when every number in the parsed JSON ``data`` converts to a float, else one line saying where.

    Iterative (no recursion): ``data`` may be nested as deeply as the JSON parser allowed.
    """
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, obj = stack.pop()
        if isinstance(obj, int) and not isinstance(obj, bool):
            if abs(obj) > FLOAT_MAX:
                digits = len(str(abs(obj))) if abs(obj).bit_length() < 20000 else "over 6000"
                return f"{where or 'value'}: an integer of {digits} digits, outside the float range"
        elif isinstance(obj, dict):
            stack.extend((f"{where}.{k}" if where else str(k)[:40], v) for k, v in obj.items())
        elif isinstance(obj, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(obj))
    return None


def as_float(value: Any) -> float | None:
    """``float(value)`` for a JSON number (not a bool) inside the float range, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and abs(value) > FLOAT_MAX:
        return None
    return float(value)


def derivation_problem(data: Any) -> str | None:
    """The shape of a run's ``derivation.json`` (keys optional, each of its type when present)."""
    return payload_problem(data, required=False)


_MANIFEST_TEXT = ("kind", "started", "ended")


def run_file_problem(name: str, data: Any) -> str | None:
    """One line saying why the parsed JSON file ``name`` of a run is not readable, or ``None`` when it is."""
    if name in ("config.json", "manifest.json") and not isinstance(data, dict):
        return f"{name}: not a JSON object"
    if name == "manifest.json":
        for key in _MANIFEST_TEXT:
            if data.get(key) is not None and not isinstance(data[key], str):
                return f"manifest.json: {key}: not a string"
    if name == "derivation.json":
        why = derivation_problem(data)
        if why:
            return f"derivation.json: {why}"
    why = number_problem(data)
    return f"{name}: {why}" if why else None


__all__ = ["run_file_problem", "number_problem", "derivation_problem", "as_float", "FLOAT_MAX"]
