"""Validated, typed run configuration shared by every qkov command.

Every configuration is a frozen pydantic model: each field has a type and an
allowed range. :func:`parse_config` turns a validation failure into a
:class:`ConfigError` whose message is one line naming the field, the value and
what is allowed; the CLI prints that line and exits with status 2 before any
file is written.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Annotated, Any, Mapping, Sequence, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, TypeAdapter, ValidationError

from theory.errors import InputError
from theory.parametrization import PARAMETRIZATIONS as PARAMETRIZATIONS, ParamName  # re-exported

Parametrization = ParamName  # the type of a parametrization field in a config: any registered name


class ConfigError(InputError):
    """A rejected configuration; ``str(err)`` is a single line ``<field>: <value>: <what is allowed>``."""


def show_value(value: Any) -> str:
    """A value as the error line shows it: plain text, quoted only when empty or padded or holding ': ' or a
    character that is not printable (a newline, a tab, an escape): ``repr`` then escapes it, so the error
    stays one line and no terminal control sequence reaches the screen. A value over 200 characters is cut
    (:func:`clip`), so the line stays short."""
    if isinstance(value, str):
        value = clip(value, 200)  # a 100 KB value makes a 100 KB error line: show its start and its length
        return repr(value) if (value == "" or value.strip() != value or ": " in value
                               or not value.isprintable()) else value
    if isinstance(value, Path):
        return show_value(str(value))
    return clip(repr(value) if isinstance(value, (tuple, list, dict)) else str(value), 200)


def field_error(field: str, value: Any, allowed: str) -> ConfigError:
    """The one-line error ``<field>: <value>: <allowed>`` that the CLI prints after ``qkov: error: ``."""
    return ConfigError(f"{field}: {show_value(value)}: {allowed}")


def _positive_finite(x: float) -> float:
    if not math.isfinite(x) or x <= 0:
        raise ValueError("must be a finite number > 0")
    return x


def _finite_nonnegative(x: float) -> float:
    if not math.isfinite(x) or x < 0:
        raise ValueError("must be a finite number >= 0")
    return x


def _increasing_times(ts: tuple[float, ...]) -> tuple[float, ...]:
    if len(ts) == 0:
        raise ValueError("must hold at least one time")
    if any(not math.isfinite(t) or t < 0 for t in ts):
        raise ValueError("must hold finite times >= 0")
    if any(b <= a for a, b in zip(ts, ts[1:])):
        raise ValueError("must be strictly increasing")
    return ts


PositiveFinite = Annotated[float, AfterValidator(_positive_finite)]
"""A float that is finite and strictly positive (learning rates, scales)."""

NonNegativeFinite = Annotated[float, AfterValidator(_finite_nonnegative)]
"""A float that is finite and >= 0 (initial effective values)."""

TimeGrid = Annotated[tuple[float, ...], AfterValidator(_increasing_times)]
"""A strictly increasing tuple of finite, non-negative times."""


class StrictConfig(BaseModel):
    """Base of all qkov configurations: frozen, no unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    def to_json_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON data (what ``config.json`` holds)."""
        return self.model_dump(mode="json")


def _describe_error(err: Mapping[str, Any]) -> str:
    field = ".".join(str(p) for p in err.get("loc", ())).replace("_", "-") or "<config>"
    value = err.get("input")
    msg = err.get("msg", "invalid value")
    msg = msg.removeprefix("Value error, ")
    if err.get("type") == "literal_error":
        allowed = err.get("ctx", {}).get("expected", "")
        msg = f"must be one of {allowed}"
    elif err.get("type") in ("extra_forbidden", "unexpected_keyword_argument"):
        msg = "is not a known field"
    elif err.get("type") == "missing":
        return f"{field}: (missing): a value is required"
    elif err.get("type") in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        bound = err.get("ctx", {}).get("ge", err.get("ctx", {}).get("le", err.get("ctx", {}).get("gt", err.get("ctx", {}).get("lt"))))
        op = {"greater_than_equal": ">=", "less_than_equal": "<=", "greater_than": ">", "less_than": "<"}[err["type"]]
        msg = f"must be {op} {bound}"
    else:
        msg = msg.replace("Input should be", "must be")
    return f"{field}: {show_value(value)}: {msg}"


C = TypeVar("C")


@functools.lru_cache(maxsize=None)
def _adapter(cls: type) -> TypeAdapter:
    return TypeAdapter(cls)


def parse_config(cls: type[C], **values: Any) -> C:
    """Build a validated ``cls(**values)``; raise :class:`ConfigError` with a one-line message.

    ``cls`` is a :class:`StrictConfig` (pydantic) or a science package's spec dataclass
    (:class:`theory.spec.Spec`, whose field ranges are :mod:`annotated_types` metadata), validated by
    pydantic against the same metadata. Only the first error is reported, so the message stays one
    line that names the field, the rejected value and what is allowed.
    """
    try:
        if isinstance(cls, type) and issubclass(cls, BaseModel):
            return cls(**values)
        spec: type = cls  # a dataclass type (hashable: the adapter cache's key)
        return _adapter(spec).validate_python(values)
    except ValidationError as exc:
        raise ConfigError(_describe_error(exc.errors()[0])) from None


def parse_float_list(field: str, text: str) -> tuple[float, ...]:
    """Parse a comma-separated list of numbers (``"1,3,10"``) for field ``field``."""
    try:
        return tuple(float(x) for x in text.split(",") if x.strip() != "")
    except ValueError:
        raise field_error(field, text, "must be comma-separated numbers") from None


NAME_MAX = 255
"""Longest path component (bytes) a POSIX filesystem takes; a longer one fails with ``ENAMETOOLONG``."""

PATH_MAX = 4095
"""Longest path (bytes) the kernel takes."""


def check_path(field: str, value: Any) -> Path:
    """``value`` as a path a command may use, else a one-line :class:`ConfigError` naming ``field``: text (or
    ``os.PathLike``), not empty, no NUL byte, no component over :data:`NAME_MAX` bytes and at most
    :data:`PATH_MAX` bytes in all (checked here, before any system call can fail with ``ENAMETOOLONG``)."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise field_error(field, type(value).__name__, "must be a path (text)")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise field_error(field, repr(text)[:80], "must be a path (text)")
    if text.strip() == "":
        raise field_error(field, text, "must be a directory path, not empty")
    if "\0" in text:
        raise field_error(field, clip(text), "must not hold a NUL byte")
    try:
        encoded = os.fsencode(text)
    except UnicodeError:
        raise field_error(field, clip(text), "must be encodable as a file name") from None
    if len(encoded) > PATH_MAX:
        raise field_error(field, clip(text), f"is {len(encoded)} bytes long: a path may have at most {PATH_MAX}")
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        raise field_error(field, clip(text), f"has a component of {len(longest)} bytes: each part of a path may "
                                             f"have at most {NAME_MAX}")
    return Path(text).expanduser()


