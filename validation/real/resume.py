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
run's configuration, device and data size) differs from the run's, that cannot be read, or whose contents do
not fit the run (:func:`state_problem`: every required key, an epoch within the configured epochs, the model's
and the optimizer's shapes, the history's length; issue 44) is not used: it is moved aside to
``<file>.rejected`` (:func:`set_aside`, a link moved as the link) with one :class:`ResumeIgnoredWarning` line
naming it and the reason, and training starts from the beginning, so a rerun is never caught by the same bad
file again. Temporary files a killed write left (``.<file>.*.tmp``) are removed when the run starts again.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import stat
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

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


REJECTED_SUFFIX = ".rejected"
"""A state that is not used is moved to ``<file>.rejected`` (one per run: the latest rejected one)."""


def set_aside(path: str | os.PathLike[str], why: str, stacklevel: int = 2) -> None:
    """Move the training state ``path`` (a file, a link: moved as the link, never followed) to
    ``<path>.rejected`` and warn one line naming both and ``why``; training starts from the beginning."""
    path = Path(path)
    aside = path.with_name(path.name + REJECTED_SUFFIX)
    try:
        os.replace(path, aside)
        where = f"moved to {aside.name}"
    except FileNotFoundError:
        where = "gone"
    except OSError as exc:  # e.g. a directory at aside: the state stays, it is overwritten after the first epoch
        where = f"not moved ({exc.strerror or exc})"
    warnings.warn(f"resume: {path}: {why}; {where}; training starts from the beginning", ResumeIgnoredWarning,
                  stacklevel=stacklevel + 1)


def remove_temporaries(path: str | os.PathLike[str]) -> list[str]:
    """Delete the temporary files an interrupted :func:`save` of ``path`` left (``.<name>.*.tmp``, regular files
    only, never through a link); returns their names."""
    import glob

    path = Path(path)
    gone = []
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(tmp).st_mode):
                os.unlink(tmp)
                gone.append(tmp.name)
    return gone


