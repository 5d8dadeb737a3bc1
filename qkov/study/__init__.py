"""The study: stages (:mod:`qkov.study.stages`), the engine, claims, and :func:`reproduce`, the whole study
from Python (what ``qkov reproduce`` calls; see :mod:`qkov.study.reproduce_study`; the module has its own name so that the function does not shadow it)."""

from qkov.study.reproduce_study import ReproduceResult, reproduce

__all__ = ["reproduce", "ReproduceResult"]
