"""The derived ledger (``qkov derive --json``, a full derivation of the four parametrizations) agrees with the
claims table in theory/claims.py. Moved from tests/unit/theory/test_claims_table.py: the derivation takes
about a minute of CPU, so it is an integration test (and ``slow``: run it with ``pytest -m slow``)."""

from __future__ import annotations

import pytest

from theory.claims import CLAIMS


@pytest.mark.slow
def test_the_derived_ledger_agrees_with_the_table_and_states_no_more_than_its_checks(tmp_path, monkeypatch):
    """``qkov derive --json``'s ledger: the table's claims in order, the corrected statuses, scoped checks counted."""
    from theory.derivation_cache import cached_derivation_json

    monkeypatch.setenv("QKOV_CACHE_DIR", str(tmp_path))
    payload, _ = cached_derivation_json(("CACO", "FACO", "CAFO", "FAFO"))
    led = {e["id"]: e for e in payload["ledger"]}
    assert list(led) == list(CLAIMS)
    assert all(led[c]["claim"] == CLAIMS[c].wording for c in CLAIMS)
    for cid in ("sharpness-order", "sharpness-ratio", "adam-ratio"):
        assert (led[cid]["status"], led[cid].get("holds")) == ("refined", "in part"), cid
    text = " ".join(str(e.get("derived", "")) + " ".join(s["text"] for s in e.get("statements", []))
                    for e in payload["ledger"])
    assert "does not depend on the initialisation" not in text and "20-30%" not in text
    assert "depends on K, M and r" in led["sharpness-order"]["statements"][-1]["text"]
    checks = [c for sec in ("symmetric_subspace", "ordering") for c in payload[sec]["checks"]]
    checks += [c for p in payload["parametrizations"].values() for c in p["checks"]]
    scoped = {c["name"]: c["method"] for c in checks
              if c["name"].endswith("-loss-shift-vanishes") or c["name"].startswith("full-matrix-")}
    assert scoped and all(m != "symbolic" for m in scoped.values()), scoped
    assert payload["summary"]["at_one_point_or_size"] >= len(scoped) > 0
    for cid, e in led.items():   # every listed check supports the claim by its tag
        assert all(cid in c["claims"] for c in checks if c["name"] in e["evidence"]), cid
