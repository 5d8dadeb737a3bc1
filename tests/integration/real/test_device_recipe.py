"""``--device`` (resolved before any work, recorded in the manifest), ``--recipe`` (which groups move with
the ratio), the real stage's data-directory checks, and the dead span pipeline staying gone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from qkov.cli.main import cli
from qkov.cli.support import run_cli
from qkov.study import real_stage as study
from validation.device import DeviceError, autocast, parse_device, resolve_device
from validation.real.batching import encode_classification, to_device
from validation.real.config import default_config
from validation.real.examples import ClassExample
from validation.real.models import AttentionClassifier, MultiHeadClassifier
from validation.real.training import build_optimizer, classification_loss, train
from validation.real.vocab import Vocab

from .conftest import data_dir_for
from .test_malformed_files import write_sva

NO_CUDA = not torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(NO_CUDA, reason="needs a CUDA device (none here; CI has none)")


@pytest.mark.parametrize("text, canon", [("cpu", "cpu"), (" CUDA ", "cuda"), ("cuda:1", "cuda:1"), ("auto", "auto"),
                                         ("mps", "mps")])
def test_parse_device_canonical(text, canon):
    assert parse_device(text) == canon


@pytest.mark.parametrize("text", ["gpu", "cuda:", "cuda:-1", "cpu0", "", "cuda:1:2", "tpu"])
def test_parse_device_rejects(text):
    with pytest.raises(DeviceError, match=r"^device: .*: must be one of auto, cpu, cuda, cuda:N or mps$"):
        parse_device(text)


def test_resolve_cpu_and_auto():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else resolve_device("auto").type)
    if NO_CUDA and not torch.backends.mps.is_available():
        assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is present: the absent-device error cannot be shown here")
def test_absent_cuda_is_one_line():
    with pytest.raises(DeviceError) as e:
        resolve_device("cuda")
    assert str(e.value).startswith("device: cuda: not available") and "\n" not in str(e.value)


def test_bf16_refused_off_cuda():
    with pytest.raises(DeviceError, match="bf16 autocast is only offered on CUDA"):
        with autocast(torch.device("cpu"), True):
            pass


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is present")
@pytest.mark.parametrize("args, line", [
    (["--device", "cuda"], "qkov: error: device: cuda: not available"),
    (["--device", "cuda:3"], "qkov: error: device: cuda:3: not available"),
    (["--device", "gpu"], "qkov: error: device: gpu: must be one of auto, cpu, cuda, cuda:N or mps"),
    (["--device", "cpu", "--bf16"], "qkov: error: device: cpu: bf16 autocast is only offered on CUDA"),
])
def test_cli_absent_device_exit_2_nothing_written(tmp_path, capsys, args, line):
    out = tmp_path / "o"
    rc = run_cli(cli, ["validate", "real", "--dataset", "sva", "--quick", "--data-dir", str(tmp_path),
                       "--out", str(out), *args])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(line) and err.count("\n") == 1
    assert not out.exists()


def _tiny():
    v = Vocab.train([["a", "b", "c", "d"]], min_frequency=1)
    exs = [ClassExample(str(i), tuple("abcd"[(i + j) % 4] for j in range(2 + i % 3)), i % 2, None)
           for i in range(24)]
    return v, encode_classification(exs, v, 8)


def test_train_on_explicit_cpu_device_equals_default():
    """Moving model and batches through ``to_device`` must not change the arithmetic."""
    v, data = _tiny()
    cfg = default_config("sva", ratio=3.0, seed=0, quick=True, data_dir=".", epochs=2, batch_size=8)
    weights = []
    for dev in (None, torch.device("cpu")):
        torch.manual_seed(0)
        m = AttentionClassifier(len(v), 2, d=8, init_std=0.3)
        train(m, data, cfg, classification_loss, progress=False, device=dev)
        weights.append([p.detach().clone() for p in m.parameters()])
    for a, b in zip(*weights):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_to_device_keeps_non_tensor_fields():
    _, data = _tiny()
    moved = to_device(data, torch.device("cpu"))
    assert moved is data       # already there: nothing copied
    assert to_device(data, None) is data


@needs_cuda
def test_cuda_training_matches_cpu_to_float_tolerance():
    """Same seed, same batches: CUDA and CPU weights agree to float rounding after a few steps."""
    v, data = _tiny()
    cfg = default_config("sva", ratio=3.0, seed=0, quick=True, data_dir=".", epochs=1, batch_size=8)
    ws = []
    for dev in (torch.device("cpu"), torch.device("cuda")):
        torch.manual_seed(0)
        m = AttentionClassifier(len(v), 2, d=8, init_std=0.3)
        train(m, data, cfg, classification_loss, progress=False, device=dev)
        ws.append([p.detach().cpu() for p in m.parameters()])
    for a, b in zip(*ws):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)  # float32 kernels differ in reduction order


def test_execute_run_records_device_and_recipe_in_manifest(tmp_path):
    d = data_dir_for("sva")
    cfg = default_config("sva", ratio=1.0, seed=0, quick=True, data_dir=str(d), max_train=64, max_val=32,
                         max_test=32, epochs=1)
    study.execute_run(cfg, tmp_path / "run", progress=False, device="cpu")
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    met = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert man["device"]["device"] == "cpu" and man["device"]["autocast"] is None
    assert man["recipe"] == "ratio-only" and met["device"] == man["device"]
    assert "device" not in json.loads((tmp_path / "run" / "config.json").read_text())
    # where the time went: training and checkpoint seconds, the same numbers as metrics.json's, both > 0
    assert man["seconds"] == {"training": met["train_seconds"], "checkpoints": met["checkpoint_seconds"]}
    assert man["seconds"]["training"] > 0 and man["seconds"]["checkpoints"] > 0


def _rates(dataset: str, recipe: str, ratio: float = 30.0) -> dict[str, tuple[float, set[str]]]:
    cfg = default_config(dataset, ratio=ratio, seed=0, quick=False, data_dir=".", recipe=recipe)
    m = MultiHeadClassifier(10, 2, d=8, heads=2, d_head=4, max_len=8)
    names = {id(p): n for n, p in m.named_parameters()}
    opt = build_optimizer(m, cfg)
    return {n: (g["lr"], g["circuit"]) for g in opt.param_groups for n in (names[id(p)] for p in g["params"])}


@pytest.mark.parametrize("dataset, moved", [("hatexplain", {"emb.weight", "dist.weight"}),
                                             ("sva", {"emb.weight", "dist.weight", "ln.bias", "head.bias"})])
def test_paper_recipe_changes_exactly_the_declared_groups(dataset, moved):
    base, paper = _rates(dataset, "ratio-only"), _rates(dataset, "paper")
    assert set(base) == set(paper)                 # every parameter trains under both recipes
    changed = {n for n in base if base[n] != paper[n]}
    assert changed == moved
    lr_ov = default_config(dataset, ratio=30.0, seed=0, quick=False, data_dir=".").lr_ov
    for n in moved:
        assert base[n][0] == pytest.approx(lr_ov) and paper[n][0] == pytest.approx(30.0 * lr_ov)
        assert base[n][1] == paper[n][1] == ("embedding" if "emb" in n or "dist" in n else "bias")
    for n in ("W_Q", "W_K"):
        assert base[n] == paper[n] == (pytest.approx(30.0 * lr_ov), "qk")


def test_rates_are_data_and_the_recipes_their_presets():
    """``--rates`` sets one named group's factor and nothing else; the paper recipe equals ratio-only plus
    the dataset's declared groups at the ratio (HateXplain: ``embedding``), so both spell the same rates."""
    from validation.real.config import group_rates

    lr_ov = default_config("hatexplain", ratio=1.0, seed=0, quick=False, data_dir=".").lr_ov
    base = _rates("hatexplain", "ratio-only", 1.0)
    cfg = default_config("hatexplain", ratio=1.0, seed=0, quick=False, data_dir=".", rates={"embedding": 30.0})
    m = MultiHeadClassifier(10, 2, d=8, heads=2, d_head=4, max_len=8)
    names = {id(p): n for n, p in m.named_parameters()}
    got = {names[id(p)]: g["lr"] for g in build_optimizer(m, cfg).param_groups for p in g["params"]}
    assert {n for n in got if got[n] != base[n][0]} == {"emb.weight", "dist.weight"}
    assert got["emb.weight"] == pytest.approx(30.0 * lr_ov) and got["W_Q"] == pytest.approx(lr_ov)
    paper = default_config("hatexplain", ratio=30.0, seed=0, quick=False, data_dir=".", recipe="paper")
    spelled = default_config("hatexplain", ratio=30.0, seed=0, quick=False, data_dir=".", rates={"embedding": 30.0})
    assert group_rates(paper) == group_rates(spelled)
    assert len({spelled, spelled.replace()}) == 1            # a config with rates is still hashable
    assert "rates" not in default_config("hatexplain", ratio=1.0, seed=0, quick=False, data_dir=".").to_json_dict()


