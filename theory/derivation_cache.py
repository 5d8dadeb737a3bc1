"""On-disk cache of the ``qkov derive`` payload, keyed by the theory sources and sympy's version.

A derivation is a pure function of the code in ``theory/`` and of sympy, so its JSON payload is
cached under ``$QKOV_CACHE_DIR`` (default ``~/.cache/qkov``) with a key that changes whenever a
theory source file, the sympy version or the request (parametrizations, thoroughness) changes.
Writes are atomic; a corrupt entry is ignored and recomputed: one that is not JSON, nested too deeply to
parse, or not the shape of a payload (:func:`payload_problem`: every section present with its type, so a
renderer never meets ``{"ledger": 7}``), and a cached derivation (:func:`cached_derive`: JSON of
:mod:`theory.safe_codec`, never a pickle, so a planted entry cannot run code) that does not decode to a
:class:`~theory.derivation.Derivation` of the asked parametrization. Entries are read without following a
symbolic link. sympy is imported on use only, so :func:`payload_problem` costs a reader of results nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

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
    import sympy as sp

    h.update(sp.__version__.encode())
    h.update(json.dumps([list(params), full_matrix]).encode())
    return h.hexdigest()[:16]


PAYLOAD_SECTIONS: dict[str, type | tuple[type, ...]] = {
    "model": str, "parametrizations": dict, "symmetric_subspace": dict, "rescaling_general": dict,
    "paper_mapping": dict, "ordering": dict, "ledger": list, "displays": list, "summary": (dict, str),
}
"""The derive payload's top-level keys (:func:`theory.derivation.derivation_json`) and their JSON types."""

_CHECKED_SECTIONS = ("symmetric_subspace", "rescaling_general", "paper_mapping")
"""Sections whose ``checks`` list the renderers iterate."""


def payload_problem(data: Any, required: bool = True) -> str | None:
    """``None`` when ``data`` has the derive payload's shape, else one line saying what is wrong.

    The payload is an object whose :data:`PAYLOAD_SECTIONS` have their types (``required``: every one present,
    as in a cache entry; else only those present are checked, as in a run's ``derivation.json``), whose
    ``ledger`` and ``displays`` entries are objects, each ledger entry's ``statements`` (if any) a list of
    objects, and whose checked sections (and ``ordering``, when required) hold a ``checks`` list.
    """
    if not isinstance(data, dict):
        return "not a JSON object"
    for key, kind in PAYLOAD_SECTIONS.items():
        if key not in data:
            if required:
                return f"{key}: missing"
            continue
        if not isinstance(data[key], kind):
            return f"{key}: not a {kind.__name__ if isinstance(kind, type) else ' or '.join(k.__name__ for k in kind)}"
    for key in ("ledger", "displays"):
        if any(not isinstance(e, dict) for e in data.get(key, ())):
            return f"{key}: every entry must be an object"
    for entry in data.get("ledger", ()):
        st = entry.get("statements")
        if st is not None and not (isinstance(st, list) and all(isinstance(x, dict) for x in st)):
            return "ledger: statements must be a list of objects"
    for key in _CHECKED_SECTIONS + (("ordering",) if required else ()):
        if key in data and not isinstance(data[key].get("checks"), list) and (required or "checks" in data[key]):
            return f"{key}: checks must be a list"
    return _renderable_problem(data) if required else None


_LEDGER_TEXT = ("claim", "source", "status", "derived")


def _renderable_problem(data: dict[str, Any]) -> str | None:
    """What the derivation renderers (``qkov.report.derivation``) index beyond the top level, checked."""
    params = data["parametrizations"]
    if not all(isinstance(p, dict) and isinstance(p.get("checks"), list) for p in params.values()):
        return "parametrizations: every entry must be an object with a checks list"
    checks = [c for key in _CHECKED_SECTIONS + ("ordering",) for c in data[key]["checks"]]
    checks += [c for p in params.values() for c in p["checks"]]
    if not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in checks):
        return "checks: every check must be an object with a name"
    if not all(isinstance(d.get("section"), str) for d in data["displays"]):
        return "displays: every entry must name its section"
    if not all(all(isinstance(e.get(k), str) for k in _LEDGER_TEXT) for e in data["ledger"]):
        return f"ledger: every entry must have the texts {', '.join(_LEDGER_TEXT)}"
    s = data["summary"]
    if not (isinstance(s, dict) and all(isinstance(s.get(k), int) for k in ("passed", "checks", "numeric_fallbacks"))):
        return "summary: must count passed, checks and numeric_fallbacks"
    return None


