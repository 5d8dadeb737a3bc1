"""Atomic file writes: a reader sees the old file or the new one, never a part.

Used by theory's derivation cache and by the app's run store (:mod:`qkov.core.runstore`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


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


__all__ = ["atomic_write_bytes"]
