"""qkov's theory library: the symbolic gradient flow of the orthogonal synthetic model (MODEL.md).

    >>> import theory
    >>> d = theory.derive("FACO")        # cached on disk (``$QKOV_CACHE_DIR``), keyed by theory's sources
    >>> d.system.rhs, d.rho_qk, d.first_integral.H, d.asymptotics.u_of_t   # sympy expressions

:func:`derive` returns a :class:`theory.derivation.Derivation` holding the reduced system, conserved
quantities, rescaling factors, first integral and asymptotic laws, each with the checks that established
it. :class:`Parametrization` names the four parametrizations. Numbers come from the generated module
:mod:`simulation.generated` (``python -m theory.codegen`` writes it), never from lambdify at run time.
Importing ``theory`` is cheap: sympy loads when a derivation is asked for.
"""

from __future__ import annotations

from theory.errors import InputError
from theory.parametrization import PARAMETRIZATIONS, Parametrization

__all__ = ["derive", "derive_all", "derivation_json", "Parametrization", "PARAMETRIZATIONS", "InputError", "PARAMS"]


def derive(param: Parametrization | str, *, use_cache: bool = True):
    """Derive and check everything about ``param`` (a :class:`theory.derivation.Derivation`).

    Cached in the process and on disk (``$QKOV_CACHE_DIR``, default ``~/.cache/qkov``) under a key of
    theory's source files and sympy's version, so the CLI and the API share one cache.
    """
    from theory.derivation_cache import cached_derive

    return cached_derive(Parametrization(param), use_cache)


def __getattr__(name: str):
    if name in ("derive_all", "derivation_json", "PARAMS"):
        from theory import derivation

        return getattr(derivation, name)
    raise AttributeError(name)
