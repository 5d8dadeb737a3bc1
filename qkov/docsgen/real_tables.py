"""The real-data blocks of docs/real-data.md, built from record sets by qkov.study.real_summary's statistics."""

from __future__ import annotations

BLOCKS: tuple = ()
