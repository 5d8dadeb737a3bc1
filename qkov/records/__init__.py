"""Committed run records: the compact trace of every run behind a number in README.md or docs/.

::

    from qkov.records import export_runs, load_set
    export_runs(sorted(Path("OUT/runs").iterdir()), "hx-2x2")      # -> records/hx-2x2.jsonl
    recs = load_set("hx-2x2")                                        # [Record(set, run, kind, config, metrics, provenance)]

``qkov export --out OUT --set NAME`` is the command; :mod:`qkov.docsgen` builds the docs' tables from the sets
(``qkov docs``). The contract: RECORDS.md's section in docs/records.md.
"""

from qkov.records.extractors import EXTRACTORS
from qkov.records.real import real_runs
from qkov.records.store import (RECORDS_DIR, Record, SkippedRun, check_set_name, export_runs, load_set, record_of,
                                set_path)

__all__ = ["EXTRACTORS", "RECORDS_DIR", "Record", "SkippedRun", "check_set_name", "export_runs", "load_set",
           "real_runs", "record_of", "set_path"]
