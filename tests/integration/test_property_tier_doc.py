"""The property-test tutorial's numbers are the code's: the count of @given properties and the profile sizes."""

import re
from pathlib import Path

from tests.paths import ROOT


def test_tutorial_counts_and_profiles_match_tests_property():
    text = (ROOT / "docs/tutorials/property-tests.md").read_text()
    n_given = sum(src.read_text().count("\n@given(") for src in (ROOT / "tests/property").glob("test_*.py"))
    assert n_given >= 15
    assert f"({n_given} @given properties)" in text
    conf = (ROOT / "tests/property/conftest.py").read_text()
    ci = re.search(r'"property-ci", max_examples=(\d+)', conf).group(1)
    thorough = re.search(r'"property-thorough", max_examples=(\d+)', conf).group(1)
    assert f"`ci` (default, {ci} examples per property" in text
    assert f"`thorough` ({thorough} examples each)" in text
    assert 'os.environ.get("QKOV_HYPOTHESIS_PROFILE", "ci")' in conf
    assert "QKOV_HYPOTHESIS_PROFILE=thorough python -m pytest -q -m property" in text
