"""The property-test tutorial runs as written and its numbers are the code's.

* the count of @given properties and the profile sizes it states are tests/property's and qkov.testing.profiles';
* section 2's two test files, saved under the names the page gives, pass (``test_my_laws.py``) and fail
  (``test_my_wrong_law.py``, the law scaled by 1.2) in a fresh pytest, and the failure prints what the page shows,
  naming the parametrization, K, M, the ratio, the start and the time;
* the replay snippet prints what the page says it prints.
"""

import contextlib
import io
import os
import re
import subprocess
import sys

from qkov.testing.profiles import PROFILES
from tests.docs_pages import python_blocks
from tests.paths import ROOT

PAGE = ROOT / "docs/tutorials/property-tests.md"


def test_tutorial_counts_and_profiles_match_tests_property():
    text = PAGE.read_text()
    n_given = sum(src.read_text().count("\n@given(") for src in (ROOT / "tests/property").glob("test_*.py"))
    assert n_given >= 15
    assert f"({n_given} @given properties)" in text
    assert f"`ci` (default, {PROFILES['ci']['max_examples']} examples per property" in text
    assert f"`thorough` ({PROFILES['thorough']['max_examples']} examples each)" in text
    assert "QKOV_HYPOTHESIS_PROFILE=thorough python -m pytest -q -m property" in text
    assert "--qkov-hypothesis-profile=thorough" in text


def _section_2() -> tuple[str, list[str]]:
    text = PAGE.read_text()
    sec = text[text.index("## 2. Write your own property"):text.index("## 3.")]
    return sec, python_blocks(sec)


def _pytest(tmp_path, name: str, code: str) -> subprocess.CompletedProcess:
    (tmp_path / name).write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "QKOV_HYPOTHESIS_PROFILE"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_section_2_properties_run_as_written_and_the_wrong_law_fails_naming_every_input(tmp_path):
    sec, blocks = _section_2()
    assert len(blocks) == 3
    for block in blocks[:2]:     # "~15 lines per property": each file's lines over its properties
        assert len(block.strip().splitlines()) <= 15 * block.count("@given(")
    assert "Save as `test_my_laws.py`" in sec and "Save as\n`test_my_wrong_law.py`" in sec
    good = _pytest(tmp_path, "test_my_laws.py", blocks[0])
    assert good.returncode == 0 and "2 passed" in good.stdout, good.stdout + good.stderr
    bad = _pytest(tmp_path, "test_my_wrong_law.py", blocks[1])
    assert bad.returncode == 1, bad.stdout + bad.stderr
    shown = re.search(r"fails on its first example, and says where:\n\n```text\n(.*?)```", sec, re.S).group(1)
    for line in shown.strip().splitlines():
        assert line.strip() in bad.stdout, (line, bad.stdout)
    message = bad.stdout[bad.stdout.index("AssertionError: law '1.2 x next-order 1-p'"):]
    for part in ("param=CACO", "K=2", "M=1", "ratio=1", "start=symmetric(u0=0.05, v0=0.05)", "t=1e+06",
                 "error=2.003e-01 > remainder=2.218e-02"):
        assert part in message, part


def test_the_replay_snippet_prints_what_the_page_says():
    sec, blocks = _section_2()
    namespace: dict = {"__name__": "property_tests_tutorial"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks[1:]:
            exec(compile(block, "property-tests.md", "exec"), namespace)
    printed = out.getvalue().strip()
    assert f"which prints `{printed}`" in sec, printed
