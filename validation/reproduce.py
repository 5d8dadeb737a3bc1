"""``qkov reproduce``: run the study's stages and print where the results are.

Stages are added by the layers that implement them; this module runs those that
exist, in data-flow order, each into its own run directory under ``--out``.
"""

from __future__ import annotations

from pathlib import Path

import click

from theory.config import StrictConfig, parse_config, resolve_data_dir
from theory.runstore import RunWriter


class ReproduceConfig(StrictConfig):
    """What ``qkov reproduce`` runs."""

    quick: bool = True
    out: Path = Path("qkov-results")


@click.command()
@click.option("--quick/--full", default=True, help="Quick subsampled study (default) or the paper-scale one.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("qkov-results"),
              show_default=True, help="Results directory.")
@click.option("--data-dir", type=str, default=None, help="Real-data directory (else $QKOV_DATA_DIR).")
def reproduce(quick: bool, out: Path, data_dir: str | None) -> None:
    """Run every stage of the study that exists and print the results path."""
    cfg = parse_config(ReproduceConfig, quick=quick, out=out)
    data = resolve_data_dir(data_dir)
    skipped = []
    if data is None:
        skipped.append("real data: no data directory (give --data-dir or set $QKOV_DATA_DIR; see docs/data.md)")
    with RunWriter(cfg.out / "reproduce", kind="reproduce", config=cfg.to_json_dict()) as run:
        run.write_json("metrics.json", {"stages": [], "skipped": skipped})
    for line in skipped:
        click.echo(f"skipped {line}")
    click.echo(f"results: {cfg.out.resolve()}")