def clip(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters (with the count of those left out), for a short error line."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


DATA_DIR_ENV = "QKOV_DATA_DIR"
"""Environment variable naming the real-data directory (see the README)."""


def resolve_data_dir(flag: str | os.PathLike[str] | None) -> Path | None:
    """The data directory from ``--data-dir`` or ``$QKOV_DATA_DIR``; ``None`` if neither (or the variable empty).

    A directory that is named but does not exist, an empty ``--data-dir`` and a path over the system's limits
    (:func:`check_path`) are a :class:`ConfigError`.
    """
    if flag is not None:
        p = check_path("data-dir", flag)  # --data-dir "" is an error, not "no data" (unset it instead)
    else:
        raw_env = os.environ.get(DATA_DIR_ENV)
        if not raw_env:
            return None
        p = check_path("data-dir", raw_env)
    raw = flag if flag is not None else os.environ.get(DATA_DIR_ENV)
    try:
        is_dir = p.is_dir()
    except OSError:
        is_dir = False
    if not is_dir:
        source = "--data-dir" if flag is not None else f"${DATA_DIR_ENV}"
        raise field_error("data-dir", str(raw), f"must be an existing directory (given by {source})")
    return p


def as_choice_list(field: str, text: str, allowed: Sequence[str]) -> tuple[str, ...]:
    """Parse ``"A,B"`` into a tuple, each item one of ``allowed`` (``"all"`` = every one)."""
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if items == ("all",):
        return tuple(allowed)
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise field_error(field, text, f"must be 'all' or comma-separated values from {', '.join(allowed)}")
    return items


def _check_count(field: str, value: Any, lo: int, hi: int) -> None:
    """An integer option of the API (or its decimal text, as the CLI passes it), not a bool."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise field_error(field, clip(repr(value), 80), f"must be an integer >= {lo} and <= {hi}")


def check_study_arguments(preset: Any, out: Any, *, stages: Any = None, only: Any = None, workers: Any = None,
                          retries: Any = None, data_dir: Any = None, device: Any = None, bf16: Any = False,
                          progress: Any = False, presets: Sequence[str] = ("quick", "full")) -> None:
    """The Python API's arguments of :func:`qkov.study.reproduce`, checked as the CLI checks its options, before
    anything is made or written: :class:`ConfigError` (one line naming the field) for an empty or over-long
    ``out``, ``workers``/``retries`` that are not integers (``True`` is not a worker count), ``stages`` that
    are not :class:`~qkov.study.engine.Stage`-like objects (``None`` or ``object()`` among them), ``only`` not
    a list of names, a ``data_dir`` that is empty, a ``device`` that is not text, flags that are not bools.
    Ranges (``workers`` in 1..512, ...) are then the config's (:class:`~qkov.study.reproduce_study.ReproduceConfig`).
    """
    if not isinstance(preset, str) or preset not in presets:
        raise field_error("preset", clip(repr(preset), 80) if not isinstance(preset, str) else preset,
                          f"must be one of {', '.join(presets)}")
    check_path("out", out)
    _check_count("workers", workers, 1, 512)
    _check_count("retries", retries, 0, 20)
    if stages is not None:
        if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence) or len(stages) == 0:
            raise field_error("stages", clip(repr(stages), 80), "must be a non-empty list of Stage objects "
                                                                "(qkov.study.engine.Stage)")
        for i, st in enumerate(stages):
            if not (isinstance(getattr(st, "name", None), str) and callable(getattr(st, "study_runs", None))
                    and callable(getattr(st, "execute", None))):
                raise field_error(f"stages[{i}]", clip(repr(st), 80),
                                  "must be a Stage (qkov.study.engine.Stage: a name, study_runs and execute)")
    if only is not None and (isinstance(only, (str, bytes)) or not isinstance(only, Sequence)
                             or not all(isinstance(x, str) for x in only)):
        raise field_error("only", clip(repr(only), 80), "must be a list of stage names")
    if data_dir is not None:
        check_path("data-dir", data_dir)
    if device is not None and not isinstance(device, str):
        raise field_error("device", clip(repr(device), 80), "must be one of auto, cpu, cuda, cuda:N or mps")
    for name, flag in (("bf16", bf16), ("progress", progress)):
        if not isinstance(flag, bool):
            raise field_error(name, clip(repr(flag), 80), "must be True or False")


