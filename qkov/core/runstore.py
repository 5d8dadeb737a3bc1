"""The results convention every qkov command writes.

A run directory holds::

    config.json        the validated configuration (plain JSON)
    manifest.json      qkov version, git commit, seed, start/end time, versions, platform
    metrics.json       (and other *.json) scalar results
    *.npz              arrays
    *.png, *.svg       figures (always both)
    COMPLETE           written last: the list of files with their SHA-256

Every file is written atomically (temporary file in the same directory, fsync,
``os.replace``), and ``COMPLETE`` is written only after every other file, so an
interrupted run never reads as complete: :func:`is_complete` checks the marker
*and* each listed file's hash, so a result truncated after the fact is detected too, and each listed JSON
file's shape (:mod:`qkov.core.schema`), so a well-hashed but wrong-shaped file reads as an incomplete run.

The guarded store: nothing is written, read or deleted through a symbolic link. The results root, its
``runs/`` and each run directory are checked with ``lstat`` (never followed) before a run is written
(:func:`prepare_run_dir`, called by :class:`RunWriter`) and by :func:`check_results_tree` before a command
plans; a link at any level is refused with one line (:class:`LinkRefused`, an ``InputError``: exit 2). Every
run directory the store makes holds a marker (``.qkov-run``), and :func:`remove_run` deletes only a real
directory that holds it, reached without a link.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import hashlib
import io
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Literal, Mapping

import numpy as np

from theory.errors import InputError
from theory.files import atomic_write_bytes, open_regular_nofollow, read_nofollow  # noqa: F401 (read_nofollow re-exported)

COMPLETE_MARKER = "COMPLETE"


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_json_dict"):  # configs and science-package specs
        return obj.to_json_dict()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def to_json_text(obj: Any) -> str:
    """JSON text with numpy scalars/arrays and pydantic models converted."""
    return json.dumps(obj, indent=2, default=_json_default, allow_nan=True) + "\n"


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Atomically write ``obj`` as indented JSON."""
    return atomic_write_bytes(path, to_json_text(obj).encode())


def _sha256_of(fh: BinaryIO) -> str:
    h = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return _sha256_of(fh)


def config_key(kind: str, config: Mapping[str, Any]) -> str:
    """A stable 12-hex-digit key for ``(kind, config)``: equal configs give equal keys."""
    text = json.dumps({"kind": kind, "config": config}, sort_keys=True, default=_json_default)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _version(module: str) -> str | None:
    try:
        mod = __import__(module)
        return str(getattr(mod, "__version__", None))
    except Exception:  # pragma: no cover - optional modules
        return None


def qkov_version() -> str:
    """The installed qkov distribution version (``0+unknown`` when not installed)."""
    try:
        from importlib.metadata import version

        return version("qkov")
    except Exception:
        return "0+unknown"


def build_manifest(kind: str, seed: int | None, started: str, ended: str | None) -> dict[str, Any]:
    """Provenance of one run: versions, platform, git commit, seed and times."""
    return {
        "kind": kind,
        "qkov_version": qkov_version(),
        "git_commit": _git_commit(),
        "seed": seed,
        "started": started,
        "ended": ended,
        "python": sys.version.split()[0],
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "sympy": _version("sympy"),
        "torch": _version("torch") if "torch" in sys.modules else None,
        "platform": platform.platform(),
        "argv": sys.argv,
    }


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


_RUN_STARTED: contextvars.ContextVar[str | None] = contextvars.ContextVar("qkov_run_started", default=None)


@contextlib.contextmanager
def run_clock() -> Iterator[str]:
    """Marks the start of one run's whole computation: a :class:`RunWriter` opened inside records this time as
    its manifest's ``started`` (else the moment the writer is made, which for most runs is after the work), so
    ``ended - started`` is the run's compute and writing time. The study engine wraps each run in it."""
    started = _now()
    token = _RUN_STARTED.set(started)
    try:
        yield started
    finally:
        _RUN_STARTED.reset(token)


RUN_MARKER = ".qkov-run"
"""The marker the store writes into every run directory it makes: proof that :func:`remove_run` may delete it."""

RUNS_DIR = "runs"
"""Every command writes its runs under ``OUT/runs/``."""

RUN_NAME = re.compile(r"[a-z0-9][a-z0-9-]*-[0-9a-f]{12}")
"""The name of a run directory (:func:`run_dir_for`: ``<kind>-<12 hex digits>``)."""

RESUME_DIR = "resume"
"""``OUT/resume/`` holds the training state of each real-data run still training
(:func:`qkov.study.real_stage.training_state_path`)."""


class LinkRefused(InputError):
    """A results root, ``runs/`` or run directory that is a symbolic link (or not a directory): one line."""


def _show(path: Path) -> str:
    text = str(path)
    return text if text.isprintable() else repr(text)