def load(path: str | os.PathLike[str], key: str,
         check: Callable[[dict[str, Any]], str | None] | None = None) -> dict[str, Any] | None:
    """The training state at ``path`` if it is a regular file (not a link) written for ``key`` in this
    :data:`FORMAT` and ``check(state)`` (:func:`state_problem` with the run's model, optimizer and epochs) finds
    nothing wrong, else ``None``: absent, silently; otherwise the file is moved aside with a
    :class:`ResumeIgnoredWarning` (:func:`set_aside`). Temporary files of an interrupted write are removed first."""
    path = Path(path)
    if not _real_dir(path.parent):
        return None
    remove_temporaries(path)
    try:
        raw = read_nofollow(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        set_aside(path, f"not read ({exc.strerror or exc})")
        return None
    try:
        with warnings.catch_warnings():  # torch notes a foreign file's pickle protocol: the line below says it
            warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
            state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # a damaged or foreign file is not used; the run starts again
        set_aside(path, f"not read ({str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__})")
        return None
    if not isinstance(state, dict) or state.get("format") != FORMAT or state.get("key") != key:
        set_aside(path, "written for another run or format")
        return None
    problem = check(state) if check is not None else None
    if problem is not None:
        set_aside(path, f"does not fit this run ({problem})")
        return None
    return state


REQUIRED = ("epoch", "model", "optimizer", "scheduler", "data_order", "rng", "history", "callback")
"""The keys every training state has (:func:`validation.real.training.train` writes them)."""
HISTORY = ("epoch_loss", "checkpoints", "checkpoint_seconds", "state_seconds", "seconds")


def _number(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def tensors_problem(name: str, saved: Any, expected: Mapping[str, torch.Tensor]) -> str | None:
    """``None`` when ``saved`` maps exactly ``expected``'s keys to tensors of the same shapes and dtypes."""
    if not isinstance(saved, dict) or set(saved) != set(expected):
        return f"{name}: not the model's parameters"
    for k, ref in expected.items():
        t = saved[k]
        if not isinstance(t, torch.Tensor) or t.shape != ref.shape or t.dtype != ref.dtype:
            return f"{name}: {k}: not a {ref.dtype} tensor of shape {tuple(ref.shape)}"
    return None


def _optimizer_problem(saved: Any, optimizer: torch.optim.Optimizer) -> str | None:
    if not (isinstance(saved, dict) and isinstance(saved.get("state"), dict)
            and isinstance(saved.get("param_groups"), list)):
        return "optimizer: must hold state and param_groups"
    groups = saved["param_groups"]
    if len(groups) != len(optimizer.param_groups):
        return f"optimizer: {len(groups)} parameter groups, the run has {len(optimizer.param_groups)}"
    params: dict[Any, torch.Tensor] = {}
    for g, ref in zip(groups, optimizer.param_groups, strict=True):
        if not (isinstance(g, dict) and isinstance(g.get("params"), list) and len(g["params"]) == len(ref["params"])):
            return "optimizer: parameter groups differ from the run's"
        params.update(zip(g["params"], ref["params"], strict=True))
    for pid, st in saved["state"].items():
        if pid not in params or not isinstance(st, dict):
            return "optimizer: state of a parameter the run does not have"
        for name, t in st.items():
            if isinstance(t, torch.Tensor) and t.dim() > 0 and t.shape != params[pid].shape:
                return f"optimizer: {name}: shape {tuple(t.shape)}, the parameter's is {tuple(params[pid].shape)}"
    return None


def state_problem(state: dict[str, Any], *, epochs: int, model: Mapping[str, torch.Tensor],
                  optimizer: torch.optim.Optimizer, data_order: torch.Tensor,
                  callback: Callable[[Any], str | None] | None = None) -> str | None:
    """``None`` when ``state`` fits the run about to resume from it, else one line saying what does not: a
    required key (:data:`REQUIRED`) missing; ``epoch`` not an integer in ``[1, epochs]``; ``model`` not the
    model's state (``model``: its ``state_dict()``; same keys, shapes, dtypes); the optimizer's groups or the
    shapes of its per-parameter state; a data-order or RNG state of another size; a history whose per-epoch
    losses are not ``epoch`` numbers; ``callback(state["callback"])`` (the checkpoint callback's own check)."""
    missing = [k for k in REQUIRED if k not in state]
    if missing:
        return f"no {', '.join(missing)}"
    epoch = state["epoch"]
    if type(epoch) is not int or not 1 <= epoch <= epochs:
        return f"epoch: {repr(epoch)[:40]}: must be an integer in [1, {epochs}] (the configured epochs)"
    problem = tensors_problem("model", state["model"], model) or _optimizer_problem(state["optimizer"], optimizer)
    if problem:
        return problem
    if not isinstance(state["scheduler"], dict):
        return "scheduler: not a state"
    d = state["data_order"]
    if not (isinstance(d, torch.Tensor) and d.dtype == data_order.dtype and d.shape == data_order.shape):
        return "data_order: not a generator state"
    rng = state["rng"]
    ref = torch.get_rng_state()
    if not (isinstance(rng, dict) and isinstance(rng.get("torch"), torch.Tensor) and rng["torch"].shape == ref.shape
            and isinstance(rng.get("python"), (list, tuple)) and len(rng["python"]) == 3
            and isinstance(rng.get("numpy"), (list, tuple)) and len(rng["numpy"]) == 5):
        return "rng: not the random states"
    h = state["history"]
    if not (isinstance(h, dict) and all(k in h for k in HISTORY) and isinstance(h["epoch_loss"], list)
            and isinstance(h["checkpoints"], list) and all(_number(h[k]) for k in HISTORY[2:])):
        return f"history: must hold {', '.join(HISTORY)}"
    if len(h["epoch_loss"]) != epoch or not all(_number(x) for x in h["epoch_loss"]):
        return f"history: epoch_loss must be {epoch} numbers"
    return callback(state["callback"]) if callback is not None else None


def remove(path: str | os.PathLike[str]) -> None:
    """Delete the training state at ``path`` (``unlink`` removes a link itself, never its target), the temporary
    files of its interrupted writes, and its directory when that is left empty; nothing when absent."""
    path = Path(path)
    if not _real_dir(path.parent):
        return
    remove_temporaries(path)
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
