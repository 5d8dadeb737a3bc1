"""Resume inside a run: the training state at the end of every epoch, in one file.

:func:`validation.real.training.train` given ``resume=path`` writes, after each epoch, everything the
following epochs read (:func:`save`): the model's, optimizer's and scheduler's state, the RNG states (torch's
global one, which dropout draws from; the data-order generator; CUDA's on a CUDA device; Python's and numpy's
global ones), the checkpoint callback's state (:meth:`validation.real.tracking.Tracker.state_dict`: its
records, best-validation weights and index, step-0 metrics) and the history so far. Started again with the
same ``path`` and run it continues after the last complete epoch, with the result of an uninterrupted run
(bitwise on the CPU: ``tests/integration/real/test_resume.py``).

The file is one ``torch.save`` of tensors and plain values (numpy values made plain first), read back with
``weights_only=True`` (nothing in it is executed); written atomically (a temporary file in its directory,
fsync, ``os.replace``), never through a symbolic link: its directory is checked with ``lstat`` (made with
``os.mkdir``, which does not follow one), the file is read with :func:`theory.files.read_nofollow`. A file whose ``key`` (the
run's configuration, device and data size) differs from the run's, or that cannot be read, is not used:
training starts from the beginning (with a :class:`ResumeIgnoredWarning`) and overwrites it.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from theory.errors import InputError
from theory.files import atomic_write_bytes, read_nofollow

FORMAT = 1
"""The layout of the state file; a file of another format is not used."""


class ResumeRefused(InputError):
    """The training state's directory (or file) is a symbolic link or not a directory: one line."""


class ResumeIgnoredWarning(UserWarning):
    """A training-state file that is not used (another run's, another format, unreadable)."""


def _real_dir(path: Path) -> bool:
    """True when ``path`` is a real directory, False when absent; :class:`ResumeRefused` otherwise (never followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise ResumeRefused(f"resume: {path}: a symbolic link; qkov never writes a training state through a link "
                            "(remove it)")
    if not stat.S_ISDIR(st.st_mode):
        raise ResumeRefused(f"resume: {path}: not a directory")
    return True


def prepare_dir(directory: str | os.PathLike[str]) -> Path:
    """Make ``directory`` without following a link at it or its parent (the results directory, made if missing,
    as the run store makes it); refuse a link at either."""
    directory = Path(directory)
    if not _real_dir(directory.parent):
        directory.parent.mkdir(parents=True, exist_ok=True)
        _real_dir(directory.parent)
    if not _real_dir(directory):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory)
        _real_dir(directory)
    return directory


def plain(obj: Any) -> Any:
    """``obj`` with numpy scalars and arrays made Python values (tensors and containers kept), so that
    ``torch.load(..., weights_only=True)`` reads it back."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, dict):
        return type(obj)((k, plain(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(plain(v) for v in obj)
    return obj


def save(path: str | os.PathLike[str], key: str, state: dict[str, Any]) -> None:
    """Write ``state`` (tensors, containers, plain values) as the training state of run ``key`` at ``path``,
    atomically and never through a link (module docstring). The directory is made again if a finished run
    removed it meanwhile (:func:`remove`)."""
    path = Path(path)
    buf = io.BytesIO()
    torch.save(plain({"format": FORMAT, "key": key, **state}), buf)
    for attempt in (0, 1):
        prepare_dir(path.parent)
        try:
            atomic_write_bytes(path, buf.getvalue(), parents=False)
            return
        except FileNotFoundError:  # another run removed the empty directory between the check and the write
            if attempt:
                raise


def load(path: str | os.PathLike[str], key: str) -> dict[str, Any] | None:
    """The training state at ``path`` if it is a regular file (not a link) written for ``key`` in this
    :data:`FORMAT`, else ``None`` (absent: silently; otherwise with a :class:`ResumeIgnoredWarning`)."""
    path = Path(path)
    if not _real_dir(path.parent):
        return None
    try:
        raw = read_nofollow(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.warn(f"resume: {path}: not read ({exc.strerror or exc}); training starts from the beginning",
                      ResumeIgnoredWarning, stacklevel=2)
        return None
    try:
        state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # a damaged or foreign file is not used; the run starts again
        warnings.warn(f"resume: {path}: not read ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
                      "training starts from the beginning", ResumeIgnoredWarning, stacklevel=2)
        return None
    if not isinstance(state, dict) or state.get("format") != FORMAT or state.get("key") != key:
        warnings.warn(f"resume: {path}: written for another run or format; training starts from the beginning",
                      ResumeIgnoredWarning, stacklevel=2)
        return None
    return state


def remove(path: str | os.PathLike[str]) -> None:
    """Delete the training state at ``path`` (``unlink`` removes a link itself, never its target) and its
    directory when that is left empty; nothing when absent."""
    path = Path(path)
    if not _real_dir(path.parent):
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with contextlib.suppress(OSError):  # not empty (another run's state), or gone
        os.rmdir(path.parent)


def rng_state(device: torch.device | None) -> dict[str, Any]:
    """Every global random state training may draw from: torch's (CPU; CUDA's on a CUDA ``device``),
    Python's and numpy's legacy global one."""
    import random

    out: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate(),
                           "numpy": np.random.get_state(legacy=True)}
    if device is not None and device.type == "cuda":
        out["cuda"] = torch.cuda.get_rng_state(device)
    return out


def set_rng_state(state: dict[str, Any], device: torch.device | None) -> None:
    """Restore what :func:`rng_state` returned (after a :func:`save` / :func:`load` round trip)."""
    import random

    torch.set_rng_state(state["torch"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    if "cuda" in state and device is not None and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)
