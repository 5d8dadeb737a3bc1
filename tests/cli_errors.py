"""The CLI's promise for rejected input, as one assertion: one stderr line ``qkov: error: <field>: <value>: <allowed>``."""

from __future__ import annotations


def assert_one_line_error(err: str, field: str) -> str:
    """``err`` is exactly one line naming ``field``, then a value, then what is allowed; returns the line."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one error line, got {lines!r}"
    line = lines[0]
    prefix = f"qkov: error: {field}: "
    assert line.startswith(prefix), f"{line!r} does not start with {prefix!r}"
    rest = line[len(prefix):]
    assert ": " in rest and rest.split(": ", 1)[1].strip(), f"{line!r}: no '<value>: <what is allowed>' part"
    return line