def _level(path: Path, what: str) -> bool:
    """``lstat`` ``path`` (never following a link): True when it is a real directory, False when it does not
    exist; :class:`LinkRefused` when it is a symbolic link or something else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:  # ENAMETOOLONG, EACCES, ENOTDIR: one line, not a traceback
        raise LinkRefused(f"out: {_show(path)}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = f" (to {os.readlink(path)!r})"
        except OSError:
            target = ""
        raise LinkRefused(f"out: {_show(path)}: a symbolic link{target}; qkov never writes, reads or deletes "
                          f"results through a link ({what} must be a real directory): remove the link, or replace "
                          "it by a copy of its target")
    if not stat.S_ISDIR(st.st_mode):
        raise LinkRefused(f"out: {_show(path)}: not a directory ({what} must be a directory)")
    return True


def _levels(run_dir: Path) -> list[tuple[Path, str]]:
    """The directories a run directory is reached through: ``OUT``, ``OUT/runs`` and the run itself (when its
    parent is a ``runs`` folder), else its parent and itself."""
    levels = [(run_dir.parent, "the results directory"), (run_dir, "a run directory")]
    if run_dir.parent.name == RUNS_DIR:
        levels[0] = (run_dir.parent, "OUT/runs")
        levels.insert(0, (run_dir.parent.parent, "the results directory"))
    return levels


def check_results_tree(out: str | os.PathLike[str]) -> None:
    """Refuse (:class:`LinkRefused`, one line) a results directory ``out``, its ``runs/`` or ``resume/``, or any
    entry of ``runs/`` that is a symbolic link or not a directory where a run directory would be; missing levels
    are fine (they will be made). Called while ``--out`` is parsed, before a command plans or computes, so a
    link or a file there is refused before any work."""
    out = Path(out)
    if not _level(out, "the results directory"):
        return
    _level(out / RESUME_DIR, "OUT/resume")
    runs = out / RUNS_DIR
    if not _level(runs, "OUT/runs"):
        return
    try:
        entries = list(os.scandir(runs))
    except OSError as exc:
        raise LinkRefused(f"out: {_show(runs)}: cannot be listed ({exc.strerror or exc})") from None
    for entry in entries:
        if entry.is_symlink() or (RUN_NAME.fullmatch(entry.name) and not entry.is_dir(follow_symlinks=False)):
            _level(runs / entry.name, "a run directory")



def prepare_run_dir(path: str | os.PathLike[str]) -> Path:
    """Make the run directory ``path`` (and ``OUT``, ``OUT/runs``) without following a link at any level, and
    mark it as the store's (:data:`RUN_MARKER`); :class:`LinkRefused` when a level is a link."""
    path = Path(path)
    for i, (level, what) in enumerate(_levels(path)):
        if _level(level, what):
            continue
        try:
            if i == 0:
                level.mkdir(parents=True, exist_ok=True)
            else:
                os.mkdir(level)  # not following: a link made in between makes this fail (EEXIST)
        except FileExistsError:
            pass
        _level(level, what)  # made by us, or raced by someone: check again without following
    marker = path / RUN_MARKER
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                 0o666)
    os.close(fd)
    return path


def remove_run(path: str | os.PathLike[str]) -> bool:
    """Delete the run directory ``path`` if the store made it: every level reached without a link and its
    :data:`RUN_MARKER` a regular file. Returns True when removed, False when there was nothing; raises
    :class:`LinkRefused` for a link and ``InputError`` for a directory the store cannot prove it made."""
    path = Path(path)
    for level, what in _levels(path):
        if not _level(level, what):
            return False
    try:
        st = os.lstat(path / RUN_MARKER)
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        raise InputError(f"out: {_show(path)}: not removed: it holds no {RUN_MARKER} marker, so qkov cannot "
                         "tell it made it; move it away if it is not yours")
    shutil.rmtree(path)  # Linux: the fd-based rmtree, which never follows a link inside
    return True


