"""simulation/generated.py is current: regenerating it from theory's expressions gives the checked-in file.
Moved from tests/unit/test_generated_module.py: a fresh process runs the whole code generation (sympy), about
15 s of CPU; the unit tests there check the generated values against a fresh lambdify."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import ROOT


def test_regenerating_gives_the_checked_in_file_byte_for_byte(tmp_path):
    """A fresh process with another hash seed writes the same text (the file is deterministic and current)."""
    out = tmp_path / "generated.py"
    env = {"PYTHONHASHSEED": "4321", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-m", "theory.codegen", "--out", str(out)], cwd=ROOT, check=True,
                   capture_output=True, env=env)
    assert out.read_text() == (ROOT / "simulation" / "generated.py").read_text(), \
        "simulation/generated.py is stale: run `python -m theory.codegen`"
