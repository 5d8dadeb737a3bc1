"""On-disk cache of the ``qkov derive`` payload, keyed by the theory sources and sympy's version.

A derivation is a pure function of the code in ``theory/`` and of sympy, so its JSON payload is
cached under ``$QKOV_CACHE_DIR`` (default ``~/.cache/qkov``) with a key that changes whenever a
theory source file, the sympy version or the request (parametrizations, thoroughness) changes.
Writes are atomic; a corrupt entry is ignored and recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import sympy as sp

from theory.files import atomic_write_bytes
from theory.parametrization import Parametrization

THEORY_DIR = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """``$QKOV_CACHE_DIR`` or ``~/.cache/qkov``."""
    return Path(os.environ.get("QKOV_CACHE_DIR", Path.home() / ".cache" / "qkov"))


def source_key(params: tuple[str, ...], full_matrix: bool) -> str:
    """Hash of every ``theory/*.py`` file, sympy's version and the request."""
    h = hashlib.sha256()
    for f in sorted(THEORY_DIR.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(sp.__version__.encode())
    h.update(json.dumps([list(params), full_matrix]).encode())
    return h.hexdigest()[:16]


def cached_derivation_json(params: tuple[str, ...], full_matrix: bool = False, use_cache: bool = True,
                           workers: int | None = None) -> tuple[dict[str, Any], bool]:
    """The derive payload and whether it came from the cache."""
    from theory.derivation import derivation_json

    path = cache_dir() / f"derive-{source_key(params, full_matrix)}.json"
    if use_cache and path.is_file():
        try:
            return json.loads(path.read_text()), True
        except (OSError, ValueError):
            pass
    payload = derivation_json(params, full_matrix, workers)
    if use_cache:
        try:
            atomic_write_bytes(path, json.dumps(payload, indent=1).encode())
        except OSError:  # a read-only home is not an error: the cache is an optimisation
            pass
    return payload, False


def cached_derive(param: Parametrization, use_cache: bool = True):
    """:func:`theory.derivation.derive` of ``param``, pickled on disk under the same key scheme.

    sympy expressions pickle exactly, so a cache hit returns the same :class:`~theory.derivation.Derivation`
    as a fresh derivation; a corrupt entry is ignored and recomputed.
    """
    import pickle

    from theory.derivation import derive

    path = cache_dir() / f"derivation-{param}-{source_key((param,), False)}.pickle"
    if use_cache and path.is_file():
        try:
            return pickle.loads(path.read_bytes())
        except Exception:  # noqa: BLE001 - any unreadable entry is a miss
            pass
    d = derive(param)
    if use_cache:
        try:
            atomic_write_bytes(path, pickle.dumps(d, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            pass
    return d
