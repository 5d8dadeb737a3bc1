"""Generated blocks of the docs: every results table a reader sees is built from committed run records.

A block sits in its target file between ``<!-- generated:ID -->`` and ``<!-- /generated:ID -->`` (each on a line
of its own); :data:`TABLES` declares, once per block, its id, the target file (relative to the repository
root), the builder ``(load) -> markdown`` (``load(set_name) -> list[Record]``, :func:`qkov.records.load_set` on
the repository's ``records/``) and the record sets it reads. ``qkov docs`` rewrites every block;
``qkov docs --check`` changes nothing and exits 1 naming the blocks that differ (tests/unit/test_generated_docs.py
runs it, so a committed table that its records do not produce fails the tests).

Builders call the project's own statistics (:mod:`qkov.study.real_summary`, :mod:`qkov.study.real_inference`)
on the records (:func:`qkov.records.real_runs`); they never restate a number.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Callable

from qkov.records import RECORDS_DIR, Record, load_set
from theory.errors import InputError
from theory.files import atomic_write_bytes, read_nofollow

Loader = Callable[[str], list[Record]]


@dataclasses.dataclass(frozen=True)
class GeneratedBlock:
    """One generated block: ``id`` (lowercase, digits, '-'), ``target`` (a file relative to the repository
    root), ``build`` (``(load) -> markdown``), ``sets`` (the record sets it reads)."""

    id: str
    target: str
    build: Callable[[Loader], str]
    sets: tuple[str, ...]


def _registry() -> dict[str, GeneratedBlock]:
    from qkov.docsgen.adam_tables import _blocks as adam_blocks
    from qkov.docsgen.bench_tables import BLOCKS as BENCH
    from qkov.docsgen.family_tables import BLOCKS as FAMILY
    from qkov.docsgen.findings_table import BLOCKS as FINDINGS
    from qkov.docsgen.command_tables import BLOCKS as MAIN_COMMAND
    from qkov.docsgen.official_tables import BLOCKS as OFFICIAL
    from qkov.docsgen.preregistered_tables import BLOCKS as PREREGISTERED
    from qkov.docsgen.real_tables import BLOCKS as REAL

    blocks: dict[str, GeneratedBlock] = {}
    for b in (*FINDINGS, *REAL, *PREREGISTERED, *FAMILY, *OFFICIAL, *adam_blocks(), *BENCH, *MAIN_COMMAND):
        if b.id in blocks:
            raise ValueError(f"generated block {b.id!r} declared twice")
        blocks[b.id] = b
    return blocks


TABLES: dict[str, GeneratedBlock] = _registry()
"""Every generated block, by id (one entry per block; the builders' modules declare them)."""


def _markers(block_id: str) -> tuple[str, str]:
    return f"<!-- generated:{block_id} -->", f"<!-- /generated:{block_id} -->"


def splice(text: str, block_id: str, body: str, where: str = "") -> str:
    """``text`` with the content between block ``block_id``'s markers replaced by ``body`` (one newline after the
    opening marker, one before the closing one); ``ValueError`` unless each marker is there exactly once, on a line
    of its own, in order."""
    begin, end = _markers(block_id)
    starts = [m.start() for m in re.finditer(rf"^{re.escape(begin)}[ \t]*$", text, re.M)]
    ends = [m.start() for m in re.finditer(rf"^{re.escape(end)}[ \t]*$", text, re.M)]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(f"{where or 'text'}: block {block_id}: needs one line {begin} and one later line {end} "
                         f"(found {len(starts)} and {len(ends)})")
    head = text[:starts[0]] + begin + "\n"
    return head + body.strip("\n") + "\n" + text[ends[0]:]


def repo_root() -> Path:
    """The checkout this qkov was imported from (the folder above ``qkov/``)."""
    return Path(__file__).resolve().parent.parent.parent


def loader(root: Path) -> Loader:
    """``load(set_name)`` over ``root/records`` (each set read once)."""
    cache: dict[str, list[Record]] = {}

    def load(name: str) -> list[Record]:
        if name not in cache:
            cache[name] = load_set(name, root / RECORDS_DIR)
        return cache[name]

    return load


def build(block: GeneratedBlock, load: Loader) -> str:
    """The markdown of ``block`` from the records (``load``)."""
    return block.build(load)


def regenerate(root: Path | None = None, *, check: bool = False, tables: dict[str, GeneratedBlock] | None = None
               ) -> list[str]:
    """Rebuild every block of ``tables`` (default :data:`TABLES`) in its target under ``root`` (default
    :func:`repo_root`); return the ids whose committed text differed. With ``check`` nothing is written.
    ``InputError`` (one line) for a missing target file, marker or record set."""
    root = repo_root() if root is None else Path(root)
    tables = TABLES if tables is None else tables
    load = loader(root)
    by_target: dict[str, list[GeneratedBlock]] = {}
    for b in tables.values():
        by_target.setdefault(b.target, []).append(b)
    differ: list[str] = []
    for target, blocks in by_target.items():
        path = root / target
        try:
            old = read_nofollow(path).decode("utf-8")
        except OSError as exc:
            raise InputError(f"docs: {target}: cannot be read ({exc.strerror or exc})") from None
        new = old
        for b in blocks:
            try:
                body = build(b, load)
            except FileNotFoundError as exc:
                raise InputError(f"docs: block {b.id}: record set missing ({exc.filename})") from None
            try:
                after = splice(new, b.id, body, target)
            except ValueError as exc:
                raise InputError(f"docs: {exc}") from None
            if after != new:
                differ.append(b.id)
            new = after
        if new != old and not check:
            atomic_write_bytes(path, new.encode("utf-8"), parents=False)
    return differ


__all__ = ["GeneratedBlock", "Loader", "TABLES", "build", "loader", "regenerate", "repo_root", "splice"]
