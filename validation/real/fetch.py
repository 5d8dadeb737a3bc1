r"""Download the real-data sets from their official sources into the layout of ``docs/data.md``.

:data:`SOURCES` lists, per data set, each file's official URL, its place under the data
directory, and the SHA-256 pinned here (``None`` where no checksum can be justified; see
each :class:`RemoteFile`'s ``note``). :func:`fetch` downloads what is missing or wrong:

- into ``<dest>.part`` first; an interrupted download is resumed from the bytes already
  there with an HTTP ``Range: bytes=N-`` request (a server that ignores it answers 200 and
  the file is downloaded again from the start);
- a body shorter than its ``Content-Length`` is an error that keeps the ``.part`` file for
  the next attempt to resume;
- the SHA-256 of the whole file is checked before it is moved into place with
  :func:`os.replace` (atomic on one file system), so ``dest`` is either absent or complete
  and verified; a mismatch deletes the ``.part`` file;
- never through a symbolic link: a ``.part`` or destination that is a link is refused (the ``.part`` file
  is opened with ``O_NOFOLLOW``), so a download can never overwrite or append to a file elsewhere;
- each file has a size cap (:attr:`RemoteFile.max_bytes`): a ``Content-Length`` above it is refused before
  the body, and a body that grows past it is discarded;
- one overall deadline for the whole fetch (``deadline`` seconds), checked after every read, so a server
  that drips a byte every few seconds cannot hang it (``timeout`` is per read);
- a file with no pinned checksum is validated (:func:`validate_file`: structure and record count) before it
  is kept -- already in place or freshly downloaded; one that fails is downloaded again or discarded;
- ``mirror``: a base URL to fetch every file from instead of its official host, at ``<mirror>/<dest>``
  (the layout below); the pins are checked all the same;
- every failure, network or filesystem (unwritable directory, a file where a directory should be, a
  directory where the file should be), raises :class:`FetchError` with one line naming the URL or path.

:func:`check` verifies a data directory: each required file present, its checksum where
pinned, and its record counts (:data:`COUNTS`). No function here prints or exits; the
command line is ``qkov data fetch`` / ``qkov data check``.

Layout produced (relative to the data directory)::

    squad/dev-v1.1.json, squad/train-v1.1.json
    hatexplain/Data/dataset.json, hatexplain/Data/post_id_divisions.json
    sva/linzen_edinburgh_nlu/wiki-dev.txt, sva/linzen_edinburgh_nlu/wiki-test.txt
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import socket
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

CHUNK = 1 << 16
USER_AGENT = "qkov-data-fetch/1"


class FetchError(RuntimeError):
    """A download or check that failed; ``str()`` is one line naming what failed."""


@dataclass(frozen=True)
class RemoteFile:
    """One official file: where it comes from, where it goes, and its pinned SHA-256."""

    url: str
    dest: str  # relative to the data directory
    sha256: str | None
    note: str = ""
    required: bool = True  # check() reports a missing optional file as "absent", not as an error
    max_bytes: int = 64 << 20  # a body larger than this is refused (the official files are well below)


_HX = "https://raw.githubusercontent.com/hate-alert/HateXplain/01d742279dac941981f53806154481c0e15ee686/Data/"
_ED = "https://raw.githubusercontent.com/treszkai/edinburgh-nlu-cw/7312229f3b7bd6cbcc8108173b8af51487cfe23b/data/"
_SQ = "https://rajpurkar.github.io/SQuAD-explorer/dataset/"

SOURCES: dict[str, tuple[RemoteFile, ...]] = {
    "squad": (
        RemoteFile(_SQ + "dev-v1.1.json", "squad/dev-v1.1.json",
                   "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
                   "computed from the project's copy, whose MD5 3e85deb501d4e538b6bc56f786231552 equals "
                   "the MD5 torchtext records for this URL", max_bytes=16 << 20),
        RemoteFile(_SQ + "train-v1.1.json", "squad/train-v1.1.json",
                   "3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955",
                   "as recorded in the data snapshot's squad/SOURCE.md (30,288,272 bytes); not read by qkov, "
                   "which splits the dev set by article", required=False, max_bytes=64 << 20),
    ),
    "hatexplain": (
        RemoteFile(_HX + "post_id_divisions.json", "hatexplain/Data/post_id_divisions.json",
                   "c2fb0d89862e7897b11ea3e9380753f15a793482b4b70ad0532dfb1212212835",
                   "computed from the project's copy, byte-identical to the official file at this commit",
                   max_bytes=4 << 20),
        RemoteFile(_HX + "dataset.json", "hatexplain/Data/dataset.json", None,
                   "no checksum pinned: the official dataset.json was never available to this project "
                   "(its snapshot is a rebuilt JSONL); the URL is fixed to one commit, and check() verifies "
                   "its structure and counts (20,148 posts, every division id present)", max_bytes=32 << 20),
    ),
    "sva": (
        RemoteFile(_ED + "wiki-dev.txt", "sva/linzen_edinburgh_nlu/wiki-dev.txt",
                   "e38b28be5ced0af4aaca9e02aa6543fdac2f3ab40b124805663f4e78a28df0a6",
                   "Linzen et al. (2016) items as distributed with the Edinburgh NLU coursework; computed "
                   "from the project's copy of this commit's file", max_bytes=16 << 20),
        RemoteFile(_ED + "wiki-test.txt", "sva/linzen_edinburgh_nlu/wiki-test.txt",
                   "1ff97d6ab9b9612da7ccbf9648553c0eeec2291b9bd7b698f3a85c1412f45abf",
                   "as wiki-dev.txt", max_bytes=16 << 20),
    ),
}
"""Data set -> its official files. The original Linzen corpus (``agr_50_mostcommon_10K.tsv.gz``,
tallinzen.net) is not fetched: the coursework's conversion of it (vocabulary placeholders,
sampling) cannot be reproduced byte for byte, and qkov reads the converted files."""

COUNTS: dict[str, tuple[str, int]] = {
    "squad/dev-v1.1.json": ("questions", 10570),
    "squad/train-v1.1.json": ("questions", 87599),
    "hatexplain/Data/post_id_divisions.json": ("ids train/val/test", 15383 + 1922 + 1924),
    "hatexplain/Data/dataset.json": ("posts", 20148),
    "sva/linzen_edinburgh_nlu/wiki-dev.txt": ("items", 1000),
    "sva/linzen_edinburgh_nlu/wiki-test.txt": ("items", 4000),
}
"""Relative path -> (what is counted, expected count)."""

ALTERNATES: dict[str, tuple[str, ...]] = {
    "hatexplain/Data/post_id_divisions.json": ("hatexplain/post_id_divisions.json",),
    "hatexplain/Data/dataset.json": ("hatexplain/dataset.json",),
}
"""Other places the loaders accept for a file (``docs/data.md``)."""

HATEXPLAIN_JSONL = {"train.jsonl": 15383, "val.jsonl": 1922, "test.jsonl": 1924}
"""The rebuilt JSONL layout (this project's snapshot) the loader accepts instead of ``dataset.json``."""


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _host(url: str) -> str:
    p = urllib.parse.urlsplit(url)
    return p.netloc or url


def _fs_error(path: Path, exc: OSError) -> FetchError:
    why = exc.strerror or type(exc).__name__
    if isinstance(exc, IsADirectoryError):
        why = "is a directory; move it away"
    elif isinstance(exc, NotADirectoryError):
        why = "a file stands where a directory should be"
    elif isinstance(exc, (PermissionError,)) or exc.errno in (30,):  # EROFS
        why = f"{why}: give a writable --data-dir"
    return FetchError(f"{path}: cannot write ({why})")


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise FetchError(f"{path}: a symbolic link (to {os.readlink(path)}); qkov never writes through a link: "
                         "remove it")


def _refuse_linked_folders(data_dir: Path, dest: Path) -> None:
    """Refuse (one line) a folder between ``data_dir`` and ``dest`` (a dataset folder such as ``DATA/sva``) that
    is a symbolic link: checked with ``lstat``, never followed, so no file is written outside the data
    directory (before: ``wiki-*.txt`` went into the link's target)."""
    folder = data_dir
    for part in dest.relative_to(data_dir).parts[:-1]:
        folder = folder / part
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            return  # made by the download, below a real directory
        except OSError as exc:
            raise FetchError(f"{folder}: cannot read ({exc.strerror or exc})") from None
        if stat.S_ISLNK(st.st_mode):
            raise FetchError(f"{folder}: a symbolic link (to {os.readlink(folder)}); qkov never writes through a "
                             "link: remove it, or replace it by a copy of its target")
        if not stat.S_ISDIR(st.st_mode):
            raise FetchError(f"{folder}: cannot write (a file stands where a directory should be)")


def _remove_empty(made: list[Path]) -> None:
    """Remove the folders a failed download made, deepest first, as long as they are empty."""
    for d in made:
        try:
            d.rmdir()
        except OSError:
            return


def _open_part(part: Path, append: bool) -> int:
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(part, flags, 0o666)
    except OSError as exc:
        if os.path.islink(part):
            _refuse_link(part)
        raise _fs_error(part, exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FetchError(f"{part}: not a regular file; remove it")
    return fd


def _discard(part: Path) -> None:
    try:
        if not part.is_symlink():
            part.unlink()
    except OSError:
        pass


def download(url: str, dest: Path, *,  # noqa: C901 - known complexity debt (docs/architecture.md)
             sha256: str | None = None, timeout: float = 30.0,
             progress: Callable[[int, int | None], None] | None = None, max_bytes: int | None = None,
             deadline: float | None = None, validate: Callable[[Path], str | None] | None = None) -> Path:
    """Download ``url`` to ``dest`` atomically, resuming ``dest.part`` and checking ``sha256``.

    ``progress(done_bytes, total_bytes_or_None)`` is called after each chunk. ``max_bytes``: size cap of
    the whole file. ``deadline``: a :func:`time.monotonic` instant by which the download must be done.
    ``validate(part) -> problem or None``: a structural check for a file with no pinned checksum. Returns
    ``dest``. Raises :class:`FetchError` (one line) on an unreachable host, an HTTP error status, a
    truncated body (the ``.part`` file is kept for resuming), a missed deadline (kept, too), a checksum
    mismatch, a body over the cap or one that fails ``validate`` (the ``.part`` file is removed), a
    symbolic link in the way, or a filesystem error.
    """
    dest = Path(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _fs_error(dest.parent, exc) from None
    part = dest.with_name(dest.name + ".part")
    _refuse_link(dest)
    _refuse_link(part)
    if dest.is_dir():
        raise FetchError(f"{dest}: cannot write (is a directory; move it away)")
    try:
        have = os.lstat(part).st_size if os.path.lexists(part) else 0
    except OSError:
        have = 0
    if max_bytes is not None and have > max_bytes:
        _discard(part)
        have = 0

    def left() -> float:
        return timeout if deadline is None else min(timeout, deadline - time.monotonic())

    def late(done: int) -> FetchError:
        return FetchError(f"{url}: too slow, {done} bytes when the deadline passed; run again to resume "
                          "(or give a longer --deadline)")

    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if have:
        req.add_header("Range", f"bytes={have}-")
    if left() <= 0:
        raise late(have)
    try:
        resp = urllib.request.urlopen(req, timeout=left())
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing left to send: the .part file is already whole
            resp = None
        else:
            raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, socket.timeout, OSError, http.client.HTTPException, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"cannot reach {_host(url)} ({reason}) for {url}") from None
    if resp is not None:
        with resp:
            resumed = have and resp.status == 206
            if not resumed:
                have = 0
            length = resp.headers.get("Content-Length")
            expected = int(length) if length is not None and length.isdigit() and len(length) < 19 else None
            total = have + expected if expected is not None else None
            if max_bytes is not None and total is not None and total > max_bytes:
                raise FetchError(f"{url}: {total} bytes, over the cap of {max_bytes} bytes for this file; "
                                 "refused")
            got = 0
            fd = _open_part(part, bool(resumed))
            try:
                with os.fdopen(fd, "wb") as f:
                    while True:
                        if deadline is not None and time.monotonic() > deadline:
                            raise late(have + got)
                        with contextlib.suppress(OSError, ValueError):
                            resp.fp.raw._sock.settimeout(max(left(), 0.05))  # each read ends by the deadline
                        block = resp.read1(CHUNK)
                        if not block:
                            break
                        if max_bytes is not None and have + got + len(block) > max_bytes:
                            raise FetchError(f"{url}: more than the cap of {max_bytes} bytes for this file; "
                                             "file discarded")
                        f.write(block)
                        got += len(block)
                        if progress is not None:
                            progress(have + got, total)
            except FetchError as exc:
                if "cap" in str(exc):
                    _discard(part)
                raise
            except (socket.timeout, TimeoutError) as exc:
                if deadline is not None and time.monotonic() >= deadline - 0.01:
                    raise late(have + got) from None
                raise FetchError(f"{url}: download interrupted after {have + got} bytes ({exc or 'timed out'}); "
                                 "run again to resume") from None
            except (OSError, http.client.HTTPException) as exc:
                if isinstance(exc, OSError) and exc.errno is not None and exc.filename is None and \
                        exc.errno in (28, 30, 13, 122):  # ENOSPC, EROFS, EACCES, EDQUOT: the disk, not the net
                    raise _fs_error(part, exc) from None
                raise FetchError(f"{url}: download interrupted after {have + got} bytes ({exc}); "
                                 "run again to resume") from None
            if expected is not None and got < expected:
                raise FetchError(f"{url}: truncated, got {have + got} of {total} bytes; run again to resume")
    if sha256 is not None:
        digest = sha256_of(part)
        if digest != sha256:
            _discard(part)
            raise FetchError(f"{url}: SHA-256 {digest} does not match the pinned {sha256}; file discarded")
    elif validate is not None:
        problem = validate(part)
        if problem:
            _discard(part)
            raise FetchError(f"{url}: {problem}; file discarded")
    try:
        os.replace(part, dest)
    except OSError as exc:
        raise _fs_error(dest, exc) from None
    return dest


def _resolve(datasets: Iterable[str] | None, sources: Mapping[str, Sequence[RemoteFile]]) -> list[str]:
    names = list(sources) if datasets is None else list(dict.fromkeys(datasets))
    bad = [n for n in names if n not in sources]
    if bad:
        raise FetchError(f"dataset: {', '.join(bad)}: must be one of {', '.join(sources)}")
    return names


MIRROR_ENV = "QKOV_DATA_MIRROR"
"""Environment variable giving a mirror base URL (``qkov data fetch --mirror`` wins over it)."""


def mirror_url(mirror: str, rf: RemoteFile) -> str:
    """Where ``rf`` lies on a mirror: ``<mirror>/<rf.dest>`` (the data directory's layout)."""
    return mirror.rstrip("/") + "/" + urllib.parse.quote(rf.dest)


def check_mirror(mirror: str) -> str:
    """``mirror`` if it is an ``http(s)://host[/path]`` base URL; else :class:`FetchError` (one line)."""
    p = urllib.parse.urlsplit(mirror)
    if p.scheme not in ("http", "https") or not p.netloc or p.query or p.fragment or any(
            c.isspace() or ord(c) < 32 for c in mirror):
        raise FetchError(f"mirror: {mirror!r}: must be an http:// or https:// base URL "
                         "(files are fetched from <mirror>/<path in the data directory>)")
    return mirror


def validate_file(path: Path, rel: str, counts: Mapping[str, tuple[str, int]] = COUNTS) -> str | None:
    """The problem with the file ``path`` standing for ``rel`` (structure and record count), or None."""
    try:
        got = count_records(path, rel)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, UnicodeDecodeError) as exc:
        return f"not a valid {rel.rsplit('/', 1)[-1]} ({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})"
    if rel in counts and got != counts[rel][1]:
        return f"{got} {counts[rel][0]}, expected {counts[rel][1]}"
    return None


def fetch(data_dir: Path, datasets: Iterable[str] | None = None, *, include_optional: bool = True,
          sources: Mapping[str, Sequence[RemoteFile]] | None = None, timeout: float = 30.0,
          progress: Callable[[str, int, int | None], None] | None = None, mirror: str | None = None,
          deadline: float | None = 3600.0, counts: Mapping[str, tuple[str, int]] | None = None,
          ) -> list[tuple[Path, str]]:
    """Fetch ``datasets`` (default all) into ``data_dir``; returns ``(path, "kept"|"downloaded")``.

    A file already in place is kept when its pinned checksum matches (or, with no pin, when
    :func:`validate_file` finds nothing wrong); otherwise it is downloaded again.
    ``progress(dest, done, total)``. ``mirror``: base URL to fetch from instead of the official hosts.
    ``deadline``: seconds for the whole fetch (None: no limit).
    """
    sources = SOURCES if sources is None else sources
    counts = COUNTS if counts is None else counts
    if mirror is not None:
        check_mirror(mirror)
    data_dir = Path(data_dir)
    if data_dir.exists() and not data_dir.is_dir():
        raise FetchError(f"{data_dir}: cannot write (a file stands where the data directory should be)")
    until = None if deadline is None else time.monotonic() + deadline
    out = []
    for name in _resolve(datasets, sources):
        for rf in sources[name]:
            if not (rf.required or include_optional):
                continue
            dest = data_dir / rf.dest
            _refuse_linked_folders(data_dir, dest)
            _refuse_link(dest)
            validate = None if rf.sha256 is not None else (lambda p, _rel=rf.dest: validate_file(p, _rel, counts))
            try:
                if dest.is_file() and (sha256_of(dest) == rf.sha256 if rf.sha256 is not None
                                       else validate is not None and validate(dest) is None):
                    out.append((dest, "kept"))
                    continue
            except OSError as exc:
                raise FetchError(f"{dest}: cannot read ({exc.strerror or exc})") from None
            cb = None if progress is None else (lambda d, t, _dest=rf.dest: progress(_dest, d, t))
            url = rf.url if mirror is None else mirror_url(mirror, rf)
            made = [d for d in (dest.parent, *dest.parent.parents) if d != data_dir.parent and not d.exists()]
            try:
                download(url, dest, sha256=rf.sha256, timeout=timeout, progress=cb, max_bytes=rf.max_bytes,
                         deadline=until, validate=validate)
            except BaseException:
                _remove_empty(made)  # a failed fetch (full disk, refused body) leaves no empty folders behind
                raise
            out.append((dest, "downloaded"))
    return out


def count_records(path: Path, rel: str) -> int:
    """The record count :data:`COUNTS` expects for ``rel``, read from ``path``."""
    if rel.endswith(".txt"):  # TSV with one header line
        with open(path, encoding="utf-8") as f:
            return sum(1 for line in f if line.strip()) - 1
    data = json.loads(path.read_text(encoding="utf-8"))
    if rel.startswith("squad/"):
        return sum(len(p["qas"]) for art in data["data"] for p in art["paragraphs"])
    if rel.endswith("post_id_divisions.json"):
        return sum(len(data[k]) for k in ("train", "val", "test"))
    if rel.endswith("dataset.json"):
        if not isinstance(data, dict) or not all(isinstance(v, dict) and "post_tokens" in v for v in data.values()):
            raise ValueError("not an object of posts, each with post_tokens")
    return len(data)


@dataclass(frozen=True)
class CheckResult:
    """One file's state: ``status`` is ``ok``, ``absent`` (optional file) or a problem."""

    dataset: str
    path: str
    status: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "absent")


