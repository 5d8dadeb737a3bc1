"""Running the click commands the qkov way.

Every rejected value prints exactly one line, ``qkov: error: <field>: <value>: <what is allowed>``, and exits
with status 2 before any work: a :class:`theory.errors.InputError` raised by a command (configs, data files)
and the usage errors click detects itself (a bad choice, a non-number, an unknown option) alike. An
``OSError`` that reaches the command line (a full or read-only disk while writing) is one line too, exit 1
(``ENAMETOOLONG``: exit 2). Control characters in any such line are shown escaped (:func:`one_line`).
"""

from __future__ import annotations

import contextlib
import errno
from typing import Any, Callable, Iterator

import click

from theory.errors import InputError

HELP_OPTIONS = ["-h", "--help"]
CONTEXT_SETTINGS = {"help_option_names": HELP_OPTIONS}
"""Context settings of every qkov command: ``-h`` and ``--help``, wherever the command is invoked from."""


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when used.

    ``commands_registry`` maps a name to ``(one-line help, loader)``; ``--help`` lists the names with
    their help without calling any loader, so it costs no import of sympy, torch or Dask.
    """

    def __init__(self, *args, commands_registry: dict[str, tuple[str, Callable[[], click.Command]]], **kwargs):
        super().__init__(*args, **kwargs)
        self.registry = commands_registry

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.registry)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = self.registry.get(name)
        return entry[1]() if entry else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short) for name, (short, _) in self.registry.items()]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _usage_line(exc: click.UsageError) -> str:
    """One line for a usage error click found: ``<field>: <value>: <what is allowed>`` where it can be told."""
    msg = " ".join(exc.format_message().split())
    param = getattr(exc, "param", None)
    if isinstance(exc, click.BadParameter) and param is not None:
        from qkov.cli.options import option_field

        return f"{option_field(param)}: {msg}"
    return msg


def one_line(text: str, limit: int = 2000) -> str:
    """``text`` as one printable line: a newline, tab or other control character is shown escaped (``\\n``),
    so a path or a lock holder's record holding one cannot split the error line or drive the terminal; cut
    at ``limit`` characters."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def os_error_line(exc: OSError) -> str:
    """One line for an ``OSError`` that reached the command line: the file, the system's reason, the fix."""
    where = f"{exc.filename}: " if exc.filename else ""
    why = exc.strerror or str(exc) or type(exc).__name__
    fix = {errno.ENAMETOOLONG: "a path component may have at most 255 bytes",
           errno.ENOSPC: "the disk is full: free space and rerun; incomplete runs are redone",
           errno.EDQUOT: "over the disk quota: free space and rerun; incomplete runs are redone",
           errno.EROFS: "a read-only filesystem: give a writable --out"}.get(exc.errno or 0)
    return one_line(f"{where}{why}" + (f" ({fix})" if fix else ""))


def injected(name: str) -> Any:
    """What the caller of :func:`run_cli` passed as ``obj[name]`` (``None`` if nothing).

    The one way to hand a command objects that are not command-line text, e.g. ``{"stages": ...}``: the
    :class:`~qkov.study.engine.Stage` objects ``qkov reproduce`` runs instead of the registry's (tests run
    the command on fake stages this way, with no global to set).
    """
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return obj.get(name) if isinstance(obj, dict) else None


OWN_PACKAGES = ("theory", "simulation", "validation", "qkov")


@contextlib.contextmanager
def one_line_warnings(prog_name: str = "qkov") -> Iterator[None]:
    """Within the block a warning of qkov's own (a category defined in :data:`OWN_PACKAGES`: a training state set
    aside, a checkpoint not used) prints as one line ``qkov: warning: <message>``; others print as Python
    prints them."""
    import warnings

    default = warnings.formatwarning

    def fmt(message, category, filename, lineno, line=None):
        if category.__module__.split(".")[0] in OWN_PACKAGES:
            return f"{prog_name}: warning: {one_line(str(message))}\n"
        return default(message, category, filename, lineno, line)

    warnings.formatwarning = fmt
    try:
        yield
    finally:
        warnings.formatwarning = default


def run_cli(group: click.Command, args: list[str] | None = None, prog_name: str = "qkov",
            obj: dict[str, Any] | None = None) -> int:
    """Run a click command, mapping rejected input to one stderr line and exit status 2; qkov's own warnings
    are one line each (:func:`one_line_warnings`).

    ``obj``: objects for the commands (:func:`injected`), e.g. ``{"stages": stages}``.
    """
    with one_line_warnings(prog_name):
        return _run_cli(group, args, prog_name, obj)


def _run_cli(group: click.Command, args: list[str] | None, prog_name: str, obj: dict[str, Any] | None) -> int:
    try:
        # With standalone_mode=False click returns ctx.exit(n)'s code instead of exiting: keep it.
        rv = group.main(args=args, prog_name=prog_name, standalone_mode=False, obj=obj)
    except InputError as exc:
        click.echo(f"{prog_name}: error: {one_line(str(exc))}", err=True)
        return 2
    except OSError as exc:  # a path over the system's limits (exit 2), a full or read-only disk (exit 1)
        click.echo(f"{prog_name}: error: {os_error_line(exc)}", err=True)
        return 2 if exc.errno == errno.ENAMETOOLONG else 1
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        click.echo(f"{prog_name}: error: {one_line(_usage_line(exc))}", err=True)
        return 2
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        return 1
    return rv if isinstance(rv, int) else 0
