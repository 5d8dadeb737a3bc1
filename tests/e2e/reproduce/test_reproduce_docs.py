"""The docs this helper owns: links resolve, the property-test tutorial's code runs and passes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT
DOCS = ["docs/reproduce.md", "docs/cluster.md", "docs/tutorials/derivation-report.md",
        "docs/tutorials/property-tests.md"]


@pytest.mark.parametrize("doc", DOCS)
def test_relative_links_resolve(doc):
    path = ROOT / doc
    prose = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)#]+)\)", prose):
        if not target.startswith(("http://", "https://")):
            assert (path.parent / target).exists(), f"{doc}: broken link {target}"


def test_reproduce_options_documented():
    from qkov.cli.reproduce import reproduce

    text = (ROOT / "docs/reproduce.md").read_text()
    for p in reproduce.params:
        for opt in p.opts:
            assert opt in text, f"docs/reproduce.md does not mention {opt}"


@pytest.mark.slow
def test_property_test_tutorial_code_passes(tmp_path):
    text = (ROOT / "docs/tutorials/property-tests.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    (tmp_path / "test_my_asymptotics.py").write_text(code)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_asymptotics.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "2 passed" in out.stdout
