"""Config validation: each bad field gives exit status 2, one line naming it, nothing written."""

import math

import pytest
from hypothesis import given, strategies as st

from qkov.core.config import ConfigError, parse_config, resolve_data_dir, parse_float_list
from qkov.core.simulate_config import SimulateConfig
from qkov.cli.main import cli, run_cli


@pytest.mark.parametrize("field,value,needle", [
    ("params", ("XAXO",), "must be one of"),
    ("K", 1, ">= 2"),
    ("M", 0, ">= 1"),
    ("eta_qk", 0.0, "in [0.0001, 10000]"),
    ("eta_qk", -1.0, "in [0.0001, 10000]"),
    ("eta_qk", 1e300, "in [0.0001, 10000]"),
    ("eta_ov", math.nan, "in [0.0001, 10000]"),
    ("eta_ov", math.inf, "in [0.0001, 10000]"),
])
def test_simulate_config_rejects_each_field(field, value, needle):
    with pytest.raises(ConfigError) as err:
        parse_config(SimulateConfig, **{field: value})
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(field.replace("_", "-")) and needle in msg, msg


def test_unknown_field_is_named():
    with pytest.raises(ConfigError, match="^bogus: 1: is not a known field$"):
        parse_config(SimulateConfig, bogus=1)


@given(K=st.integers(2, 500), M=st.integers(1, 500),
       eq=st.floats(1e-4, 1e4), eo=st.floats(1e-4, 1e4))
def test_valid_configs_round_trip(K, M, eq, eo):
    cfg = parse_config(SimulateConfig, K=K, M=M, eta_qk=eq, eta_ov=eo)
    assert (cfg.K, cfg.M, cfg.eta_qk, cfg.eta_ov) == (K, M, eq, eo)
    assert parse_config(SimulateConfig, **cfg.to_json_dict()) == cfg


def test_missing_data_dir_is_config_error(tmp_path, monkeypatch):
    monkeypatch.delenv("QKOV_DATA_DIR", raising=False)
    assert resolve_data_dir(None) is None
    with pytest.raises(ConfigError, match="^data-dir: .*nope: must be an existing directory"):
        resolve_data_dir(str(tmp_path / "nope"))
    monkeypatch.setenv("QKOV_DATA_DIR", str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="QKOV_DATA_DIR"):
        resolve_data_dir(None)


def test_float_list_parse():
    assert parse_float_list("ratios", "1,3,10") == (1.0, 3.0, 10.0)
    with pytest.raises(ConfigError, match="^ratios: 1,x: "):
        parse_float_list("ratios", "1,x")


def test_cli_bad_data_dir_exits_2_one_line_nothing_written(tmp_path, capsys):
    out = tmp_path / "out"
    code = run_cli(cli, ["reproduce", "--quick", "--out", str(out), "--data-dir", str(tmp_path / "missing")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("qkov: error: data-dir: ")
    assert not out.exists()
