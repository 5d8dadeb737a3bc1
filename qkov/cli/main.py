"""The ``qkov`` command line: one click group over the app's commands, loaded on use.

``qkov --help`` and ``qkov --version`` import click alone: each command's one-line help is in
:data:`COMMANDS`, and a command's module (with sympy, torch or Dask behind it) is imported only when
that command runs. A rejected value (:class:`theory.errors.InputError`, which :class:`qkov.core.config.ConfigError`
and data-file errors are) prints one line ``qkov: error: <field>: <value>: <what is allowed>`` and exits 2.
"""

from __future__ import annotations

import sys
from typing import Callable

import click

from qkov.cli.support import CONTEXT_SETTINGS, LazyGroup, run_cli


def _derive() -> click.Command:
    from qkov.cli.derive import derive
    return derive


def _simulate() -> click.Command:
    from qkov.cli.simulate import simulate
    return simulate


def _validate() -> click.Command:
    from qkov.cli.validate import validate
    return validate


def _reproduce() -> click.Command:
    from qkov.cli.reproduce import reproduce
    return reproduce


def _report() -> click.Command:
    from qkov.cli.report import report
    return report


def _data() -> click.Command:
    from qkov.cli.data import data
    return data


def _export() -> click.Command:
    from qkov.cli.export import export
    return export


def _docs() -> click.Command:
    from qkov.cli.docs import docs
    return docs


def _inspect() -> click.Command:
    from qkov.cli.inspect_model import inspect
    return inspect


COMMANDS: dict[str, tuple[str, Callable[[], click.Command]]] = {
    "derive": ("Derive the gradient flow of the four parametrizations in sympy, check every claim, write the report.",
               _derive),
    "simulate": ("Integrate the derived flows (reduced ODE or full matrices) and print u, v, p, loss.", _simulate),
    "validate": ("Train torch models and hold them against the theory (synthetic or real data).", _validate),
    "reproduce": ("Run every stage of the study, resumably, and build the report.", _reproduce),
    "report": ("Build OUT/report.html (self-contained, offline) and OUT/report.md from OUT/runs/.", _report),
    "data": ("Get the real-data sets from their official sources (fetch) and verify a data directory (check).",
             _data),
    "export": ("Write a committed record set (records/<set>.jsonl) from a results directory's complete runs.",
               _export),
    "docs": ("Regenerate the docs' generated tables from the committed records (--check: compare, exit 1).",
             _docs),
    "inspect": ("Show how qkov.param_groups would split a model's attention, and each parameter's rate.", _inspect),
}
"""name -> (one-line help, loader), in the order ``qkov --help`` lists them."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("qkov")
    except PackageNotFoundError:
        return "0+unknown"


@click.group(cls=LazyGroup, commands_registry=COMMANDS, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="qkov", prog_name="qkov", version=None, message="%(prog)s, version %(version)s")
def cli() -> None:
    """qkov: derive, simulate and validate how faster query-key learning sharpens attention."""


WRITERS: dict[str, str] = {"reproduce": "qkov reproduce", "derive": "qkov derive", "report": "qkov report",
                           "validate": "qkov validate", "simulate": "qkov simulate"}
"""Commands that take ``--out``'s lock (``simulate`` only with ``--save``/``--plot``): probed early."""


def _out_of(args: list[str]) -> str:
    """The ``--out`` value among ``args`` (``--out X`` or ``--out=X``), else the default ``qkov-results``."""
    out = "qkov-results"
    for i, a in enumerate(args):
        if a == "--out" and i + 1 < len(args):
            out = args[i + 1]
        elif a.startswith("--out="):
            out = a[len("--out="):]
    return out


def busy_refusal(args: list[str]) -> str | None:
    """The one-line refusal for a writing command whose ``--out`` is locked by a running qkov, found before the
    command's modules (numpy, pydantic, Dask) are imported; ``None`` when the command must run its full checks.
    Reads only (:func:`qkov.core.lock.busy_message`)."""
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] not in WRITERS or any(a in ("-h", "--help", "--json") for a in args):
        return None
    if words[0] == "simulate" and not {"--save", "--plot"} & set(args):
        return None
    from qkov.core.lock import busy_message

    try:
        return busy_message(_out_of(args), WRITERS[words[0]])
    except (OSError, ValueError):
        return None


def main(args: list[str] | None = None, obj: dict | None = None) -> None:
    """Console-script entry point of ``qkov`` (``obj``: see :func:`qkov.cli.support.injected`).

    A second writer of a busy ``--out`` is refused here, before its command is imported (issue 35: 3-8 s
    under load before; see docs/reliability.md)."""
    from qkov.cli.support import one_line

    refusal = busy_refusal(sys.argv[1:] if args is None else list(args))
    if refusal is not None:
        click.echo(f"qkov: error: {one_line(refusal)}", err=True)
        sys.exit(2)
    sys.exit(run_cli(cli, args, obj=obj))


if __name__ == "__main__":  # pragma: no cover
    main()
