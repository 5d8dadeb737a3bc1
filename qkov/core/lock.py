"""One owner per results directory: an advisory lock on ``<out>/.qkov.lock``.

Every qkov command that writes into a results directory holds :func:`results_lock` while it writes.
A second writer fails at once with :class:`ResultsLocked` (one line naming the holder: command, PID,
host, start time); the CLI prints it as ``qkov: error: ...`` and exits 2. Readers take no lock.

How the lock works (one protocol, whatever ``QKOV_LOCK`` says)
--------------------------------------------------------------
The lock file is created with ``O_CREAT | O_EXCL`` (or opened if it exists), always with ``O_NOFOLLOW``: a
``.qkov.lock`` that is a symbolic link is refused with one line saying to remove it, never written through.
The holder takes ``fcntl.flock(LOCK_EX | LOCK_NB)`` on it wherever the filesystem has flock (in *both*
modes) and writes ``{"host", "pid", "pid_created", "started", "command", "mode"}`` into it. A taker in
either mode is refused when the flock is held, and also when the file names a holder that is alive on
this host (or, unless both sides are in flock mode, one on another host that cannot be checked from
here). So the modes see each other: a flock-mode ``qkov`` never takes over a live lease-mode holder.

*flock mode* (default): the kernel drops an flock when its holder dies (SIGKILL, OOM killer, crash), so a
file found with its flock free and its holder gone is stale and taken over with a message; so is an empty
or unreadable file whose flock is free (a start that failed before writing its record). After taking the
flock the taker checks that the file it locked is still the one at the path (same inode), so a lock file
deleted by a releasing holder in between is never "held".

*lease mode* (``QKOV_LOCK=lease``, or automatically where ``flock`` is not supported: ``ENOLCK``,
``EOPNOTSUPP``): the file's existence is the lease. A lease whose holder is on this host and whose
process is gone (or whose PID now belongs to a process started later) is stale: it is removed and made
anew with ``O_EXCL``, with a message. An empty or unreadable lease older than ``GRACE_S`` seconds is taken
over the same way; a younger one is refused with the fix (remove the file if no qkov uses it). A lease
held from *another* host is never taken over automatically: the error names the host and says to remove
the file once that host's qkov is known to be gone.

If the holder record cannot be written (disk full, read-only), the file is removed again, and so is any
directory the lock made: nothing is left behind. On a clean exit the holder deletes the file while still
holding the flock.

Shared filesystems (cluster case, see ``docs/reliability.md``)
--------------------------------------------------------------
Only the process that runs ``qkov reproduce`` (the client) takes the lock; Dask workers write run
directories under it on its behalf. flock mode assumes the results directory is on a filesystem whose
``flock`` is coherent across hosts: local disks; NFSv4, and NFSv3 with ``lockd`` (Linux maps ``flock``
to NFS byte-range locks since 2.6.12); Lustre mounted with ``-o flock``; GPFS; CephFS. On NFS mounted
with ``nolock`` (or ``local_lock=flock``/``all``), ``flock`` is local to each host: two clients on two hosts
would both get it, so set ``QKOV_LOCK=lease`` there (the lease's ``O_EXCL`` create is atomic on NFSv3+).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import os
import socket
import stat
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from theory.errors import InputError

LOCK_NAME = ".qkov.lock"
"""The lock file inside a results directory (a dot file: not a run, never listed by the report)."""

LOCK_ENV = "QKOV_LOCK"
"""Environment variable choosing the lock mode: ``flock`` (default) or ``lease``."""

_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}

_held: dict[str, "_Lock"] = {}
"""Locks this process holds, by resolved directory (a command nested in another re-enters its lock)."""


class ResultsLocked(InputError):
    """The results directory is in use by another qkov process (one line naming the holder)."""


def _process_created(pid: int) -> float | None:
    """Creation time of process ``pid`` (seconds since the epoch), or None when there is no such process."""
    import psutil

    try:
        return round(psutil.Process(pid).create_time(), 2)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.Error:  # pragma: no cover - access denied: it exists
        return -1.0


def holder_record(command: str) -> dict[str, Any]:
    """This process as a lock holder: host, PID, the PID's creation time, start time, command."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "pid_created": _process_created(os.getpid()),
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "command": command}


def describe(holder: dict[str, Any] | None) -> str:
    """``qkov reproduce (pid 123 on host h, since 2026-...)`` for messages."""
    if not holder:
        return "another qkov process (it has not written its name yet)"
    return (f"{_field(holder, 'command', 'qkov')} (pid {_field(holder, 'pid')} on host {_field(holder, 'host')}, "
            f"since {_field(holder, 'started')})")


def _field(holder: dict[str, Any], key: str, default: str = "?") -> str:
    """One field of a holder record for a message: at most 80 characters, control characters escaped (a
    record is a file anyone may have written: a newline in it must not split the error line)."""
    text = str(holder.get(key, default))[:80]
    return text if text.isprintable() else repr(text)


