"""The body of ``qkov derive`` as library calls: derive (or load the cached derivation) and write the run.

:func:`derive` plans the run ``OUT/runs/derive-<key>/`` and executes it through the study engine
(:func:`qkov.study.command_run.run_command`: ``OUT``'s lock taken before deriving, in this process by
default) with the stage code of ``qkov reproduce`` (:func:`qkov.study.derive_stage.execute`). A complete
run of the same config (parametrizations, formats, ``thorough``) is reused, as by every command; with
``use_cache=False`` (``--no-cache``) the derivation is recomputed and the run rewritten.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from qkov.core.config import PARAMETRIZATIONS, StrictConfig

KIND = "derive"
"""Run kind of ``qkov derive`` (and of ``qkov reproduce``'s theory stage)."""
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
    """What :func:`derive` wrote: the derivation (JSON data), its run directory and report files, and whether
    a complete run of the same config was reused (nothing derived)."""

    payload: dict
    run_dir: Path
    reports: tuple[Path, ...]
    reused: bool = False


def derive(cfg: DeriveConfig, out: Path, use_cache: bool = True, *, executor: Any = None,
           scheduler: str | None = None, workers: int | None = None) -> DerivationResult:
    """The derive run ``out/runs/derive-<key>/`` through the study engine, holding ``out``'s lock (taken before
    deriving): a complete run of ``cfg`` is reused; with ``use_cache=False`` it is removed and the derivation
    recomputed (the cache ignored). ``executor``/``scheduler``/``workers``:
    :func:`qkov.study.engine.open_executor` (in this process by default)."""
    import functools
    import json

    from qkov.study import derive_stage
    from qkov.study.command_run import run_command

    execute = None if use_cache else functools.partial(derive_stage.execute, use_cache=False)
    done = run_command(KIND, cfg.to_json_dict(), out, "qkov derive", execute=execute, executor=executor,
                       scheduler=scheduler, workers=workers, redo=not use_cache)
    payload = json.loads((done.run_dir / "derivation.json").read_text(encoding="utf-8"))
    return DerivationResult(payload, done.run_dir, tuple(done.run_dir / REPORT_FILES[f] for f in cfg.formats),
                            done.reused)


__all__ = ["DeriveConfig", "FORMATS", "KIND", "REPORT_FILES", "write_derivation", "derivation_payload", "derive", "DerivationResult"]
