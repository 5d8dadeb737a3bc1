"""The body of ``qkov derive`` as library calls: derive (or load the cached derivation) and write the run."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from qkov.core.config import PARAMETRIZATIONS, StrictConfig

FORMATS = ("md", "html", "tex")
REPORT_FILES = {"md": "report.md", "html": "report.html", "tex": "report.tex"}
"""Report format -> the file it is written to inside the run directory."""


class DeriveConfig(StrictConfig):
    """What ``qkov derive`` derives and writes: parametrizations, report formats, full-matrix checks at
    every size (``thorough``)."""

    params: tuple[str, ...] = PARAMETRIZATIONS
    formats: tuple[str, ...] = FORMATS
    thorough: bool = False


def derivation_payload(cfg: DeriveConfig, use_cache: bool = True) -> tuple[dict, bool]:
    """The derivation of ``cfg`` as JSON data and whether it came from the cache (writes nothing)."""
    from theory.derivation_cache import cached_derivation_json

    return cached_derivation_json(cfg.params, cfg.thorough, use_cache)


def write_derivation(run_dir: Path, cfg: DeriveConfig, use_cache: bool = True) -> dict:
    """Derive (or load from the cache), then write ``derivation.json`` and the reports into ``run_dir``."""
    from qkov.core.runstore import RunWriter
    from qkov.report.derivation import RENDERERS
    from qkov.study.claims import write_evidence
    from qkov.study.derive_stage import derivation_evidence

    started = time.perf_counter()
    payload, hit = derivation_payload(cfg, use_cache)
    elapsed = time.perf_counter() - started
    with RunWriter(run_dir, kind="derive", config=cfg.to_json_dict()) as run:
        run.write_json("derivation.json", payload)
        for fmt in cfg.formats:
            name, render = RENDERERS[fmt]
            run.write_text(name, render(payload))
        run.write_json("metrics.json", {**payload["summary"], "seconds": round(elapsed, 3), "from_cache": hit})
        write_evidence(run, derivation_evidence(payload))
    return payload


@dataclasses.dataclass(frozen=True)
class DerivationResult:
    """What :func:`derive` wrote: the derivation (JSON data), its run directory and report files."""

    payload: dict
    run_dir: Path
    reports: tuple[Path, ...]


def derive(cfg: DeriveConfig, out: Path, use_cache: bool = True) -> DerivationResult:
    """Write the derive run ``out/runs/derive-<key>/`` holding ``out``'s lock (taken before deriving)."""
    from qkov.core.lock import results_lock
    from qkov.core.runstore import run_dir_for

    run_dir = run_dir_for(out, "derive", cfg.to_json_dict())
    with results_lock(out, "qkov derive"):  # one writer per results directory
        payload = write_derivation(run_dir, cfg, use_cache=use_cache)
    return DerivationResult(payload, run_dir, tuple(run_dir / REPORT_FILES[f] for f in cfg.formats))


__all__ = ["DeriveConfig", "FORMATS", "write_derivation", "derivation_payload", "derive", "DerivationResult"]
