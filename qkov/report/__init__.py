"""The study report: one self-contained HTML page (and a Markdown twin) built from the run directories.

:func:`build_report` reads ``<out>/runs/*/`` (``config.json``, ``manifest.json``, metrics,
``claims.json``, figures and the theory run's ``derivation.json``) and writes
``<out>/report.html`` and ``<out>/report.md``.
"""

from qkov.report.build import build_report

__all__ = ["build_report"]
