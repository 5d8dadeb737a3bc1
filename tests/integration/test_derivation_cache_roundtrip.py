"""theory.derive's disk cache (JSON of theory.safe_codec, no pickle) gives back the derivation it stored."""

from __future__ import annotations

import json


def test_a_cache_hit_equals_the_fresh_derivation(tmp_path, monkeypatch):
    """CACO (the cheapest derivation, ~10 s): derived fresh and stored, then read in a new call from disk (not
    from any in-process cache: the entry is decoded) and equal field by field, every expression included."""
    import theory
    from theory import derivation_cache as cache
    from theory.derivation import Derivation
    from theory.parametrization import Parametrization

    monkeypatch.setenv("QKOV_CACHE_DIR", str(tmp_path))
    fresh = theory.derive("CACO")
    path = cache.derivation_path(Parametrization("CACO"))
    entry = json.loads(path.read_text())
    assert entry["format"] == cache.DERIVATION_FORMAT and entry["param"] == "CACO"
    hit = cache._read_derivation(path, Parametrization("CACO"))
    assert isinstance(hit, Derivation) and hit is not fresh and hit == fresh
    assert hit.first_integral.H == fresh.first_integral.H and hit.system.rhs == fresh.system.rhs
    assert theory.derive("CACO") == fresh
