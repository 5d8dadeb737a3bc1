"""The study: stages (:mod:`qkov.study.stages`), the engine, claims, and :func:`reproduce`, the whole study
from Python (what ``qkov reproduce`` calls; see :mod:`qkov.study.reproduce_study`; the module has its own name so that the function does not shadow it).

``reproduce`` and ``ReproduceResult`` are loaded on first use, so importing a light submodule (the command
line's :mod:`qkov.study.connect`, which parses ``--scheduler``) costs no pydantic, numpy or Dask."""

from __future__ import annotations

from typing import Any

__all__ = ["reproduce", "ReproduceResult"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from qkov.study import reproduce_study

        return getattr(reproduce_study, name)
    raise AttributeError(f"module 'qkov.study' has no attribute {name!r}")
