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
from typing import Annotated, Any, Sequence, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, TypeAdapter, ValidationError

from theory.errors import InputError
from theory.parametrization import PARAMETRIZATIONS as PARAMETRIZATIONS, ParamName  # re-exported

Parametrization = ParamName  # the type of a parametrization field in a config


class ConfigError(InputError):
    """A rejected configuration; ``str(err)`` is a single line ``<field>: <value>: <what is allowed>``."""


def show_value(value: Any) -> str:
    """A value as the error line shows it: plain text, quoted only when empty or padded or holding ': ' or a
    character that is not printable (a newline, a tab, an escape): ``repr`` then escapes it, so the error
    stays one line and no terminal control sequence reaches the screen."""
    if isinstance(value, str):
        return repr(value) if (value == "" or value.strip() != value or ": " in value
                               or not value.isprintable()) else value
    if isinstance(value, Path):
        return show_value(str(value))
    return repr(value) if isinstance(value, (tuple, list, dict)) else str(value)


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


def _existing_dir(p: Path) -> Path:
    if not p.is_dir():
        raise ValueError("must be an existing directory")
    return p


ExistingDir = Annotated[Path, AfterValidator(_existing_dir)]


class StrictConfig(BaseModel):
    """Base of all qkov configurations: frozen, no unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    def to_json_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON data (what ``config.json`` holds)."""
        return self.model_dump(mode="json")


def _describe_error(err: dict[str, Any]) -> str:
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
        return _adapter(cls).validate_python(values)
    except ValidationError as exc:
        raise ConfigError(_describe_error(exc.errors()[0])) from None


def parse_float_list(field: str, text: str) -> tuple[float, ...]:
    """Parse a comma-separated list of numbers (``"1,3,10"``) for field ``field``."""
    try:
        return tuple(float(x) for x in text.split(",") if x.strip() != "")
    except ValueError:
        raise field_error(field, text, "must be comma-separated numbers") from None


DATA_DIR_ENV = "QKOV_DATA_DIR"
"""Environment variable naming the real-data directory (see the README)."""


def resolve_data_dir(flag: str | os.PathLike[str] | None) -> Path | None:
    """The data directory from ``--data-dir`` or ``$QKOV_DATA_DIR``; ``None`` if neither.

    A directory that is named but does not exist is a :class:`ConfigError`.
    """
    raw = flag if flag is not None else os.environ.get(DATA_DIR_ENV)
    if raw is None or str(raw) == "":
        return None
    p = Path(raw).expanduser()
    if not p.is_dir():
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