class RunWriter:
    """Writes one run directory in the results convention.

    Use as a context manager; ``COMPLETE`` is written on clean exit only::

        with RunWriter(out / "derive", kind="derive", config=cfg.to_json_dict(), seed=None) as run:
            run.write_json("metrics.json", {...})
            run.write_arrays("trajectory.npz", t=t, u=u)
            run.write_figure("u_of_t", fig)

    Entering a directory that already holds files clears the old ``COMPLETE``
    marker first, so a rerun that dies halfway is not mistaken for the old result. Entering refuses
    (:class:`LinkRefused`) a results directory, ``runs/`` or run directory that is a symbolic link
    (:func:`prepare_run_dir`).
    """

    def __init__(self, path: str | os.PathLike[str], *, kind: str, config: Mapping[str, Any], seed: int | None = None,
                 manifest_extra: Mapping[str, Any] | None = None):
        self.path = Path(path)
        self.manifest_extra = dict(manifest_extra or {})  # e.g. the device a run trained on
        self.kind = kind
        self.config = dict(config)
        self.seed = seed
        self.started = _RUN_STARTED.get() or _now()  # the run's start under run_clock(), else now
        self._files: list[str] = []

    def __enter__(self) -> "RunWriter":
        prepare_run_dir(self.path)  # OUT, OUT/runs and the run: never through a link
        with contextlib.suppress(FileNotFoundError):
            (self.path / COMPLETE_MARKER).unlink()
        self.write_json("config.json", self.config)
        return self

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        if exc_type is None:
            self.write_json("manifest.json", {**build_manifest(self.kind, self.seed, self.started, _now()),
                                              **self.manifest_extra})
            listing = {name: _sha256(self.path / name) for name in sorted(set(self._files))}
            atomic_write_bytes(self.path / COMPLETE_MARKER,
                               to_json_text({"files": listing, "completed": _now()}).encode(), parents=False)
        return False

    def _record(self, name: str) -> Path:
        if "/" in name or name.startswith(".") or name == COMPLETE_MARKER:
            raise ValueError(f"run file name {name!r}: must be a plain file name")
        self._files.append(name)
        return self.path / name

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Atomically write raw bytes as ``name`` inside the run.

        The run directory is made once, on entering; if it vanished since (``--out`` removed mid-run),
        this raises ``FileNotFoundError`` instead of silently making it again.
        """
        return atomic_write_bytes(self._record(name), data, parents=False)

    def write_text(self, name: str, text: str) -> Path:
        """Atomically write text as ``name`` inside the run."""
        return self.write_bytes(name, text.encode())

    def write_json(self, name: str, obj: Any) -> Path:
        """Atomically write ``obj`` as JSON."""
        return self.write_bytes(name, to_json_text(obj).encode())

    def write_arrays(self, name: str, **arrays: Any) -> Path:
        """Atomically write arrays as one ``.npz`` file."""
        buf = io.BytesIO()
        named: dict[str, Any] = {k: np.asarray(v) for k, v in arrays.items()}
        np.savez(buf, allow_pickle=True, **named)  # numpy's default, stated: no key can be taken for it
        return self.write_bytes(name, buf.getvalue())

    def write_figure(self, stem: str, fig: Any, dpi: int = 120) -> tuple[Path, Path]:
        """Write a matplotlib figure as ``stem.png`` and ``stem.svg``."""
        out = []
        for ext in ("png", "svg"):
            buf = io.BytesIO()
            fig.savefig(buf, format=ext, dpi=dpi, bbox_inches="tight")
            out.append(self.write_bytes(f"{stem}.{ext}", buf.getvalue()))
        return out[0], out[1]


_HEX = frozenset("0123456789abcdef")


def _plain_name(name: Any) -> bool:
    """A file name a run may list: one path component, not hidden, not the marker (no ``/``, ``..``)."""
    return (isinstance(name, str) and name != "" and "/" not in name and "\\" not in name and "\0" not in name
            and not name.startswith(".") and name != COMPLETE_MARKER)


def _sha256_nofollow(path: Path) -> str:
    with open_regular_nofollow(path) as fh:
        return _sha256_of(fh)


def completeness(path: str | os.PathLike[str]) -> tuple[dict[str, str] | None, str]:
    """The one definition of a complete run: ``(listing, "")`` when complete, else ``(None, reason)``.

    A run directory is complete when it is a real directory (not a symbolic link), its ``COMPLETE`` is a
    regular file holding ``{"files": {name: sha256, ...}}`` with at least ``config.json``, every name is a
    plain file name inside the run (no ``/``, no ``..``, no absolute path, not hidden), every digest is 64
    lower-case hex digits, and every listed file is a regular file (not a link) whose SHA-256 matches.
    Files the marker does not list are ignored: never read, never shown, and they do not change the
    answer. Every listed ``*.json`` file must also parse and have its shape (:func:`qkov.core.schema.run_file_problem`:
    objects where objects are read, numbers inside the float range), so a wrong-shaped file with its true hash
    makes the run incomplete instead of crashing a reader. ``reason`` is one short line (for the report's list
    of incomplete runs).
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except OSError:
        return None, "no such directory"
    if stat.S_ISLNK(st.st_mode):
        return None, "a symbolic link: not read"
    if not stat.S_ISDIR(st.st_mode):
        return None, "not a directory"
    try:
        raw = read_nofollow(path / COMPLETE_MARKER, 1 << 24)
    except FileNotFoundError:
        return None, "no COMPLETE marker (interrupted or still running)"
    except OSError:
        return None, "COMPLETE is not a readable regular file"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None, "COMPLETE is not valid JSON"
    listing = data.get("files") if isinstance(data, dict) else None
    if not isinstance(listing, dict):
        return None, "COMPLETE has no object of files"
    if "config.json" not in listing:
        return None, "COMPLETE does not list config.json"
    for name, digest in listing.items():
        if not _plain_name(name):
            return None, f"COMPLETE lists {json.dumps(name)[:80]}, not a plain file name inside the run"
        if not (isinstance(digest, str) and len(digest) == 64 and set(digest) <= _HEX):
            return None, f"COMPLETE gives {name} no SHA-256"
    for name, digest in listing.items():
        why = _listed_file_problem(path, name, digest)
        if why:
            return None, why
    return dict(listing), ""