@pytest.mark.parametrize("text, word", [("attn=3", "unknown group"), ("qk=0", "bad factor"), ("mlp=nan", "bad factor"),
                                        ("embedding", "not GROUP=FACTOR"), ("bias=2,bias=3", "repeated")])
def test_parse_rates_rejects_in_one_line(text, word):
    from validation.real.config import parse_rates

    with pytest.raises(ValueError, match=word) as e:
        parse_rates(text)
    assert str(e.value).startswith("rates: ") and "\n" not in str(e.value)


@pytest.mark.parametrize("args, line", [(["--rates", "attn=30"], "rates: 'attn=30': unknown group"),
                                        (["--rates", "qk=30", "--ratios", "1"], "qk=F or --ratios, not both")])
def test_cli_bad_rates_exit_2_nothing_written(tmp_path, capsys, args, line):
    out = tmp_path / "o"
    rc = run_cli(cli, ["validate", "real", "--dataset", "sva", "--quick", "--data-dir", str(tmp_path),
                       "--out", str(out), *args])
    err = capsys.readouterr().err
    assert rc == 2 and line in err and err.count("\n") == 1 and not out.exists()


def test_recipe_key_stability():
    """``ratio-only`` (the default) is left out of the config's JSON, so old run directories keep their keys;
    ``paper`` is in it, so the two recipes never share a directory."""
    a = default_config("sva", ratio=1.0, seed=0, quick=True, data_dir=".")
    b = default_config("sva", ratio=1.0, seed=0, quick=True, data_dir=".", recipe="paper")
    assert "recipe" not in a.to_json_dict() and b.to_json_dict()["recipe"] == "paper"


