"""qkov.study.reproduce takes stage names as the README writes them: stages="derive,simulate"."""

from __future__ import annotations

import pytest

from qkov.core.config import ConfigError
from qkov.study.reproduce_study import _stage_names, reproduce

pytestmark = pytest.mark.unit


def test_names_as_a_string_or_a_list_select_like_only():
    assert _stage_names("derive,simulate", None) == (None, ("derive", "simulate"))
    assert _stage_names(["derive", " simulate "], None) == (None, ("derive", " simulate "))
    assert _stage_names("all", None) == (None, None)
    assert _stage_names(None, ["derive", "real"]) == (None, ["derive", "real"])   # only= passes to the check
    stage_objects = (object(),)
    assert _stage_names(stage_objects, ["derive"]) == (stage_objects, ["derive"])


@pytest.mark.parametrize("kw, msg", [
    ({"stages": "derive,nope"}, "stages: derive,nope: must be 'all' or comma-separated values from derive, simulate"),
    ({"stages": "derive", "only": ["real"]}, "stages: derive: give stage names once"),
])
def test_unknown_or_doubled_names_are_one_line_and_nothing_is_written(tmp_path, kw, msg):
    with pytest.raises(ConfigError) as err:
        reproduce("quick", tmp_path / "out", **kw)
    assert str(err.value).startswith(msg) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()
