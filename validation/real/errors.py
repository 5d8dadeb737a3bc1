"""One-line errors for missing or malformed data files and records."""

from __future__ import annotations

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