def test_empty_data_dir_is_one_line_exit_2(tmp_path, capsys):
    out = tmp_path / "o"
    rc = run_cli(cli, ["reproduce", "--stages", "real", "--data-dir", str(tmp_path), "--out", str(out),
                       "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"qkov: error: data-dir: {tmp_path}: holds none of") and err.count("\n") == 1
    assert not out.exists()


def test_corrupted_record_fails_before_any_run(tmp_path, capsys):
    p = write_sva(tmp_path, ["the cats sleep .\t1\t2\tVBP\tsleep\tsleeps", "the dogs run .\t2\t1\tVBP\trun\truns"])
    out = tmp_path / "o"
    rc = run_cli(cli, ["reproduce", "--stages", "real", "--data-dir", str(tmp_path), "--out", str(out),
                       "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and str(p) in err and "line 3" in err and err.count("\n") == 1
    assert not out.exists()


def test_dead_span_pipeline_is_gone():
    root = Path(__file__).resolve().parents[3]
    hits = subprocess.run(["git", "-C", str(root), "grep", "-n", "-E", r"SpanModel|SpanTensors|evaluate_span|span_loss",
                           "--", "*.py"], capture_output=True, text=True).stdout
    assert hits.strip() == "" or all("test_device_recipe.py" in h for h in hits.splitlines())
