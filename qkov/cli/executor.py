"""``--scheduler``/``--workers``: where a ``qkov validate`` command executes its runs (the study engine's
executor, :func:`qkov.study.engine.open_executor`): in this process by default, on Dask when asked.

``--scheduler`` is parsed by :class:`SchedulerAddress` in every command that has it (``qkov reproduce`` too):
a malformed address is one line ``qkov: error: scheduler: <value>: malformed: ...`` and exit 2 while the
options are parsed, before anything is imported, planned or loaded; whether a scheduler answers there is
checked next, before any planning (:func:`qkov.study.connect.check_scheduler`)."""

from __future__ import annotations

from typing import Any, Callable

import click

from qkov.cli.options import Integer, _Type


class SchedulerAddress(_Type):
    """A Dask scheduler address, checked well-formed (:func:`qkov.study.connect.parse_address`); the value is the
    text as given."""

    name = "address"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value is None:
            return None
        from qkov.study.connect import parse_address

        parse_address(str(value))  # SchedulerError (an InputError): one line, exit 2
        return str(value)


SCHEDULER = SchedulerAddress()


def scheduler_option(help: str) -> Callable:
    """``--scheduler ADDR``, parsed by :class:`SchedulerAddress`."""
    return click.option("--scheduler", type=SCHEDULER, default=None, help=help)


def executor_options() -> Callable:
    """The options ``--scheduler ADDR`` (an existing Dask scheduler) and ``--workers N`` (a local Dask cluster of
    N worker processes); neither: the runs execute one after the other in this process."""
    def deco(f):
        f = click.option("--workers", type=Integer(1, 512), default=None,
                         help="Run on a local Dask cluster of this many worker processes [default: in this "
                              "process].")(f)
        return scheduler_option("Run on an existing Dask scheduler (tcp://host:8786) [default: in this process].")(f)
    return deco


__all__ = ["executor_options", "scheduler_option", "SchedulerAddress", "SCHEDULER"]
