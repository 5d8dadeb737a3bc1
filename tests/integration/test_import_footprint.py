"""What a fresh process loads: ``import qkov``, the CLI, the study API, a simulation and a training run pull in
only what they need (no torch, Dask, pydantic or symbolic theory where they are not used). Measured, not
assumed: each case starts a new interpreter. Moved from tests/unit/test_architecture.py (the static layering
scans stay there): the interpreters and their imports take several seconds of CPU."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    return set(out.stdout.split())


SYMBOLIC = {"sympy", "theory.symbols", "theory.reduced", "theory.derivation", "theory.asymptotics", "theory.codegen"}
"""What a process that only computes numbers must not load: sympy and theory's symbolic modules."""


@pytest.mark.parametrize("code,absent", [
    ("import qkov", {"torch", "distributed", "dask", "pydantic"} | SYMBOLIC),
    ("from qkov.cli.main import cli", {"torch", "distributed", "dask", "scipy"} | SYMBOLIC),
    ("from qkov.study import reproduce", {"torch", "distributed", "dask", "scipy"} | SYMBOLIC),
    ("from simulation import solve; solve('FAFO', K=4, M=3, eta_qk=2, eta_ov=1, u0=.1, v0=.1, t=[1, 10])",
     {"torch"} | SYMBOLIC),
    ("from simulation.closed_forms import law_functions, first_integral_values", {"torch"} | SYMBOLIC),
])
def test_fresh_process_imports_only_what_it_needs(code, absent):
    assert _modules_after(code) & absent == set()


def test_training_loads_no_symbolic_theory():
    """Training needs the generated numerics only. (torch's own optimizers import sympy through
    torch._dynamo, so sympy itself is not checked here; theory's symbolic modules are.)"""
    loaded = _modules_after("from validation.synthetic.experiment import SyntheticConfig, run_grid\n"
                            "run_grid(SyntheticConfig(params=('FAFO',), ratios=(3.0,), steps=20, log_every=10))")
    assert loaded & (SYMBOLIC - {"sympy"}) == set()
