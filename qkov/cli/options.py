"""The options every qkov command shares, defined once, with their ranges.

Each value is checked while click parses it, before the command does any work; a rejected value
raises :class:`~qkov.core.config.ConfigError` with one line ``<field>: <value>: <what is allowed>``
(``qkov: error: `` is prepended by :func:`qkov.cli.support.run_cli`, which exits 2).

Bounds (why they are what they are):

* learning rates ``eta`` in ``[1e-4, 1e4]``, their ratio in ``[1e-6, 1e6]`` and times ``t <= 1e15``: the
  reduced flow is integrated in log time; inside these bounds every parametrization reaches ``t = 1e15`` in at
  most a few thousand steps (measured), while a ratio of ``1e8`` makes the start so stiff that it does not
  finish in minutes (and ``1e300`` never would). The integrator also stops after 20000 steps with an error;
* ``K <= 10000``, ``M <= 10000`` classes and common tokens (the reduced flow has them as parameters;
  full-matrix runs are additionally limited by memory, see ``--full``);
* ``--steps`` in ``[1, 10_000_000]``.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any, Callable, Sequence

import click

from theory.errors import InputError
from theory.parametrization import PARAMETRIZATIONS, Parametrization, registered

ETA_MIN, ETA_MAX = 1e-4, 1e4
RATIO_MIN, RATIO_MAX = 1e-6, 1e6
T_MAX = 1e15
SIZE_MAX = 10_000


def field_error(field: str, value: Any, allowed: str) -> InputError:
    """The one-line error ``<field>: <value>: <allowed>`` (see :func:`qkov.core.config.field_error`)."""
    from qkov.core.config import field_error as _field_error

    return _field_error(field, value, allowed)


def option_field(param: click.Parameter | None) -> str:
    """The field name an error line shows: the option's long name without dashes (``--eta-qk`` -> ``eta-qk``)."""
    if param is None:
        return "value"
    longs = [o for o in getattr(param, "opts", []) if o.startswith("--")]
    return longs[0][2:] if longs else (param.name or "value").replace("_", "-")


class _Type(click.ParamType):
    """A click type whose failures are one-line :class:`InputError` s naming the option's field."""

    allowed = "a value"

    def parse(self, text: str) -> Any:  # pragma: no cover - subclasses
        raise NotImplementedError

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        field = option_field(param)
        try:
            return self.parse(value)
        except (ValueError, OverflowError):
            raise field_error(field, value, self.allowed) from None


class Number(_Type):
    """A finite float in ``[lo, hi]`` (``lo_open``: strictly above ``lo``)."""

    name = "number"

    def __init__(self, lo: float | None = None, hi: float | None = None, lo_open: bool = False):
        self.lo, self.hi, self.lo_open = lo, hi, lo_open
        bounds = ([f"{'>' if lo_open else '>='} {lo:g}"] if lo is not None else []) + \
            ([f"<= {hi:g}"] if hi is not None else [])
        self.allowed = "must be a finite number" + (" " + " and ".join(bounds) if bounds else "")

    def check(self, x: float) -> float:
        if not math.isfinite(x) or (self.lo is not None and (x <= self.lo if self.lo_open else x < self.lo)) \
                or (self.hi is not None and x > self.hi):
            raise ValueError
        return x

    def parse(self, text: str) -> float:
        return self.check(float(text))


class Integer(_Type):
    """An integer in ``[lo, hi]``."""

    name = "integer"

    def __init__(self, lo: int | None = None, hi: int | None = None):
        self.lo, self.hi = lo, hi
        rng = (f" >= {lo}" if lo is not None else "") + (f" and <= {hi}" if hi is not None and lo is not None
                                                         else f" <= {hi}" if hi is not None else "")
        self.allowed = f"must be an integer{rng}"

    def parse(self, text: str) -> int:
        x = int(text.strip())
        if (self.lo is not None and x < self.lo) or (self.hi is not None and x > self.hi):
            raise ValueError
        return x


class Choice(_Type):
    """One of ``choices`` (exact, case-sensitive)."""

    name = "choice"

    def __init__(self, choices: Sequence[str]):
        self.choices = tuple(choices)
        self.allowed = "must be one of " + ", ".join(self.choices)

    def parse(self, text: str) -> str:
        if text not in self.choices:
            raise ValueError
        return text

    def get_metavar(self, param, ctx=None) -> str:  # click >= 8.2 passes ctx
        return "[" + "|".join(self.choices) + "]"


