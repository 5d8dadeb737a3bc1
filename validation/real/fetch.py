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
- every failure raises :class:`FetchError` with one line naming the URL or host.

:func:`check` verifies a data directory: each required file present, its checksum where
pinned, and its record counts (:data:`COUNTS`). No function here prints or exits; the
command line is ``qkov data fetch`` / ``qkov data check``.

Layout produced (relative to the data directory)::

    squad/dev-v1.1.json, squad/train-v1.1.json
    hatexplain/Data/dataset.json, hatexplain/Data/post_id_divisions.json
    sva/linzen_edinburgh_nlu/wiki-dev.txt, sva/linzen_edinburgh_nlu/wiki-test.txt
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
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


_HX = "https://raw.githubusercontent.com/hate-alert/HateXplain/01d742279dac941981f53806154481c0e15ee686/Data/"
_ED = "https://raw.githubusercontent.com/treszkai/edinburgh-nlu-cw/7312229f3b7bd6cbcc8108173b8af51487cfe23b/data/"
_SQ = "https://rajpurkar.github.io/SQuAD-explorer/dataset/"

SOURCES: dict[str, tuple[RemoteFile, ...]] = {
    "squad": (
        RemoteFile(_SQ + "dev-v1.1.json", "squad/dev-v1.1.json",
                   "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
                   "computed from the project's copy, whose MD5 3e85deb501d4e538b6bc56f786231552 equals "
                   "the MD5 torchtext records for this URL"),
        RemoteFile(_SQ + "train-v1.1.json", "squad/train-v1.1.json",
                   "3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955",
                   "as recorded in the data snapshot's squad/SOURCE.md (30,288,272 bytes); not read by qkov, "
                   "which splits the dev set by article", required=False),
    ),
    "hatexplain": (
        RemoteFile(_HX + "post_id_divisions.json", "hatexplain/Data/post_id_divisions.json",
                   "c2fb0d89862e7897b11ea3e9380753f15a793482b4b70ad0532dfb1212212835",
                   "computed from the project's copy, byte-identical to the official file at this commit"),
        RemoteFile(_HX + "dataset.json", "hatexplain/Data/dataset.json", None,
                   "no checksum pinned: the official dataset.json was never available to this project "
                   "(its snapshot is a rebuilt JSONL); the URL is fixed to one commit, and check() verifies "
                   "its structure and counts (20,148 posts, every division id present)"),
    ),
    "sva": (
        RemoteFile(_ED + "wiki-dev.txt", "sva/linzen_edinburgh_nlu/wiki-dev.txt",
                   "e38b28be5ced0af4aaca9e02aa6543fdac2f3ab40b124805663f4e78a28df0a6",
                   "Linzen et al. (2016) items as distributed with the Edinburgh NLU coursework; computed "
                   "from the project's copy of this commit's file"),
        RemoteFile(_ED + "wiki-test.txt", "sva/linzen_edinburgh_nlu/wiki-test.txt",
                   "1ff97d6ab9b9612da7ccbf9648553c0eeec2291b9bd7b698f3a85c1412f45abf",
                   "as wiki-dev.txt"),
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


def download(url: str, dest: Path, *, sha256: str | None = None, timeout: float = 30.0,
             progress: Callable[[int, int | None], None] | None = None) -> Path:
    """Download ``url`` to ``dest`` atomically, resuming ``dest.part`` and checking ``sha256``.

    ``progress(done_bytes, total_bytes_or_None)`` is called after each chunk. Returns ``dest``.
    Raises :class:`FetchError` (one line) on an unreachable host, an HTTP error status, a
    truncated body (the ``.part`` file is kept for resuming) or a checksum mismatch (the
    ``.part`` file is removed).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if have:
        req.add_header("Range", f"bytes={have}-")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing left to send: the .part file is already whole
            resp = None
        else:
            raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, socket.timeout, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"cannot reach {_host(url)} ({reason}) for {url}") from None
    if resp is not None:
        with resp:
            resumed = have and resp.status == 206
            if not resumed:
                have = 0
            length = resp.headers.get("Content-Length")
            expected = int(length) if length is not None and length.isdigit() else None
            total = have + expected if expected is not None else None
            got = 0
            try:
                with open(part, "ab" if resumed else "wb") as f:
                    for block in iter(lambda: resp.read(CHUNK), b""):
                        f.write(block)
                        got += len(block)
                        if progress is not None:
                            progress(have + got, total)
            except (OSError, socket.timeout, http.client.HTTPException) as exc:
                raise FetchError(f"{url}: download interrupted after {have + got} bytes ({exc}); "
                                 "run again to resume") from None
            if expected is not None and got < expected:
                raise FetchError(f"{url}: truncated, got {have + got} of {total} bytes; run again to resume")
    if sha256 is not None:
        digest = sha256_of(part)
        if digest != sha256:
            part.unlink()
            raise FetchError(f"{url}: SHA-256 {digest} does not match the pinned {sha256}; file discarded")
    os.replace(part, dest)
    return dest


def _resolve(datasets: Iterable[str] | None, sources: Mapping[str, Sequence[RemoteFile]]) -> list[str]:
    names = list(sources) if datasets is None else list(dict.fromkeys(datasets))
    bad = [n for n in names if n not in sources]
    if bad:
        raise FetchError(f"dataset: {', '.join(bad)}: must be one of {', '.join(sources)}")
    return names


def fetch(data_dir: Path, datasets: Iterable[str] | None = None, *, include_optional: bool = True,
          sources: Mapping[str, Sequence[RemoteFile]] = SOURCES, timeout: float = 30.0,
          progress: Callable[[str, int, int | None], None] | None = None) -> list[tuple[Path, str]]:
    """Fetch ``datasets`` (default all) into ``data_dir``; returns ``(path, "kept"|"downloaded")``.

    A file already in place is kept when its pinned checksum matches (or, with no pin, when it
    exists); a file with a wrong checksum is downloaded again. ``progress(dest, done, total)``.
    """
    data_dir = Path(data_dir)
    out = []
    for name in _resolve(datasets, sources):
        for rf in sources[name]:
            if not (rf.required or include_optional):
                continue
            dest = data_dir / rf.dest
            if dest.is_file() and (rf.sha256 is None or sha256_of(dest) == rf.sha256):
                out.append((dest, "kept"))
                continue
            cb = None if progress is None else (lambda d, t, _dest=rf.dest: progress(_dest, d, t))
            download(rf.url, dest, sha256=rf.sha256, timeout=timeout, progress=cb)
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
    ds = json.loads(dataset.read_text(encoding="utf-8"))
    div = json.loads(divisions.read_text(encoding="utf-8"))
    missing = [i for k in ("train", "val", "test") for i in div[k] if i not in ds]
    return f"{len(missing)} division ids not in dataset.json (first {missing[0]})" if missing else None


def _jsonl_layout(root: Path) -> CheckResult | None:
    """The rebuilt HateXplain JSONL files, if all present: ok when their line counts match."""
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
        except (ValueError, KeyError, TypeError) as exc:
            return CheckResult(name, rf.dest, "unreadable", f"{type(exc).__name__}: {exc}")
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