def _divisions_problem(dataset: Path, divisions: Path) -> str | None:
    try:
        ds = json.loads(dataset.read_text(encoding="utf-8"))
        div = json.loads(divisions.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        return f"unreadable ({type(exc).__name__})"
    if not isinstance(ds, dict) or not isinstance(div, dict):
        return "dataset.json and post_id_divisions.json must be JSON objects"
    missing = []
    for k in ("train", "val", "test"):
        ids = div.get(k)
        if not isinstance(ids, list):
            return f"post_id_divisions.json: {k}: must be a list of post ids"
        for n, i in enumerate(ids):
            if not isinstance(i, str):
                return f"post_id_divisions.json: {k}[{n}]: {json.dumps(i)[:40]}: a post id must be a string"
            if i not in ds:
                missing.append(i)
    return f"{len(missing)} division ids not in dataset.json (first {missing[0]})" if missing else None


def _jsonl_layout(root: Path) -> CheckResult | None:
    """The rebuilt HateXplain JSONL files, if all present: ok when their line counts match."""
    odd = [f for f in HATEXPLAIN_JSONL if (root / f).exists() and not (root / f).is_file()]
    if odd:
        return CheckResult("hatexplain", f"hatexplain/{odd[0]}", "not a file",
                           "a directory (or other non-file) where the rebuilt JSONL file should be")
    if not all((root / f).is_file() for f in HATEXPLAIN_JSONL):
        return None
    got = {f: sum(1 for line in open(root / f, encoding="utf-8") if line.strip()) for f in HATEXPLAIN_JSONL}
    if got != HATEXPLAIN_JSONL:
        return CheckResult("hatexplain", "hatexplain/{train,val,test}.jsonl", "bad count",
                           f"{got}, expected {HATEXPLAIN_JSONL}")
    return CheckResult("hatexplain", "hatexplain/{train,val,test}.jsonl", "ok",
                       "rebuilt JSONL layout instead of Data/dataset.json (counts match)")


def _check_file(name: str, rf: RemoteFile, path: Path, counts: Mapping[str, tuple[str, int]]) -> CheckResult:
    if rf.sha256 is not None:
        digest = sha256_of(path)
        if digest != rf.sha256:
            return CheckResult(name, rf.dest, "bad checksum", f"SHA-256 {digest}, pinned {rf.sha256}")
    if rf.dest in counts:
        what, want = counts[rf.dest]
        try:
            got = count_records(path, rf.dest)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).splitlines()[0][:160] \
                if str(exc) else ""
            return CheckResult(name, rf.dest, "unreadable", f"{type(exc).__name__}: {what}")
        if got != want:
            return CheckResult(name, rf.dest, "bad count", f"{got} {what}, expected {want}")
    return CheckResult(name, rf.dest, "ok", "sha256 ok" if rf.sha256 else "no pinned checksum; counts ok")


