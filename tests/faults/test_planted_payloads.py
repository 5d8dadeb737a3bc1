"""Nothing is ever unpickled: a payload planted in every cache and state location never runs (issue 44).

Each location gets a pickle whose unpickling would create a marker file (``open(marker, "w")``), at the exact
path qkov reads: the derivation cache (the JSON entry and the old ``.pickle`` name), the derive payload cache,
the Figure 2 segment checkpoint under ``$QKOV_CACHE_DIR/figure2/<key>.pt`` and a real-data training state
``OUT/resume/<run>.pt``. Each reader must treat it as a miss (recompute, start afresh) and the marker must
never appear. Before: the derivation cache and the Figure 2 checkpoint unpickled what they found."""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path

import pytest


class _Payload:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _plant(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(_Payload(marker)))


def test_the_payload_runs_when_unpickled(tmp_path):
    """The payload is real: unpickled, it makes the marker (so the tests below could fail)."""
    marker = tmp_path / "ran"
    pickle.loads(pickle.dumps(_Payload(marker)))
    assert marker.exists()


def test_derivation_cache_never_runs_a_planted_entry(tmp_path, monkeypatch):
    import theory.derivation as derivation
    from theory import derivation_cache as cache
    from theory.parametrization import Parametrization

    marker = tmp_path / "ran"
    monkeypatch.setenv("QKOV_CACHE_DIR", str(tmp_path / "cache"))
    param = Parametrization("CACO")
    sentinel = object()
    monkeypatch.setattr(derivation, "derive", lambda p: sentinel)
    entry = cache.derivation_path(param)
    _plant(entry, marker)
    _plant(entry.with_suffix(".pickle"), marker)                  # the name the old pickle cache used
    assert cache.cached_derive(param) is sentinel and not marker.exists()
    # a JSON entry whose expression text would run code if it were eval'd (sympy's own parser evals srepr)
    code = f"__import__('builtins').open({str(marker)!r}, 'w')"
    entry.write_text(json.dumps({"format": cache.DERIVATION_FORMAT, "derivation": {"__sympy__": code}}))
    assert cache.cached_derive(param) is sentinel and not marker.exists()
    json_entry = cache.cache_dir() / f"derive-{cache.source_key(('CACO',), False)}.json"
    _plant(json_entry, marker)
    monkeypatch.setattr(derivation, "derivation_json", lambda *a, **k: {"recomputed": True})
    assert cache.cached_derivation_json(("CACO",), False)[1] is False and not marker.exists()


def test_figure2_checkpoint_never_runs_a_planted_file(tmp_path, monkeypatch):
    """The checkpoint at the very path a Figure 2 run reads (``reproduce --full`` trains in segments)."""
    from qkov.study.figure2_run import checkpoint_path, study_configs
    from validation.synthetic import figure2 as f2

    marker = tmp_path / "ran"
    monkeypatch.setenv("QKOV_CACHE_DIR", str(tmp_path / "cache"))
    cfg = study_configs(quick=False)[0]
    path = checkpoint_path(cfg.to_json_dict())
    assert path.is_relative_to(tmp_path / "cache")
    _plant(path, marker)
    with pytest.warns(f2.CheckpointIgnoredWarning, match="not read"):
        assert f2.read_checkpoint(path, cfg) is None
    assert not marker.exists()


def test_resume_state_never_runs_a_planted_file(tmp_path):
    """``OUT/resume/<run>.pt`` was already read with weights_only=True: kept so, and set aside."""
    from validation.real import resume

    marker = tmp_path / "ran"
    state = tmp_path / "out" / "resume" / "validate-real-x.pt"
    _plant(state, marker)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert resume.load(state, "key") is None
    assert not marker.exists()
    assert any(issubclass(w.category, resume.ResumeIgnoredWarning) for w in seen)