MAX_VALUES = 1000
"""Most values one list option (``--ratios``, ``--seeds``, ...) may hold; the message states the limit."""


class ListOf(_Type):
    """A comma-separated, non-empty list of at most :data:`MAX_VALUES` ``item`` values (``"all"`` for every
    choice of a Choice item)."""

    name = "list"

    def __init__(self, item: _Type, *, unique: bool = True):
        self.item, self.unique = item, unique
        self.allowed = (f"must be at most {MAX_VALUES} comma-separated values, each "
                        f"{item.allowed.removeprefix('must be ')}")
        if isinstance(item, Choice):
            self.allowed = f"must be 'all' or comma-separated values from {', '.join(item.choices)}"

    def parse(self, text: str) -> tuple:
        if text.count(",") >= MAX_VALUES:  # before parsing: a huge list costs nothing to refuse
            raise ValueError
        items = [x.strip() for x in text.split(",") if x.strip()]
        if isinstance(self.item, Choice) and items == ["all"]:
            return self.item.choices
        if not items:
            raise ValueError
        out = []
        for x in items:
            v = self.item.parse(x)
            if not (self.unique and v in out):
                out.append(v)
        return tuple(out)


class ParamList(ListOf):
    """``all`` or comma-separated parametrizations -> a tuple of :class:`~theory.Parametrization`."""

    def __init__(self):
        super().__init__(Choice(registered()))

    def parse(self, text: str) -> tuple:
        try:
            return tuple(str(p) for p in Parametrization.parse_list(text))
        except ValueError:
            raise ValueError from None


MAX_TIMES = 1000
"""Most output times one ``--t`` may list (each is a row of output; 20,000 took > 25 s to integrate and print)."""


class IncreasingTimes(ListOf):
    """Strictly increasing times in ``[0, T_MAX]``, at most :data:`MAX_TIMES` of them."""

    def __init__(self):
        super().__init__(Number(0.0, T_MAX), unique=False)
        self.allowed = (f"must be at most {MAX_TIMES} strictly increasing comma-separated times, each >= 0 and "
                        f"<= {T_MAX:g}")

    def parse(self, text: str) -> tuple:
        if text.count(",") >= MAX_TIMES:  # before parsing: a huge list costs nothing to refuse
            raise ValueError
        ts = super().parse(text)
        if any(b <= a for a, b in zip(ts, ts[1:])):
            raise ValueError
        return ts


def check_out_dir(value: str | os.PathLike[str], field: str = "out") -> Path:
    """A results directory that can be written: not empty, not a file or device, not a symbolic link, writable,
    within the system's path limits (:func:`qkov.core.config.check_path`).

    It need not exist; its nearest existing ancestor must be a directory we may write into.
    """
    from qkov.core.config import check_path

    text = str(value)
    p = check_path(field, text)  # empty, NUL, a component over 255 bytes: one line before any system call
    try:
        return _check_out_path(p, text, field)
    except OSError as exc:  # whatever the filesystem says (EACCES on a parent, ELOOP): one line
        raise field_error(field, text, f"cannot be used ({exc.strerror or type(exc).__name__})") from None


def _check_out_path(p: Path, text: str, field: str) -> Path:
    if p.is_symlink():
        raise field_error(field, text, "is a symbolic link: qkov never writes results through a link; give the "
                                       "directory it points to")
    if p.exists():
        if not p.is_dir():
            kind = "a file" if p.is_file() else "not a directory (a device, socket or broken link)"
            raise field_error(field, text, f"must be a directory (or not exist yet), but it is {kind}")
        why = _cannot_write_into(p)
        if why:
            raise field_error(field, text, f"cannot write there ({why}): must be a writable directory")
        from qkov.core.runstore import check_results_tree

        check_results_tree(p)  # OUT/runs or a run directory as a link: refused before any work
        return p
    parent = p.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or stat.S_ISCHR(parent.stat().st_mode):
        raise field_error(field, text, f"cannot be created: {parent} is not a directory")
    why = _cannot_write_into(parent)
    if why:
        raise field_error(field, text, f"cannot write there: {parent} is not writable ({why})")
    return p


