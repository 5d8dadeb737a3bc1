"""Parametrization names come from the kinds' registry: configs accept every registered one, nothing else.

``theory.parametrization.ParamName`` is a ``str`` pydantic checks against ``registered()``; the app's configs and
the science packages' specs use it, so a new kind's parametrizations reach every command without an edit there.
"""

import ast
import re
from pathlib import Path

import pytest

from qkov.core.config import ConfigError, parse_config
from qkov.core.simulate_config import SimulateConfig
from theory.parametrization import PARAMETRIZATIONS, registered
from validation.synthetic.experiment import SyntheticConfig

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cls", [SimulateConfig, SyntheticConfig], ids=lambda c: c.__name__)
def test_every_registered_parametrization_is_accepted(cls):
    cfg = parse_config(cls, params=registered())
    assert tuple(cfg.params) == registered() and len(registered()) > len(PARAMETRIZATIONS)


@pytest.mark.parametrize("cls", [SimulateConfig, SyntheticConfig], ids=lambda c: c.__name__)
def test_an_unregistered_name_is_one_line_naming_the_registry(cls):
    with pytest.raises(ConfigError) as err:
        parse_config(cls, params=("CACO", "XAXO"))
    assert str(err.value) == f"params.1: XAXO: must be one of {', '.join(registered())}"
