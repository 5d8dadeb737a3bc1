"""One-line errors for missing or malformed data files and records, and the checked file reader.

Every data file goes through :func:`read_data_text`: it refuses a path that is missing, a
directory, a symlink loop, not a regular file, unreadable or empty, and text that is not
UTF-8 (naming the line and column of the first bad byte), each with one line naming the file.
"""

from __future__ import annotations

import errno
import stat
from pathlib import Path

from theory.errors import InputError


class DataError(InputError):
    """A missing or malformed data file or record; ``str(err)`` is one line.

    A subclass of :class:`~theory.errors.InputError`, so the ``qkov`` CLI prints it and exits 2.
    """


def missing_file(path: Path, fetch: str) -> DataError:
    """Error for a data file that is not there, saying which official file to fetch."""
    return DataError(f"data file {str(path)!r} is missing: {fetch} (see docs/data.md)")


def shown(value: object, limit: int = 60) -> str:
    """``value`` for a one-line message: its JSON text (a string escaped) on one line, cut to ``limit``."""
    import json

    if isinstance(value, str):
        text = value.encode("unicode_escape").decode("ascii")
    else:
        try:
            text = json.dumps(value)
        except (TypeError, ValueError, RecursionError):  # an integer past the digit limit, a cycle
            text = f"an integer of {len(format(value, 'x')) * 1.2:.0f}+ digits" if isinstance(value, int) \
                else f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bad_record(path: Path, record: str | int, expected: str) -> DataError:
    """Error naming the file, the record (line number or id) and what was expected."""
    where = f"line {record}" if isinstance(record, int) else f"record {shown(record)!r}"
    return DataError(f"data file {str(path)!r}, {where}: expected {expected}")


def parse_json(text: str, path: Path, what: str, *, line: int | None = None) -> object:
    """``json.loads(text)``, every failure a one-line :class:`DataError` naming ``path`` (and ``line``).

    Besides syntax errors (named by line; a cut-off document says it is truncated) this covers what the
    decoder raises outside ``JSONDecodeError``: nesting deeper than the interpreter's recursion limit
    (``RecursionError``) and integers longer than Python's digit limit (``ValueError``, 4300 digits).
    ``line``: the file's line number, when ``text`` is one line of a JSON-lines file.
    """
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        if exc.pos >= len(text.rstrip()):
            raise truncated(path, at, "the JSON document" if line is None else "a JSON record") from None
        raise DataError(f"data file {str(path)!r}, line {at}: expected {what} ({exc.msg})") from None
    except RecursionError:
        where = f", line {line}" if line is not None else ""
        raise DataError(f"data file {str(path)!r}{where}: expected {what} (nested too deeply to read: "
                        "more levels of brackets than any real file has)") from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        where = f", line {line}" if line is not None else ""
        why = "an integer with too many digits" if "digit" in str(exc) else str(exc).splitlines()[0][:80]
        raise DataError(f"data file {str(path)!r}{where}: expected {what} ({why})") from None


def file_problem(path: Path) -> str | None:
    """``None`` for a readable, non-empty regular file, else what is wrong with ``path`` (a phrase)."""
    try:
        st = Path(path).stat()          # follows symlinks: a loop raises ELOOP
    except FileNotFoundError:
        return "is missing" if not Path(path).is_symlink() else "is a dangling symlink (its target is missing)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop, not a regular file"
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a regular file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_size == 0:
        return "is empty (0 bytes)"
    return None


def check_file(path: Path, fetch: str) -> Path:
    """``path`` if it is a readable, non-empty regular file, else raise a one-line :class:`DataError`."""
    why = file_problem(path)
    if why == "is missing":
        raise missing_file(path, fetch)
    if why is not None:
        raise DataError(f"data file {str(path)!r} {why}")
    return Path(path)


def read_data_text(path: Path, fetch: str) -> str:
    """The UTF-8 text of a checked data file (:func:`check_file`).

    A byte sequence that is not UTF-8 raises a :class:`DataError` naming the line and column
    (1-based) of the first bad byte.
    """
    try:
        raw = check_file(path, fetch).read_bytes()
    except OSError as exc:
        raise DataError(f"data file {str(path)!r} cannot be read ({exc.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(f"data file {str(path)!r}, line {line}: not valid UTF-8 "
                        f"(byte 0x{raw[exc.start]:02x} at column {col})") from None


def no_records(path: Path, what: str) -> DataError:
    """Error for a file that parses but holds no usable record."""
    return DataError(f"data file {str(path)!r} holds no {what}")


def truncated(path: Path, line: int, what: str) -> DataError:
    """Error for a file that ends inside a record (no final newline and an incomplete record)."""
    return DataError(f"data file {str(path)!r}, line {line}: truncated (the file ends inside {what})")
