"""qkov.theory: the symbolic gradient flow of the orthogonal synthetic model (MODEL.md).

``theory.derive("FACO")`` returns a :class:`theory.derivation.Derivation` holding the reduced
system, conserved quantities, rescaling factors, first integral and asymptotic laws (sympy),
each with the checks that established it; ``derive(...).numeric()`` is the lambdified form
that :mod:`simulation` integrates.
"""

from __future__ import annotations

__all__ = ["derive", "derive_all", "derivation_json", "PARAMS"]


def __getattr__(name: str):
    # Lazy: importing `theory` (e.g. for its config or run store) must not pay for sympy derivations.
    if name in __all__:
        from theory import derivation

        return getattr(derivation, name)
    raise AttributeError(name)
