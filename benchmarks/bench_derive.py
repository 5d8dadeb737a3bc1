"""Benchmark of ``qkov derive`` for all four parametrizations.

Each timing runs in a fresh process (sympy's and qkov's in-process caches start empty), so the
numbers are what a user sees:

* baseline: one process, no on-disk cache (``workers=1``);
* parallel: the default worker pool, no on-disk cache (the cold ``qkov derive``);
* cached:   a second ``qkov derive`` of the same code (on-disk cache hit);
* thorough: ``--thorough`` (full-matrix cross-checks at every size), parallel, cold.

Prints each time, its ratio to the baseline measured in the same run, and to the 30 s target.
Usage: ``python benchmarks/bench_derive.py [--skip-thorough]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

TARGET_S = 30.0

SNIPPET = """
import sys
from theory.derivation_cache import cached_derivation_json
from theory.parametrization import PARAMETRIZATIONS
workers = None if sys.argv[1] == "default" else int(sys.argv[1])
payload, hit = cached_derivation_json(PARAMETRIZATIONS, sys.argv[2] == "thorough", sys.argv[3] == "cache", workers)
assert payload["summary"]["passed"] == payload["summary"]["checks"], payload["summary"]
print("hit" if hit else "miss")
"""


def timed(workers: str, thorough: bool, cache: bool, cache_dir: str) -> tuple[float, str]:
    env = {**os.environ, "QKOV_CACHE_DIR": cache_dir}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", SNIPPET, workers, "thorough" if thorough else "quick",
                          "cache" if cache else "nocache"], env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, out.stdout.strip()


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as cache_dir:
        base, _ = timed("1", False, False, cache_dir)
        rows.append(("baseline (1 process, no cache)", base))
        par, _ = timed("default", False, True, cache_dir)
        rows.append(("qkov derive, cold (worker pool)", par))
        warm, hit = timed("default", False, True, cache_dir)
        assert hit == "hit"
        rows.append(("qkov derive, cached", warm))
        if "--skip-thorough" not in sys.argv:
            thr, _ = timed("default", True, False, cache_dir)
            rows.append(("qkov derive --thorough, cold", thr))
    print(f"{'configuration':40s} {'seconds':>9s} {'vs baseline':>12s} {'vs 30 s target':>15s}")
    for name, sec in rows:
        print(f"{name:40s} {sec:9.1f} {base / sec:11.2f}x {sec / TARGET_S:14.2f}x")
    print(f"cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
