"""The study: stages (:mod:`qkov.study.stages`), the engine, claims, and :func:`reproduce`, the whole study
from Python (what ``qkov reproduce`` calls; see :mod:`qkov.study.reproduce`)."""

from qkov.study.reproduce import ReproduceResult, reproduce

__all__ = ["reproduce", "ReproduceResult"]
