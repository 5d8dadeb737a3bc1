"""`import simulation` stays small: scipy.integrate (the DOP853 tableau) and scipy.special (the laws' LambertW,
expi) load on first use, not at import (0.5 CPU-s -> 0.12 CPU-s measured, docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

HEAVY = ("scipy.integrate", "scipy.special", "sympy", "torch")


def _loaded(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + f"; import sys; print([m for m in {HEAVY!r} if m in sys.modules])"],
                         capture_output=True, text=True, check=True)
    return eval(out.stdout.strip().splitlines()[-1])


def test_import_simulation_loads_no_scipy_integrate_or_special():
    assert _loaded("import simulation") == []


def test_the_lazy_pieces_still_work_on_first_use():
    """TACO (tied QK, no first integral): its reduced flow is stepped by DOP853 (CACO, CAFO, FACO, FAFO take the
    clock-free path, which needs neither)."""
    loaded = _loaded("import numpy as np; from simulation import generated, solve; "
                     "solve('TACO', K=10, M=19, eta_qk=1, eta_ov=1, u0=0.1, v0=0.1, t=[10.0]); "
                     "from simulation.reduced import integrate_many; integrate_many('TACO', 10, 19, [1.0] * 6, 1, 0.1, 0.1, [10.0]); "
                     "assert abs(generated.scipy.special.lambertw(1.0).real - 0.5671432904097838) < 1e-15")
    assert "scipy.integrate" in loaded and "scipy.special" in loaded
