"""A circuit kind added in the registry alone (theory/parametrization.py) that declares no optimizer orbits is refused
by the optimizer-map commands when the run is planned: one line naming the field, the value and what is allowed, exit
2, nothing written (issue 43: a new kind reached ``validate synthetic --optimizer adam`` and failed inside the run with
``KeyError``)."""

import pytest

from qkov.cli.main import cli, run_cli
from theory import parametrization as reg

pytestmark = pytest.mark.unit


class Deep(reg.Factorized):
    """A stand-in new kind as a user would add it: a subclass registered under its own letter, no optimizer orbits."""

    name, letter, description = "deep", "D", "deep"
    optimizer_orbits = reg.CircuitKind.optimizer_orbits
    orbit_masks = reg.CircuitKind.orbit_masks


@pytest.fixture
def deep(monkeypatch):
    monkeypatch.setitem(reg.KINDS, "D", Deep())
    assert "DACO" in reg.registered() and not reg.has_optimizer_orbits("DACO")
    return "DACO"


@pytest.mark.parametrize("optimizer", ["adam", "momentum"])
def test_validate_synthetic_optimizer_refuses_a_kind_without_orbits_before_any_run(deep, optimizer, tmp_path, capsys):
    rc = run_cli(cli, ["validate", "synthetic", "--optimizer", optimizer, "--param", deep, "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith(f"qkov: error: params.0: {deep}: must be one of CACO, FACO, CAFO, FAFO") and "\n" not in err
    assert "deep kind has no optimizer orbits" in err
    assert list(tmp_path.iterdir()) == []                               # refused before a run directory exists


def test_simulate_optimizer_refuses_a_kind_without_orbits(deep, capsys):
    assert run_cli(cli, ["simulate", "--param", deep, "--optimizer", "adam", "--t", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"qkov: error: param: {deep}: --optimizer adam has reduced maps for") and "\n" not in err


def test_the_four_have_orbits_and_the_kinds_declare_them():
    """MODEL.md's four are what the generated optimizer maps cover; tied and scaled kinds declare none."""
    assert reg.orbit_map_params() == reg.PARAMETRIZATIONS
    assert all(not reg.has_optimizer_orbits(p) for p in reg.registered() if p not in reg.PARAMETRIZATIONS)


class DeepWithOrbits(reg.Factorized):
    """A new kind that declares optimizer orbits (inherited from the factorized kind) but whose maps were never
    generated (``python -m theory.codegen_optim`` not rerun): before, validate synthetic --optimizer adam planned it
    and failed inside the run with ``KeyError: 'DACO'``."""

    name, letter, description = "deep", "D", "deep"


@pytest.fixture
def deep_with_orbits(monkeypatch):
    monkeypatch.setitem(reg.KINDS, "D", DeepWithOrbits())
    assert reg.has_optimizer_orbits("DACO") and "DACO" in reg.orbit_map_params()
    return "DACO"


def test_validate_synthetic_optimizer_refuses_a_kind_whose_maps_were_not_generated(deep_with_orbits, tmp_path,
                                                                                  capsys):
    rc = run_cli(cli, ["validate", "synthetic", "--optimizer", "adam", "--param", deep_with_orbits,
                       "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err
    assert err.startswith(f"qkov: error: params.0: {deep_with_orbits}: its kinds declare optimizer orbits but "
                          "simulation/generated_optim.py or simulation/generated.py has no code for it"), err
    assert "run python -m theory.codegen and python -m theory.codegen_optim" in err
    assert list(tmp_path.iterdir()) == []                               # refused before a run directory exists


def test_simulate_optimizer_refuses_a_kind_whose_maps_were_not_generated(deep_with_orbits, capsys):
    assert run_cli(cli, ["simulate", "--param", deep_with_orbits, "--optimizer", "adam", "--t", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"qkov: error: param: {deep_with_orbits}: --optimizer adam has reduced maps for "
                          "CACO, FACO, CAFO, FAFO only") and "\n" not in err
