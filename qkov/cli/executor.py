"""``--scheduler``/``--workers``: where a ``qkov validate`` command executes its runs (the study engine's
executor, :func:`qkov.study.engine.open_executor`): in this process by default, on Dask when asked."""

from __future__ import annotations

from typing import Callable

import click

from qkov.cli.options import Integer


def executor_options() -> Callable:
    """The options ``--scheduler ADDR`` (an existing Dask scheduler) and ``--workers N`` (a local Dask cluster of
    N worker processes); neither: the runs execute one after the other in this process."""
    def deco(f):
        f = click.option("--workers", type=Integer(1, 512), default=None,
                         help="Run on a local Dask cluster of this many worker processes [default: in this "
                              "process].")(f)
        return click.option("--scheduler", type=str, default=None,
                            help="Run on an existing Dask scheduler (tcp://host:8786) [default: in this "
                                 "process].")(f)
    return deco


__all__ = ["executor_options"]