def check(data_dir: Path, datasets: Iterable[str] | None = None, *,
          sources: Mapping[str, Sequence[RemoteFile]] = SOURCES,
          counts: Mapping[str, tuple[str, int]] = COUNTS) -> list[CheckResult]:
    """Verify ``data_dir``: presence, pinned SHA-256 and record count of every file of ``datasets``.

    A file may also sit where :data:`ALTERNATES` says; HateXplain's ``dataset.json`` may be
    replaced by the rebuilt JSONL layout (:data:`HATEXPLAIN_JSONL`). The result is ok when
    every entry's :attr:`CheckResult.ok` is true.
    """
    data_dir = Path(data_dir)
    results = []
    for name in _resolve(datasets, sources):
        found: dict[str, Path] = {}
        for rf in sources[name]:
            path = next((data_dir / p for p in (rf.dest, *ALTERNATES.get(rf.dest, ())) if (data_dir / p).is_file()),
                        None)
            if path is None:
                alt = _jsonl_layout(data_dir / "hatexplain") if rf.dest == "hatexplain/Data/dataset.json" else None
                results.append(alt or CheckResult(name, rf.dest, "missing" if rf.required else "absent",
                                                  f"fetch {rf.url}"))
                continue
            res = _check_file(name, rf, path, counts)
            results.append(res)
            if res.ok:
                found[rf.dest] = path
        ds, div = found.get("hatexplain/Data/dataset.json"), found.get("hatexplain/Data/post_id_divisions.json")
        if ds is not None and div is not None:
            problem = _divisions_problem(ds, div)
            if problem:
                results.append(CheckResult(name, "hatexplain/Data", "inconsistent", problem))
    return results
