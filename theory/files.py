"""Atomic file writes: a reader sees the old file or the new one, never a part.

Used by theory's derivation cache and by the app's run store (:mod:`qkov.core.runstore`); reads that never
follow a symbolic link (:func:`read_nofollow`) serve the run store and the real-data training state
(:mod:`validation.real.resume`).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterator


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None,
                       parents: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same directory, fsync, ``os.replace``).

    ``mode``: permission bits for the new file before the umask (default ``0o666``, i.e. 0644 under the
    usual umask 022, like any file ``open`` creates; :func:`tempfile.mkstemp` alone would give 0600).
    ``parents=False``: the directory must exist already (``FileNotFoundError`` if it vanished), it is not
    created again.
    """
    path = Path(path)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, (0o666 if mode is None else mode) & ~umask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


@contextlib.contextmanager
def open_regular_nofollow(path: str | os.PathLike[str]) -> Iterator[io.BufferedReader]:
    """``path`` opened for reading if it is a regular file reached without a symbolic link (``OSError``
    otherwise: ``ELOOP`` for a link, ``IsADirectoryError`` for anything that is not a regular file)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(f"{path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            yield fh
    finally:
        os.close(fd)


def read_nofollow(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """Bytes of the regular file ``path`` (at most ``limit``), never through a symbolic link (``OSError`` otherwise)."""
    with open_regular_nofollow(path) as fh:
        return fh.read() if limit is None else fh.read(limit)


__all__ = ["atomic_write_bytes", "open_regular_nofollow", "read_nofollow"]