def _listed_file_problem(path: Path, name: str, digest: str) -> str | None:
    """Why the listed file ``name`` of run ``path`` spoils the run (missing, a link, changed, a bad JSON file)."""
    try:
        if not name.endswith(".json"):
            return None if _sha256_nofollow(path / name) == digest else f"{name} changed after the run completed"
        raw = read_nofollow(path / name)
    except OSError:
        return f"{name} is missing or not a regular file"
    if hashlib.sha256(raw).hexdigest() != digest:
        return f"{name} changed after the run completed"
    return _json_shape(name, raw)


def _json_shape(name: str, raw: bytes) -> str | None:
    """Why the listed JSON file ``name`` (its bytes) cannot be read by the report and the engine, or None."""
    from qkov.core.schema import run_file_problem

    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return f"{name}: not valid JSON"
    why = run_file_problem(name, data)
    return f"{why} (a bad file)" if why else None


def incomplete_lines(run_dirs: Iterator[Path] | list[Path]) -> list[str]:
    """One line ``redoing <run>: <why it is incomplete>`` per run directory that exists but is not complete
    (a bad file, an interrupted run), for ``qkov reproduce`` to name what it redoes."""
    out = []
    for path in run_dirs:
        if os.path.lexists(path):
            listing, why = completeness(path)
            if listing is None:
                out.append(f"redoing {Path(path).name}: {why}")
    return out


def is_complete(path: str | os.PathLike[str]) -> bool:
    """True iff ``path`` is a complete run (see :func:`completeness`, the one definition)."""
    return completeness(path)[0] is not None


def discard_incomplete(path: str | os.PathLike[str]) -> bool:
    """Remove a run directory that is not complete; return True if one was removed (see :func:`remove_run`)."""
    path = Path(path)
    if path.is_symlink() and not is_complete(path):
        path.unlink()  # never delete through a link: only the link goes
        return True
    if os.path.lexists(path) and not is_complete(path):
        return remove_run(path)  # only a directory the store made, reached without a link
    return False


def run_dir_for(out: str | os.PathLike[str], kind: str, config: Mapping[str, Any]) -> Path:
    """The one run-directory convention: ``OUT/runs/<kind>-<config_key(kind, config)>/``."""
    return Path(out) / RUNS_DIR / f"{kind}-{config_key(kind, config)}"


class Run:
    """A run directory read back: ``config``, ``manifest``, ``json`` (every other JSON file by name),
    ``metrics`` (``metrics.json``, or ``{}``), ``arrays`` (each ``.npz`` as a dict of arrays) and ``files``.

    Only the files that ``COMPLETE`` lists are read, and only from a complete run (:func:`is_complete`).
    """

    def __init__(self, path: Path, files: list[str]):
        self.path = path
        self.files = files
        self.config = json.loads((path / "config.json").read_text())
        self.manifest = json.loads((path / "manifest.json").read_text()) if "manifest.json" in files else {}
        self.kind = self.manifest.get("kind", path.name.rsplit("-", 1)[0])
        self.json = {n: json.loads((path / n).read_text()) for n in files
                     if n.endswith(".json") and n not in ("config.json", "manifest.json")}
        self.metrics = self.json.get("metrics.json", {})
        self._arrays: dict[str, dict[str, np.ndarray]] | None = None

    @property
    def arrays(self) -> dict[str, dict[str, np.ndarray]]:
        if self._arrays is None:
            self._arrays = {}
            for n in self.files:
                if n.endswith(".npz"):
                    with np.load(self.path / n, allow_pickle=False) as z:
                        self._arrays[n] = {k: z[k] for k in z.files}
        return self._arrays

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, kind={self.kind!r}, files={len(self.files)})"


def load_run(path: str | os.PathLike[str]) -> Run:
    """Read a complete run directory; ``ValueError`` (one line) when it is missing or not complete.

    Example::

        run = qkov.load_run("qkov-results/runs/simulate-0123456789ab")
        run.config["K"], run.arrays["trajectories.npz"]["FAFO_u"]
    """
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        raise ValueError(f"{path}: no such run directory (a run directory must be a real directory)")
    listing, why = completeness(path)
    if listing is None:
        raise ValueError(f"{path}: not a complete run ({why})")
    return Run(path, sorted(listing))
