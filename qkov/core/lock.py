"""One owner per results directory: an advisory lock on ``<out>/.qkov.lock``.

Every qkov command that writes into a results directory holds :func:`results_lock` while it writes.
A second writer fails at once with :class:`ResultsLocked` (one line naming the holder: command, PID,
host, start time); the CLI prints it as ``qkov: error: ...`` and exits 2. Readers take no lock.

How the lock works
------------------
*flock mode* (default): the lock is ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<out>/.qkov.lock``, and the
holder writes ``{"host", "pid", "pid_created", "started", "command"}`` into the file. The kernel drops an
flock when its holder dies (SIGKILL, OOM killer, crash), so a lock can never outlive its process on this
host. On a clean exit the holder deletes the file while still holding the lock; a file found with a
holder in it and its flock free was left by a holder that died: it is taken over with a message. After
taking the flock the taker checks that the file it locked is still the one at the path (same inode), so
a lock file deleted by a releasing holder in between is never "held".

*lease mode* (``QKOV_LOCK=lease``, or automatically where ``flock`` is not supported: ``ENOLCK``,
``EOPNOTSUPP``): the lock file itself is the lease, created with ``O_CREAT | O_EXCL`` and holding the same
holder record. A lease whose holder is on this host and whose process is gone (or whose PID now belongs
to a process started later) is stale and taken over with a message. A lease held from *another* host is
never taken over automatically (its process cannot be checked from here): the error names the host and
says to remove the file once that host's qkov is known to be gone.

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
import sys
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
    return (f"{holder.get('command', 'qkov')} (pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
            f"since {holder.get('started', '?')})")


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
    return abs(created - float(recorded)) < 1.0  # else the PID was reused by a later process


def _read(fd: int) -> dict[str, Any] | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 65536).decode("utf-8", "replace")
        data = json.loads(text) if text.strip() else None
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _write(fd: int, record: dict[str, Any]) -> None:
    data = (json.dumps(record) + "\n").encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    os.fsync(fd)


class _Lock:
    def __init__(self, directory: Path, command: str, mode: str, announce) -> None:
        self.directory = directory
        self.path = directory / LOCK_NAME
        self.command = command
        self.mode = mode
        self.announce = announce
        self.fd: int | None = None
        self.record = holder_record(command)
        self.depth = 0

    def _busy(self, holder: dict[str, Any] | None) -> ResultsLocked:
        hint = "wait for it to finish, or give another --out"
        if self.mode == "lease" and holder and holder_alive(holder) is None:
            hint += f"; if that host's qkov is gone, remove {self.path}"
        return ResultsLocked(f"out: {self.directory}: in use by {describe(holder)}; {hint}")

    def _took_over(self, previous: dict[str, Any] | None, why: str) -> None:
        if previous:
            self.announce(f"qkov: taking over the lock of {self.directory} from {describe(previous)}: {why}")

    def acquire(self) -> None:
        if self.mode == "flock":
            try:
                self._acquire_flock()
                return
            except OSError as exc:
                if exc.errno not in _NO_FLOCK:
                    raise
                self.mode = "lease"  # the filesystem has no flock: fall back to the lease file
        self._acquire_lease()

    def _acquire_flock(self) -> None:
        import fcntl

        for _ in range(100):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read(fd)
                os.close(fd)
                raise self._busy(holder) from None
            except OSError:
                os.close(fd)
                raise
            try:
                same = os.stat(self.path)
                st = os.fstat(fd)
                if (same.st_ino, same.st_dev) != (st.st_ino, st.st_dev):
                    raise FileNotFoundError
            except FileNotFoundError:  # released and deleted by its holder just now: lock the new file
                os.close(fd)
                continue
            previous = _read(fd)
            self._took_over(previous, "its process is gone (its lock was free)")
            _write(fd, self.record)
            self.fd = fd
            return
        raise ResultsLocked(f"out: {self.directory}: could not take the lock {self.path} (it keeps changing)")

    def _acquire_lease(self) -> None:
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                try:
                    fd = os.open(self.path, os.O_RDONLY)
                except FileNotFoundError:
                    continue
                holder = _read(fd)
                os.close(fd)
                if holder is None or holder_alive(holder) is not False:
                    raise self._busy(holder) from None
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)  # stale: its holder on this host is gone
                self._took_over(holder, "its process is gone")
                continue
            _write(fd, self.record)
            self.fd = fd
            return
        raise ResultsLocked(f"out: {self.directory}: could not take the lock {self.path} (it keeps changing)")

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            if _read(self.fd) == self.record:
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


def read_holder(out: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The holder recorded in ``out``'s lock file, or None when there is none."""
    try:
        data = json.loads((Path(out) / LOCK_NAME).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


__all__ = ["LOCK_NAME", "LOCK_ENV", "ResultsLocked", "results_lock", "read_holder", "holder_alive", "describe"]
