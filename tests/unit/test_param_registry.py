"""Parametrization names come from the kinds' registry: configs accept every registered one, nothing else.

``theory.parametrization.ParamName`` is a ``str`` pydantic checks against ``registered()``; the app's configs and
the science packages' specs use it, so a new kind's parametrizations reach every command without an edit there.
"""

import ast
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


GENERATED = {"simulation/generated.py", "simulation/generated_optim.py"}       # written by theory.codegen*
REGISTRY = {"theory/parametrization.py"}
DEBT: dict[str, str] = {}
"""Modules allowed to name parametrizations as values for now (none: the optimizer orbits, the Adam comparison
and the real-data config read the registry's BASELINE / FULLY_FACTORIZED / PARAMETRIZATIONS)."""


def _names_as_values(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """String constants equal to a parametrization name (docstrings and prose inside longer strings excluded)."""
    tree = ast.parse(path.read_text())
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names]


def test_no_module_outside_the_registry_names_a_parametrization():
    """Defaults and branches take names from theory.parametrization (BASELINE, name_of, registered()), so a new kind
    needs no edit elsewhere; every name the letters of the registered kinds could form is looked for."""
    letters = [k.letter for k in __import__("theory.parametrization", fromlist=["KINDS"]).KINDS.values()]
    names = {f"{q}A{o}O" for q in letters for o in letters} | set(registered())
    found = {}
    for pkg in ("theory", "simulation", "validation", "qkov", "benchmarks"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in GENERATED | REGISTRY | set(DEBT):
                continue
            hits = _names_as_values(path, names)
            if hits:
                found[rel] = hits
    assert found == {}, f"parametrization names as literals outside the registry: {found}"


def test_the_literal_scan_finds_a_name():
    """The scan is not vacuous: it finds the names the registry itself declares."""
    hits = _names_as_values(ROOT / "theory/parametrization.py", set(registered()))
    assert {v for _, v in hits} >= set(PARAMETRIZATIONS)