def cached_derivation_json(params: tuple[str, ...], full_matrix: bool = False, use_cache: bool = True,
                           workers: int | None = None) -> tuple[dict[str, Any], bool]:
    """The derive payload and whether it came from the cache."""
    from theory.derivation import derivation_json

    path = cache_dir() / f"derive-{source_key(params, full_matrix)}.json"
    if use_cache and path.is_file():
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):  # unreadable, not JSON, nested too deeply
            entry = None
        if entry is not None and payload_problem(entry) is None:
            return entry, True
    payload = derivation_json(params, full_matrix, workers)
    if use_cache:
        try:
            atomic_write_bytes(path, json.dumps(payload, indent=1).encode())
        except OSError:  # a read-only home is not an error: the cache is an optimisation
            pass
    return payload, False


DERIVATION_FORMAT = 1
"""The layout of a cached derivation (:mod:`theory.safe_codec` JSON); an entry of another format is a miss."""


def _is_derivation_of(entry: Any, param: Any) -> bool:
    """A decoded entry is used only when it is a :class:`~theory.derivation.Derivation` of ``param``."""
    from theory.derivation import Derivation

    return isinstance(entry, Derivation) and str(getattr(entry, "param", None)) == str(param)


def derivation_path(param: Parametrization) -> Path:
    """Where :func:`cached_derive` keeps ``param``'s derivation: ``derivation-<param>-<key>.json``."""
    return cache_dir() / f"derivation-{param}-{source_key((param,), False)}.json"


def _read_derivation(path: Path, param: Parametrization) -> Any:
    """The cached derivation of ``param`` at ``path``, or ``None`` for a miss: absent, unreadable, not JSON,
    another format, anything :func:`theory.safe_codec.decode` refuses, or not a ``Derivation`` of ``param``.
    Nothing read is executed (:mod:`theory.safe_codec`)."""
    from theory.files import read_nofollow
    from theory.safe_codec import CodecError, decode

    try:
        entry = json.loads(read_nofollow(path))
        if not (isinstance(entry, dict) and entry.get("format") == DERIVATION_FORMAT):
            return None
        d = decode(entry.get("derivation"))
    except (OSError, ValueError, RecursionError, CodecError):  # ValueError: not JSON; RecursionError: too deep
        return None
    return d if _is_derivation_of(d, param) else None


def cached_derive(param: Parametrization, use_cache: bool = True):
    """:func:`theory.derivation.derive` of ``param``, cached on disk under the same key scheme as JSON that
    cannot run code (:mod:`theory.safe_codec`: sympy expressions as ``srepr`` read back without ``eval``).

    An entry is written only when it reads back equal to the derivation, so a cache hit returns the same
    :class:`~theory.derivation.Derivation` as a fresh derivation; a corrupt or foreign entry is ignored and
    recomputed (never executed). An old pickled entry (``.pickle``) is never read.
    """
    from theory.derivation import derive
    from theory.safe_codec import CodecError, decode, encode

    path = derivation_path(param)
    if use_cache:
        hit = _read_derivation(path, param)
        if hit is not None:
            return hit
    d = derive(param)
    if use_cache:
        try:
            data = encode(d)
            if decode(data) == d:  # written only when it reads back as the same derivation
                text = json.dumps({"format": DERIVATION_FORMAT, "param": str(param), "derivation": data})
                atomic_write_bytes(path, text.encode())
        except (OSError, CodecError, RecursionError):  # a read-only home, a value the codec lacks: no cache
            pass
    return d
