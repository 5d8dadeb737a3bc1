"""The README's main command end to end, in a fresh clone and a fresh virtual environment, as a committed record.

What a new user runs first (install + ``qkov reproduce --quick``), timed around exactly the README's fenced
block after ``<!-- main-command -->``: this script clones the repository's committed HEAD into a scratch folder,
runs that block there with ``bash -c`` (the environment inherited, so the machine's pip configuration, e.g. a
local CPU torch wheel, applies as it does for the user), and writes one JSON record: wall time, user and system
CPU of the whole process tree (``os.wait4``, as ``/usr/bin/time`` reports it), the peak resident set of the
largest process, the load average before and after, the exit status, the reproduce call's own span and its runs
(from ``reproduce.json`` and the runs' manifests), and the report's headline (``report.md``). docs/performance.md
renders the record (``qkov docs``, block ``main-command``); no number there is typed by hand.

Usage: ``python benchmarks/bench_main_command.py [--json benchmarks/results/main-command.json] [--workdir DIR]``
(about 4-10 minutes on the project's 2-core machine; the scratch folder is removed unless ``--keep``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from theory.files import atomic_write_bytes  # noqa: E402  (the checkout's, not an installed qkov's)

MARKER = "<!-- main-command -->"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "main-command.json"
HEADLINE = re.compile(r"\*\*(Of \d+ claims: [^*]+?)\.?\*\*")
COUNTED = re.compile(r"\*\*(Evidence against|Undecided)[^*\n]*?\((\d+) lines?\):\*\*")


def readme_command(readme: Path) -> str:
    """The bash lines of the first fenced ``bash`` block after :data:`MARKER` in ``readme`` (as .ci/run reads the
    test command); ``ValueError`` when there is none."""
    lines, state = [], 0
    for line in readme.read_text(encoding="utf-8").splitlines():
        if state == 0 and line.strip() == MARKER:
            state = 1
        elif state == 1 and line.startswith("```bash"):
            state = 2
        elif state == 2 and line.startswith("```"):
            break
        elif state == 2:
            lines.append(line)
    cmd = "\n".join(lines).strip()
    if not cmd:
        raise ValueError(f"{readme}: no fenced bash block after {MARKER}")
    return cmd


def report_headline(report_md: str) -> dict:
    """From the report's Markdown: ``headline`` (``"Of N claims: ..."``) and the counts of its evidence-against
    and undecided lines (None where the report has no such heading)."""
    m = HEADLINE.search(report_md)
    counts = {kind: int(n) for kind, n in COUNTED.findall(report_md)}
    return {"headline": m.group(1) if m else None, "against_lines": counts.get("Evidence against"),
            "undecided_lines": counts.get("Undecided")}


def _iso_seconds(a: str, b: str) -> float:
    return (dt.datetime.fromisoformat(b) - dt.datetime.fromisoformat(a)).total_seconds()


def reproduce_summary(results: Path) -> dict:
    """The reproduce call's span (``reproduce.json``'s started/ended), its runs by status, and the runs' own
    seconds summed (each manifest's started/ended; a missing or unreadable manifest is counted, not guessed)."""
    out: dict = {"span_s": None, "runs": 0, "by_status": {}, "run_s_sum": 0.0, "manifests_missing": 0}
    try:
        summary = json.loads((results / "reproduce.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return out
    out["span_s"] = _iso_seconds(summary["started"], summary["ended"])
    runs = summary.get("runs") or []
    out["runs"] = len(runs)
    for r in runs:
        out["by_status"][r["status"]] = out["by_status"].get(r["status"], 0) + 1
        try:
            man = json.loads((results / "runs" / r["name"] / "manifest.json").read_text(encoding="utf-8"))
            out["run_s_sum"] += _iso_seconds(man["started"], man["ended"])
        except (OSError, ValueError, KeyError):
            out["manifests_missing"] += 1
    return out


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def measure(workdir: Path, results_dir: str = "qkov-results") -> dict:
    """Clone :data:`ROOT`'s committed HEAD into ``workdir/qkov``, run the README's main command there and return
    the record (see the module docstring)."""
    clone = workdir / "qkov"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    cmd = readme_command(clone / "README.md")
    load_start = os.getloadavg()
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.perf_counter()
    with open(workdir / "main-command.log", "wb") as log:
        proc = subprocess.Popen(["bash", "-c", f"set -euo pipefail; {cmd}"], cwd=clone, stdout=log,
                                stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    report = clone / results_dir / "report.md"
    return {
        "benchmark": "main-command",
        "command": cmd,
        "commit": _git("rev-parse", "HEAD", cwd=clone),
        "started": started.isoformat(timespec="seconds"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "pip_find_links": bool(os.environ.get("PIP_FIND_LINKS")),
        "returncode": proc.returncode,
        "wall_s": round(wall, 1),
        "user_s": round(usage.ru_utime, 1),
        "sys_s": round(usage.ru_stime, 1),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 0),
        "reproduce": reproduce_summary(clone / results_dir),
        **report_headline(report.read_text(encoding="utf-8") if report.is_file() else ""),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where the record goes (atomically)")
    ap.add_argument("--workdir", type=Path, default=None, help="an empty or new scratch folder (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (the clone, its venv, the log)")
    args = ap.parse_args(argv)
    if args.workdir is not None:
        if args.workdir.is_symlink() or (args.workdir.exists() and any(args.workdir.iterdir())):
            ap.error(f"--workdir {args.workdir}: must be a new or empty folder, not a link")
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="qkov-main-command-"))
    try:
        record = measure(workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir / "qkov", ignore_errors=True)
    atomic_write_bytes(args.json, (json.dumps(record, indent=1) + "\n").encode())
    print(json.dumps({k: record[k] for k in ("commit", "returncode", "wall_s", "user_s", "sys_s", "headline")}))
    return 0 if record["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