def holder_alive(holder: dict[str, Any]) -> bool | None:
    """Is the recorded holder still running? None when it cannot be told (another host)."""
    if holder.get("host") != socket.gethostname():
        return None
    try:
        pid = int(holder["pid"])
    except (KeyError, TypeError, ValueError):
        return False
    created = _process_created(pid)
    if created is None:
        return False
    recorded = holder.get("pid_created")
    if created < 0 or recorded is None:
        return True
    try:
        return abs(created - float(recorded)) < 1.0
    except (TypeError, ValueError):
        return True  # cannot tell it was reused: respect it  # else the PID was reused by a later process


def _read(fd: int) -> dict[str, Any] | None:
    """The holder record in the lock file, or None when it is empty or not a JSON object."""
    try:
        text = os.pread(fd, 65536, 0).decode("utf-8", "replace")
        data = json.loads(text) if text.strip() else None
        return data if isinstance(data, dict) else None
    except (OSError, ValueError, RecursionError):
        return None


def _write(fd: int, record: dict[str, Any]) -> None:
    data = (json.dumps(record) + "\n").encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    os.fsync(fd)


GRACE_S = 10.0
"""An empty or unreadable lock file younger than this may be a holder between creating and writing it."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class _Lock:
    """One protocol for both modes (see the module docstring): every holder creates the lock file (never
    through a symbolic link), takes ``flock`` on it where the filesystem has one, and writes its record with
    its ``mode``; a taker in either mode is refused by a held flock *and* by a record whose holder is alive
    (or cannot be checked from here, unless both sides are in flock mode), so the modes see each other."""

    def __init__(self, directory: Path, command: str, mode: str, announce) -> None:
        self.directory = directory
        self.path = directory / LOCK_NAME
        self.command = command
        self.mode = mode
        self.announce = announce
        self.fd: int | None = None
        self.record = holder_record(command) | {"mode": mode}
        self.depth = 0

    def _busy(self, holder: dict[str, Any] | None, why: str = "") -> ResultsLocked:
        hint = "wait for it to finish, or give another --out"
        if holder is None:
            hint += f"; if no qkov command is using it, remove {self.path}"
        elif holder_alive(holder) is None:
            hint += f"; if that host's qkov is gone, remove {self.path}"
        return ResultsLocked(f"out: {self.directory}: in use by {describe(holder)}{why}; {hint}")

    def _took_over(self, previous: dict[str, Any] | None, why: str) -> None:
        if previous:
            self.announce(f"qkov: taking over the lock of {self.directory} from {describe(previous)}: {why}")
        else:
            self.announce(f"qkov: taking over the lock of {self.directory}: {why}")

    def _open(self) -> tuple[int, bool] | None:
        """``(fd, created)`` for the lock file, or None when it vanished in between (try again)."""
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666), True
        except FileExistsError:
            pass
        try:
            fd = os.open(self.path, os.O_RDWR | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP or os.path.islink(self.path):
                raise InputError(f"out: {self.path}: a symbolic link (to {os.readlink(self.path)}); qkov never "
                                 f"writes through a link: remove {self.path}") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise InputError(f"out: {self.path}: not a regular file; remove it")
        return fd, False

    def _flock(self, fd: int) -> bool:
        """Take the flock (True), or find the filesystem has none (False); ``BlockingIOError`` when held."""
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            raise
        except OSError as exc:
            if exc.errno in _NO_FLOCK:
                return False
            raise

    def _same_file(self, fd: int) -> bool:
        try:
            at, st = os.lstat(self.path), os.fstat(fd)
        except FileNotFoundError:
            return False
        return (at.st_ino, at.st_dev) == (st.st_ino, st.st_dev)

    def _stale(self, fd: int, previous: dict[str, Any] | None, flocked: bool) -> str | None:
        """Why the existing lock is stale (to be taken over), or None when it must be respected."""
        both_flock = flocked and self.mode == "flock"
        if previous is None:
            age = time.time() - os.fstat(fd).st_mtime
            if both_flock:
                return "its lock file was empty or unreadable (a failed start) and its lock was free"
            if age >= GRACE_S:
                return f"its lock file has been empty or unreadable for {age:.0f} s (a failed start)"
            return None
        if both_flock and previous.get("mode", "flock") == "flock":
            # a flock-mode holder holds the flock while it lives; a free flock means it released or died
            # (e.g. its record could not be deleted from a directory that went read-only)
            return "its lock was free (flock mode)"
        alive = holder_alive(previous)
        if alive is False:
            return "its process is gone" + (" (its lock was free)" if flocked else "")
        return None

    def acquire(self) -> None:
        for _ in range(100):
            opened = self._open()
            if opened is None:
                continue
            fd, created = opened
            try:
                try:
                    flocked = self._flock(fd)
                except BlockingIOError:
                    raise self._busy(_read(fd)) from None
                if not self._same_file(fd):  # released and deleted by its holder just now: lock the new file
                    os.close(fd)
                    continue
                if not flocked:
                    self.mode = "lease"  # the filesystem has no flock: the file alone is the lease
                    self.record["mode"] = "lease"
                if not created:
                    previous = _read(fd)
                    why = self._stale(fd, previous, flocked)
                    if why is None:
                        raise self._busy(previous)
                    self._took_over(previous, why)
                    if not (flocked and self.mode == "flock"):
                        os.unlink(self.path)  # lease: take it over by creating it anew (O_EXCL decides)
                        os.close(fd)
                        continue
                try:
                    _write(fd, self.record)
                except OSError:
                    if self._same_file(fd):
                        with contextlib.suppress(OSError):
                            os.unlink(self.path)  # nothing left behind: no empty lock file to trip on later
                    raise
            except BaseException:
                with contextlib.suppress(OSError):
                    os.close(fd)
                raise
            self.fd = fd
            return
        raise ResultsLocked(f"out: {self.directory}: could not take the lock {self.path} (it keeps changing)")

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            if _read(self.fd) == self.record and self._same_file(self.fd):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)  # still holding the flock: a waiting taker sees the inode change
        except OSError:  # pragma: no cover - the directory vanished or went read-only: the kernel frees the flock
            pass
        finally:
            os.close(self.fd)
            self.fd = None


def _announce_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def results_lock(out: str | os.PathLike[str], command: str | None = None, *, mode: str | None = None,
                 announce=_announce_stderr) -> Iterator[Path]:
    """Hold the advisory lock of results directory ``out`` for the duration of the block.

    Creates ``out`` (and its parents) if needed; if it created ``out`` and leaves it empty (the command
    failed before writing), it removes it again. Raises :class:`ResultsLocked` at once when another live
    process holds the lock; takes over a stale one with one line through ``announce``. Re-entrant within a
    process. ``command`` names the holder in messages (e.g. ``qkov reproduce``).
    ``mode``: ``flock`` or ``lease`` (default: ``$QKOV_LOCK``, else ``flock``). Yields the lock file's path.
    """
    directory = Path(out)
    mode = mode or os.environ.get(LOCK_ENV, "flock")
    if mode not in ("flock", "lease"):
        raise InputError(f"{LOCK_ENV}: {mode!r}: must be flock or lease")
    if directory.exists() and not directory.is_dir():
        raise InputError(f"out: {directory}: must be a directory (or not exist yet), not a file")
    created = []
    for d in [directory, *directory.parents]:
        if d.exists():
            break
        created.append(d)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"out: {directory}: cannot be made ({exc.strerror or exc})") from None
    key = os.path.realpath(directory)
    lock = _held.get(key)
    if lock is None:
        lock = _Lock(directory, command or "qkov", mode, announce)
        try:
            lock.acquire()
        except OSError as exc:  # read-only, full, no permission: one line, not a traceback
            _remove_empty(created)
            raise InputError(f"out: {directory}: cannot write its lock file {LOCK_NAME} "
                             f"({exc.strerror or exc})") from None
        except BaseException:
            _remove_empty(created)
            raise
        _held[key] = lock
    lock.depth += 1
    try:
        yield lock.path
    finally:
        lock.depth -= 1
        if lock.depth == 0:
            del _held[key]
            lock.release()
            _remove_empty(created)


def _remove_empty(created: list[Path]) -> None:
    for d in created:
        try:
            d.rmdir()
        except OSError:
            return


def busy_message(out: str | os.PathLike[str], command: str = "qkov") -> str | None:
    """The one-line refusal a writer of ``out`` would get, when ``out``'s lock is held in flock mode right now;
    ``None`` otherwise (free, absent, a link, lease mode: the full :func:`results_lock` decides those).

    Cheap and read-only: opens an existing lock file without following a link, asks for a *shared* flock
    without blocking (refused while a holder has its exclusive one; dropped at once when granted) and creates
    nothing. The CLI calls it before importing a command's modules, so a second writer is refused before
    the imports a busy machine makes slow (issue 35)."""
    if os.environ.get(LOCK_ENV, "flock") != "flock":
        return None
    import fcntl

    directory = Path(out)
    try:
        fd = os.open(directory / LOCK_NAME, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            lock = _Lock.__new__(_Lock)  # only its message: no record of this process is made
            lock.directory, lock.path = directory, directory / LOCK_NAME
            return str(lock._busy(holder))
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


__all__ = ["LOCK_NAME", "LOCK_ENV", "ResultsLocked", "results_lock", "holder_alive", "describe",
           "busy_message"]