def _cannot_write_into(directory: Path) -> str | None:
    """Why no file can be created in ``directory`` (``None`` if one can): a probe file, removed at once
    (``os.access`` is wrong for root and for read-only mounts)."""
    import tempfile

    try:
        fd, name = tempfile.mkstemp(prefix=".qkov-probe-", dir=directory)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    os.unlink(name)
    return None


class OutDir(_Type):
    """A results directory (see :func:`check_out_dir`)."""

    name = "directory"

    def convert(self, value, param, ctx):
        return check_out_dir(value, option_field(param))


class Device(_Type):
    """A torch device request ``auto | cpu | cuda[:N] | mps``, checked **present** while parsing (so an absent
    CUDA or MPS is one line ``device: cuda: not available (...)`` and exit 2 before any work); the value is the
    canonical request text (``validation.device.resolve_device`` turns it into a ``torch.device``)."""

    name = "device"
    allowed = "must be one of auto, cpu, cuda, cuda:N or mps"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if str(value).strip().lower() in ("auto", "cpu"):  # always present: no torch to import to say so
            return str(value).strip().lower()
        from validation.device import DeviceError, parse_device, resolve_device  # torch: load on use

        try:
            text = parse_device(str(value))
            resolve_device(text)
        except DeviceError as exc:
            raise field_error(option_field(param), value, exc.why) from None
        return text


ETA = Number(ETA_MIN, ETA_MAX)
RATIO = Number(RATIO_MIN, RATIO_MAX)


def _opt(*decls: str, **kw) -> Callable:
    kw.setdefault("show_default", True)
    return click.option(*decls, **kw)


def param_option(default: str = "all", help: str | None = None) -> Callable:
    """``--param``: ``all`` (MODEL.md's four) or comma-separated registered parametrizations (:func:`registered`)."""
    return _opt("--param", "params", type=ParamList(), default=default,
                help=help or f"Parametrizations: all ({', '.join(PARAMETRIZATIONS)}), or comma-separated from "
                             f"{', '.join(registered())}.")


def size_options(K: int, M: int, hi: int = SIZE_MAX) -> Callable:
    """``--K`` (classes, >= 2) and ``--M`` (common tokens, >= 1)."""
    def deco(f):
        f = _opt("--M", "M", type=Integer(1, hi), default=M, help="Common tokens (>= 1).")(f)
        return _opt("--K", "K", type=Integer(2, hi), default=K, help="Classes (>= 2).")(f)
    return deco


def ratios_option(default: str) -> Callable:
    """``--ratios``: comma-separated eta_QK/eta_OV values."""
    return _opt("--ratios", type=ListOf(RATIO), default=default,
                help=f"eta_QK/eta_OV values, comma-separated, each in [{RATIO_MIN:g}, {RATIO_MAX:g}].")


def seed_option(default: int = 0) -> Callable:
    return _opt("--seed", type=Integer(0, 2**32 - 1), default=default, help="Random seed.")


def out_option(default: str = "qkov-results") -> Callable:
    """``--out``: the results directory; runs go to ``OUT/runs/<kind>-<key>/``."""
    return _opt("--out", type=OutDir(), default=default,
                help="Results directory; each run goes to OUT/runs/<kind>-<key>/.")


def device_option(default: str | None = "auto") -> Callable:
    """``--device``: where torch training runs (``auto`` = CUDA, else MPS, else CPU) and ``--bf16``: bf16 autocast
    on CUDA (off by default). Both are recorded in every run's manifest."""
    def deco(f):
        f = click.option("--bf16", "bf16", is_flag=True,
                         help="bf16 autocast of the forward pass (CUDA only; parameters stay float32).")(f)
        return _opt("--device", type=Device(), default=default,
                    help="Where to train: auto (CUDA, else MPS, else CPU), cpu, cuda, cuda:N or mps.")(f)
    return deco


def json_option() -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")


__all__ = ["Number", "Integer", "Choice", "ListOf", "ParamList", "IncreasingTimes", "OutDir", "check_out_dir",
           "field_error", "param_option", "size_options", "ratios_option", "seed_option",
           "out_option", "json_option", "Device", "device_option", "ETA", "RATIO", "ETA_MIN", "ETA_MAX", "T_MAX",
           "SIZE_MAX", "MAX_TIMES", "MAX_VALUES"]
