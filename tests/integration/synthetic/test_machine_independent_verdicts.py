"""The quick study's Adam runs give the same verdicts under both MKL code paths and under 1 and 2 threads (issue 41).

Each run is repeated in a fresh interpreter with ``MKL_CBWR=COMPATIBLE`` (SSE-era kernels) and ``MKL_CBWR=AVX2``
(torch's CPU build calls MKL; on a machine without MKL the variable is ignored and the check still compares thread
counts), and with ``torch.set_num_threads`` 1 and 2. From the exact symmetric start a single Adam run's outcome
is decided by rounding (issue 31's case de-sharpens under one code path and sharpens under the other); the
ensembles start 1e-6 off the set, so their de-sharpening counts, and the verdicts, are the seeds'. Slow: four
interpreters train issue 31's case (64 seeded starts x 2 ratios, ~6000 steps) and the quick K=4, M=8 case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.slow

SCRIPT = r"""
import json, sys, torch
from qkov.core.config import parse_config
from qkov.study import optimizer_run
from validation.synthetic.optimizer_map_run import OptimizerMapConfig
threads = int(sys.argv[1])
out = {}
for i, cfg in enumerate(optimizer_run.study_configs(True)):
    if cfg.optimizer != "adam":
        continue
    torch.set_num_threads(threads)
    runs = cfg.data(curves=False)
    evs = [optimizer_run.default_betas_verdict(runs), optimizer_run.stability_verdict(runs),
           optimizer_run.calibration_verdict(runs)]
    out[str(i)] = {"verdicts": {e.claim: e.verdict for e in evs if e is not None},
                   "k": [p.get("desharpen_k") for r in runs for p in r["pairs"]]}
print(json.dumps(out))
"""


def _run(mkl: str, threads: int) -> dict:
    env = {**os.environ, "MKL_CBWR": mkl, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(threads)], env=env, capture_output=True, text=True,
                       timeout=1800, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_quick_adam_runs_give_the_same_verdicts_on_both_mkl_paths_and_thread_counts():
    got = {(mkl, t): _run(mkl, t) for mkl, t in (("COMPATIBLE", 1), ("AVX2", 1), ("AVX2", 2), ("COMPATIBLE", 2))}
    base = got[("COMPATIBLE", 1)]
    assert base and all(v["verdicts"] for v in base.values())
    for key, res in got.items():
        assert {i: v["verdicts"] for i, v in res.items()} == {i: v["verdicts"] for i, v in base.items()}, key
        # the counts are the seeds': a member flips only if rounding moves it across a basin boundary
        for i, v in res.items():
            for ka, kb in zip(v["k"], base[i]["k"]):
                if ka is not None:
                    assert all(abs(a - b) <= 1 for a, b in zip(ka, kb)), (key, i, ka, kb)
