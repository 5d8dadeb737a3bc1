"""``qkov derive``: the JSON holds every required piece, the ledger covers items 2-8, reports render."""

import json

import pytest

from qkov.cli.support import run_cli
from qkov.core.runstore import is_complete
from qkov.cli.main import cli
from tests.cli_errors import assert_one_line_error

PARAMS = ("CACO", "FACO", "CAFO", "FAFO")
LEDGER_IDS = {"symmetric-subspace", "reduced-odes", "rescaling", "fixed-lines", "first-integrals", "growth-rates",
              "sharpness-ratio", "sharpness-order", "paper-equations"}


@pytest.fixture(scope="module")
def derived(tmp_path_factory):
    results = tmp_path_factory.mktemp("derive")
    assert run_cli(cli, ["derive", "--out", str(results)]) == 0
    out, = (results / "runs").iterdir()
    assert out.name.startswith("derive-")
    return out, json.loads((out / "derivation.json").read_text())


def test_json_has_system_conserved_integrals_laws_for_all_four(derived):
    _, d = derived
    dims = {p: d["parametrizations"][p]["dimension"] for p in PARAMS}
    assert dims == {"CACO": 2, "FACO": 4, "CAFO": 3, "FAFO": 5}
    for p in PARAMS:
        e = d["parametrizations"][p]
        assert set(e["rhs"]) == set(e["state"])
        assert e["first_integral"]["H"] and e["asymptotics"]["u(t)"] and e["asymptotics"]["v(u)"]
        assert ("delta" in e["conserved"]) == (p[2] == "F")
        assert ("C_QK" in e["conserved"] and "S" in e["conserved"]) == (p[0] == "F")
    assert d["ordering"]["asymptotic_order_sharpest_first"] == ["FACO", "CACO", "FAFO", "CAFO"]


def test_every_check_passes_and_ledger_covers_items(derived):
    out, d = derived
    assert d["summary"]["passed"] == d["summary"]["checks"] > 80
    # docs/theory.md: in the default derive every check is decided symbolically (no numeric fallback)
    assert d["summary"]["numeric_fallbacks"] == 0, [c for c in d.get("checks", []) if c.get("method") != "symbolic"]
    ids = {e["id"] for e in d["ledger"]}
    assert LEDGER_IDS <= ids
    for e in d["ledger"]:
        assert e["status"] in {"derived", "refined", "refuted", "empirical"}
    assert {e["id"]: e["status"] for e in d["ledger"]}["growth-rates"] == "refined"
    assert is_complete(out)


def test_reports_are_written_and_html_is_offline(derived):
    out, d = derived
    html = (out / "report.html").read_text()
    assert html.count("<math") == len(d["displays"]) > 30
    assert "http://" not in html.replace("http://www.w3.org/1998/Math/MathML", "")
    assert "https://" not in html and "<script" not in html
    assert "PASSED" in html and "Claims ledger" in html
    md = (out / "report.md").read_text()
    assert md.count("$$") == 2 * len(d["displays"])
    assert (out / "report.tex").read_text().startswith("\\documentclass")


def test_json_flag_prints_only_json(capsys, derived):
    assert run_cli(cli, ["derive", "--json", "--param", "CACO"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert list(payload["parametrizations"]) == ["CACO"]


@pytest.mark.parametrize("args,field", [(["--param", "XAXO"], "param"), (["--format", "pdf"], "format")])
def test_bad_options_exit_2_one_line_nothing_written(tmp_path, capsys, args, field):
    out = tmp_path / "d"
    assert run_cli(cli, ["derive", "--out", str(out), *args]) == 2
    assert_one_line_error(capsys.readouterr().err, field)
    assert not out.exists()


def test_ledger_separates_asymptotic_from_finite_loss_statements(derived):
    _, d = derived
    e = {x["id"]: x for x in d["ledger"]}
    order = e["sharpness-order"]
    assert order["order"] == d["ordering"]["asymptotic_order_sharpest_first"]
    kinds = [s["status"] for s in order["statements"]]
    assert kinds == ["derived", "simulated", "derived"]
    assert "FACO > CACO > FAFO > CAFO" in order["statements"][0]["text"]
    assert "initialisation" not in order["derived"]                   # the finite-loss order is not the start's
    assert "logarithmically slow" in order["statements"][2]["text"] and "u* =" in order["statements"][2]["text"]
    ratio = e["sharpness-ratio"]
    assert [s["status"] for s in ratio["statements"]] == ["derived", "simulated"]
    assert "-> -1 as u -> oo" in ratio["statements"][0]["text"] and "only as a limit" in ratio["derived"]
    assert "does not define b" in e["paper-equations"]["derived"]      # the 1/b statement is conditional
