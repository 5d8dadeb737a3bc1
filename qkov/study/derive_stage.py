"""The theory stage of ``qkov reproduce``: one derive run (docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

from qkov.core.config import PARAMETRIZATIONS


def study_runs(quick: bool, data_dir: Path | None) -> list[tuple[str, dict]]:
    """One derivation of all four parametrizations (thorough full-matrix checks in ``--full``)."""
    return [("derive", {"params": list(PARAMETRIZATIONS), "formats": ["md", "html", "tex"], "thorough": not quick})]


def execute(kind: str, config: dict, run_dir: Path) -> None:
    """Write the derive run (derivation.json, reports, metrics, claims) into ``run_dir``."""
    from qkov.cli.derive import DeriveConfig, write_derivation
    from qkov.core.config import parse_config

    if kind != "derive":
        raise ValueError(f"qkov.study.derive_stage: unknown run kind {kind!r}")
    write_derivation(run_dir, parse_config(DeriveConfig, **config))
