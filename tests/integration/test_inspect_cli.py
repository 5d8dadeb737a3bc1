"""``qkov inspect``: each attention module's classification and each parameter's rate, on a tiny Qwen2 config JSON
and a saved tiny GPT-2 directory (built from configs, nothing downloaded); ``--json``; the structure-only path for a
model over ``--max-params``; bad input is one line, exit 2, nothing written."""

import json
import os

import pytest

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")

from qkov.cli.main import cli  # noqa: E402
from qkov.cli.support import run_cli  # noqa: E402
from tests.cli_errors import assert_one_line_error  # noqa: E402


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    qwen = transformers.Qwen2Config(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                    intermediate_size=32, vocab_size=40, max_position_embeddings=16)
    (d / "qwen2.json").write_text(qwen.to_json_string())
    qwen3 = transformers.Qwen3Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                     head_dim=8, intermediate_size=32, vocab_size=40, max_position_embeddings=16)
    (d / "qwen3.json").write_text(qwen3.to_json_string())
    transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40,
                                                         n_positions=16)).save_pretrained(d / "gpt2")
    return d


def _run(capsys, *args):
    code = run_cli(cli, list(args))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_help(capsys):
    code, out, _ = _run(capsys, "inspect", "--help")
    assert code == 0 and "SOURCE" in out and "--max-params" in out and "--json" in out


def test_qwen2_config_json(sources, capsys):
    code, out, _ = _run(capsys, "inspect", str(sources / "qwen2.json"), "--lr", "0.001", "--ratio", "10")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Qwen2Model") and "checked by running the model" in lines[0]
    assert "layers.0.self_attn (Qwen2Attention): hf-q_proj" in lines
    rows = {line.split()[2]: (float(line.split()[0]), line.split()[1]) for line in lines if line.startswith("  ")}
    assert rows["layers.1.self_attn.q_proj.weight"] == (0.01, "Q")
    assert rows["layers.1.self_attn.k_proj.bias"] == (0.01, "K")
    assert rows["layers.1.self_attn.v_proj.weight"] == (0.001, "V")
    assert rows["layers.1.self_attn.o_proj.weight"] == (0.001, "O")
    assert lines[-1] == "other: 12 tensors outside the attention circuits at 0.001"


def test_gpt2_directory_json(sources, capsys):
    code, out, _ = _run(capsys, "inspect", str(sources / "gpt2"), "--ratio", "30", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["model_class"] == "GPT2LMHeadModel" and res["verified"] is True
    (site,) = res["sites"]
    assert site["name"] == "transformer.h.0.attn" and "fused-c_attn" in site["layout"]
    got = [(p["role"], p["rows"], p["lr"]) for p in site["parameters"] if p["name"].endswith("c_attn.weight")]
    assert got == [("Q slice", "q columns [0:16]", pytest.approx(0.03)), ("K slice", "k columns [16:32]",
                   pytest.approx(0.03)), ("V slice", "v columns [32:48]", 0.001)]
    assert {p["role"] for p in site["parameters"] if ".c_proj." in p["name"]} == {"O"}
    assert res["refused"] == [] and len(res["other"]) == 12


def test_whole_circuit_puts_qwen3_norms_with_qk(sources, capsys):
    def norms(*flags):
        code, out, _ = _run(capsys, "inspect", str(sources / "qwen3.json"), "--json", *flags)
        assert code == 0
        (site,) = json.loads(out)["sites"]
        return {p["name"].split(".")[-2]: (p["role"], p["lr"]) for p in site["parameters"] if "_norm" in p["name"]}

    assert norms("--whole-circuit") == {"q_norm": ("scores only", pytest.approx(0.01)),
                                        "k_norm": ("scores only", pytest.approx(0.01))}
    assert norms() == {"q_norm": ("other", 0.001), "k_norm": ("other", 0.001)}


def test_a_model_over_max_params_is_read_from_its_structure(capsys):
    code, out, _ = _run(capsys, "inspect", "gpt2", "--max-params", "1000")
    assert code == 0
    assert out.startswith("GPT2Model (gpt2): 124,439,808 parameters") and "structure only" in out.splitlines()[0]
    assert "h.11.attn (GPT2Attention): fused-c_attn" in out


@pytest.mark.parametrize("args,field", [
    (["nowhere-model"], "source"),
    (["{bad}"], "source"),
    (["{link}"], "source"),
    (["gpt2", "--ratio", "0"], "ratio"),
    (["gpt2", "--lr", "nan"], "lr"),
    (["gpt2", "--max-params", "-1"], "max-params"),
    (["gpt2", "--max-params", "10", "--whole-circuit"], "max_params"),
])
def test_bad_input_is_one_line_exit_2(args, field, sources, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    os.symlink(sources / "gpt2", tmp_path / "link")
    before = sorted(os.listdir(tmp_path))
    args = [a.replace("{bad}", str(tmp_path / "bad.json")).replace("{link}", str(tmp_path / "link")) for a in args]
    code, out, err = _run(capsys, "inspect", *args)
    assert code == 2 and out == ""
    assert_one_line_error(err, field)
    assert sorted(os.listdir(tmp_path)) == before
