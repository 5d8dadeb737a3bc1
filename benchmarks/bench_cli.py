"""Start-up and end-to-end times of the commands a new user runs first (issue 10's targets).

Each command runs in a fresh process with an empty derivation cache; we record wall time and CPU time
(user + sys of the child, which a loaded machine does not inflate the way it inflates wall time), and
the ratio of each to the baseline measured in the same run: ``python -c pass`` (interpreter start-up).

Usage: ``python benchmarks/bench_cli.py [--repeat 3] [--skip-derive] [--json PATH]``; prints a Markdown table, and with
``--json`` writes the record that docs/performance.md's block ``cli-startup`` is generated from
(``benchmarks/results/cli-startup.json``; ``qkov docs``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

from pathlib import Path

from theory.files import atomic_write_bytes
from theory.parametrization import BASELINE

PY = sys.executable
CASES = [
    ("baseline: python -c pass", [PY, "-c", "pass"], None),
    ("qkov --help", [PY, "-m", "qkov", "--help"], 0.5),
    ("python -c 'import qkov'", [PY, "-c", "import qkov"], None),
    ("qkov simulate (README example)", [PY, "-m", "qkov", "simulate", "--param", "all", "--K", "10", "--M", "19",
                                        "--eta-qk", "10", "--eta-ov", "1", "--u0", "0.1", "--v0", "0.1",
                                        "--t", "50,500,2500"], 2.0),
    ("qkov validate synthetic --param CACO --ratios 10 --K 4 --M 8 (4000 GD steps, float64)",
     [PY, "-m", "qkov", "validate", "synthetic", "--param", BASELINE, "--ratios", "10", "--K", "4", "--M", "8",
      "--out", "{tmp}"], 10.0),
]
DERIVE = [
    ("qkov derive (cold, all four)", [PY, "-m", "qkov", "derive", "--out", "{tmp}"], 33.0),
    ("qkov derive (cached)", [PY, "-m", "qkov", "derive", "--out", "{tmp}"], 2.0),
]


def run(cmd: list[str], env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _commit() -> str | None:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                         text=True)
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-derive", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write the record here (atomically)")
    ns = ap.parse_args()
    rows = []
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "QKOV_CACHE_DIR": os.path.join(tmp, "cache")}
        cases = [(n, [c.replace("{tmp}", os.path.join(tmp, "out")) for c in cmd], target) for n, cmd, target in CASES]
        for name, cmd, target in cases:
            times = [run(cmd, env) for _ in range(ns.repeat)]
            rows.append((name, min(t[0] for t in times), min(t[1] for t in times), target))
        if not ns.skip_derive:
            for name, cmd, target in DERIVE:
                cmd = [c.replace("{tmp}", os.path.join(tmp, "out")) for c in cmd]
                wall, cpu = run(cmd, env)
                rows.append((name, wall, cpu, target))
    base_wall = rows[0][1]
    load = os.getloadavg()[0]
    if ns.json is not None:
        record = {"benchmark": "cli-startup", "command": "python benchmarks/bench_cli.py --json " + str(ns.json),
                  "commit": _commit(), "started": started, "machine": platform.platform(), "cpus": os.cpu_count(),
                  "load_start": round(load_start, 2), "load_end": round(load, 2), "repeat": ns.repeat,
                  "rows": [{"command": n, "wall_s": round(w, 3), "cpu_s": round(c, 3), "target_wall_s": t,
                            "best_of": 1 if n in {d[0] for d in DERIVE} else ns.repeat} for n, w, c, t in rows]}
        atomic_write_bytes(ns.json, (json.dumps(record, indent=1) + "\n").encode())
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f} during the run; best of {ns.repeat}\n")
    print("| command | wall s | CPU s | wall / baseline | target (wall, idle machine) |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, wall, cpu, target in rows:
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {wall / base_wall:.1f}x | "
              f"{'' if target is None else f'< {target:g} s'} |")


if __name__ == "__main__":
    main()
