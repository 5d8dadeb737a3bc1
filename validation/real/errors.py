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


def bad_record(path: Path, record: str | int, expected: str) -> DataError:
    """Error naming the file, the record (line number or id) and what was expected."""
    where = f"line {record}" if isinstance(record, int) else f"record {record!r}"
    return DataError(f"data file {str(path)!r}, {where}: expected {expected}")


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
