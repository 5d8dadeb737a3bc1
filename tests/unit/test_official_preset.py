"""``--preset official`` (issues 32, 45): the official code's settings (PAPER.md), the +-200-character SQuAD context
cut, HateXplain's optimizer groups as PAPER.md lists them (frozen MLP, weight decay, projection biases and the
positional embedding at 1x, no clipping), SVA's preset, and runs of the two presets never sharing a summary group."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from qkov.study.real_command import RealSweep
from qkov.study.real_summary import group_runs
from validation.real import datasets as registry
from validation.real.config import default_config
from validation.real.examples import SquadExample
from validation.real.official import OFFICIAL_AC_EDGES
from validation.real.squad_data import split_words
from validation.real.squad_decoder import DecoderLM, decoder_loss, encode_decoder
from validation.real.vocab import Vocab

# The documented official settings, read from PAPER.md ("More facts from the official notebooks" and
# "Real-data settings of the official code"): one table, one test.
DOCUMENTED = {
    "squad": dict(ratio=20.0, model="paper", optimizer="adamw", lr_ov=5e-5, d=300, heads=6, layers=6, d_ff=1200,
                  dropout=0.2, context_chars=200, answer_len=50, weight_decay=0.05, label_smoothing=0.1,
                  clip_norm=0.5, warmup_steps=1000, batch_size=64, epochs=100, max_train=60000, max_val=10000),
    "hatexplain": dict(ratio=30.0, model="paper", optimizer="adamw", recipe="paper", lr_ov=5e-5, d=64, heads=4,
                       d_head=64, d_mlp=256, frozen=("mlp",), weight_decay=1e-3, epochs=30, batch_size=32,
                       schedule="cosine", qkv_bias=True, clip=False),
    "sva": dict(ratio=100.0, model="paper", optimizer="sgd", recipe="paper", lr_ov=5e-4, momentum=0.99, d=64, heads=4,
                d_head=64, qkv_bias=True, clip=False),
}

# PAPER.md's optimizer groups, per parameter of the official model, as factors of the base rate (the ratio for
# "x ratio"): HateXplain "embedding and W_Q, W_K at 30x, biases b_Q, b_K, positional embedding, W_V, W_O, b_V, b_O
# and the classifier head at 1x", the MLP in none; SVA "W_Q, W_K (and biases, embedding) at 100x".
PAPER_GROUPS = {
    "hatexplain": {"W_Q": "ratio", "W_K": "ratio", "emb.weight": "ratio", "q_bias": 1, "k_bias": 1, "dist.weight": 1,
                   "W_V": 1, "W_O": 1, "v_bias": 1, "o_bias": 1, "head.weight": 1, "head.bias": 1},
    "sva": {"W_Q": "ratio", "W_K": "ratio", "emb.weight": "ratio", "q_bias": "ratio", "k_bias": "ratio",
            "v_bias": "ratio", "o_bias": "ratio", "head.bias": "ratio", "W_V": 1, "W_O": 1, "head.weight": 1},
}


def official(dataset: str, **kw):
    ratio = DOCUMENTED[dataset]["ratio"]
    return default_config(dataset, ratio=ratio, seed=0, quick=False, data_dir="/nonexistent", preset="official", **kw)


@pytest.mark.parametrize("dataset", sorted(DOCUMENTED))
def test_official_preset_equals_the_documented_settings(dataset):
    cfg = official(dataset)
    got = {k: getattr(cfg, k) for k in DOCUMENTED[dataset]}
    assert got == DOCUMENTED[dataset]
    assert cfg.preset == "official" and cfg.to_json_dict()["preset"] == "official"
    assert registry.get(dataset).official_differences       # what still differs is listed, per dataset
    # the QK rate of the official runs: 5e-5 x 20 = 1e-3 (SQuAD), 5e-5 x 30 = 1.5e-3 (HateXplain), 5e-4 x 100 (SVA)
    assert cfg.eta_qk == pytest.approx(DOCUMENTED[dataset]["lr_ov"] * DOCUMENTED[dataset]["ratio"])
    # d_model 300 in 6 heads: d_head 50 (SQuAD); the SQuAD notebooks' AC split
    if dataset == "squad":
        assert cfg.heads * cfg.d_head == 300 and OFFICIAL_AC_EDGES == (0.05, 0.1)


@pytest.mark.parametrize("dataset", sorted(PAPER_GROUPS))
def test_official_optimizer_groups_are_papers(dataset):
    """Every parameter PAPER.md names trains at PAPER.md's rate; the MLP in no group; weight decay as stated."""
    from validation.real.run import build_classifier
    from validation.real.training import build_optimizer

    cfg = official(dataset)
    torch.manual_seed(0)
    model = build_classifier(cfg, vocab_size=50, n_classes=3)
    rate = {id(p): g["lr"] for g in build_optimizer(model, cfg).param_groups for p in g["params"]}
    names = dict(model.named_parameters())
    for name, factor in PAPER_GROUPS[dataset].items():
        want = cfg.lr_ov * (cfg.ratio if factor == "ratio" else factor)
        assert rate[id(names[name])] == pytest.approx(want), name
    assert not any(id(p) in rate for p in model.mlp.parameters())
    # the unlisted LayerNorm (qkov's) and every other parameter is in a group; its place is a listed difference
    assert all(id(p) in rate for n, p in names.items() if not n.startswith("mlp."))
    assert any("LayerNorm" in d for d in registry.get(dataset).official_differences)
    assert any("best-validation" in d for d in registry.get(dataset).official_differences)


def test_no_clipping_where_paper_md_states_none(monkeypatch):
    from validation.real import training

    calls = []
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda *a, **k: calls.append(a))
    data = _tiny_classification()
    for cfg, clipped in ((official("hatexplain", epochs=1, batch_size=4), False),
                         (default_config("hatexplain", ratio=30.0, seed=0, quick=False, data_dir="/x", epochs=1,
                                         batch_size=4), True)):
        calls.clear()
        torch.manual_seed(0)
        from validation.real.run import build_classifier
        training.train(build_classifier(cfg, 50, 3), data, cfg, training.classification_loss, progress=False)
        assert bool(calls) == clipped
    with pytest.raises(ValueError, match="clip_norm: 0.5: does not apply with clip false"):
        official("hatexplain", clip_norm=0.5)


def _tiny_classification():
    from validation.real.batching import ClassTensors

    n, L = 8, 6
    g = torch.Generator().manual_seed(0)
    return ClassTensors(ids=torch.randint(1, 50, (n, L), generator=g), valid=torch.ones(n, L, dtype=torch.bool),
                        words=torch.ones(n, L, dtype=torch.bool), query_index=torch.full((n,), L - 1),
                        relevant=torch.zeros(n, L, dtype=torch.bool), annotated=torch.zeros(n, dtype=torch.bool),
                        labels=torch.randint(0, 3, (n,), generator=g))


def test_rates_on_top_of_the_preset_keep_its_position_factor():
    cfg = official("hatexplain", rates={"embedding": 1.0})
    assert cfg.rates == {"position": 1.0, "embedding": 1.0}
    from validation.real.official import HATEXPLAIN_OFFICIAL

    assert HATEXPLAIN_OFFICIAL["rates"] == {"position": 1.0}      # the registry's dict is not the run's


def test_the_paper_models_groups_are_as_before_issue_45():
    """--model paper (no preset): the distance embedding trains with the word embedding in one optimizer group at
    the embedding's factor (as before the position group existed), so its runs are unchanged."""
    from validation.real.run import build_classifier
    from validation.real.training import build_optimizer, named_parameter_groups

    for rates in (None, {"embedding": 30.0}):
        cfg = default_config("hatexplain", ratio=30.0, seed=0, quick=False, data_dir="/x", rates=rates)
        torch.manual_seed(0)
        model = build_classifier(cfg, 50, 3)
        groups = build_optimizer(model, cfg).param_groups
        assert [g["circuit"] for g in groups] == ["qk", "ov", "embedding", "other", "bias"]
        emb = next(g for g in groups if g["circuit"] == "embedding")
        assert [id(p) for p in emb["params"]] == [id(model.emb.weight), id(model.dist.weight)]
        assert emb["lr"] == pytest.approx(5e-5 * (30 if rates else 1))
        assert "position" in named_parameter_groups(model, [model.W_Q, model.W_K], [model.W_V, model.W_O])
        assert "qkv_bias" not in cfg.to_json_dict() and "clip" not in cfg.to_json_dict()


def test_warm_up_over_a_number_of_steps_then_cosine():
    from validation.real.training import lr_factor

    total = 11000   # 100 epochs x 110 steps
    assert lr_factor(0, total, "cosine", 0.0, 1000) == pytest.approx(1 / 1000)
    assert lr_factor(499, total, "cosine", 0.0, 1000) == pytest.approx(0.5)
    assert lr_factor(1000, total, "cosine", 0.0, 1000) == pytest.approx(1.0)
    assert lr_factor(6000, total, "cosine", 0.0, 1000) == pytest.approx(0.5)
    assert lr_factor(999, total, "cosine", 0.1) == pytest.approx(1000 / 1100)   # the share, when no steps given


def test_sized_preset_keys_are_unchanged():
    """A sized run's JSON (its run directory key) holds none of the preset fields, as before they existed."""
    d = default_config("squad", ratio=20.0, seed=0, quick=True, data_dir="/x").to_json_dict()
    assert not {"preset", "context_chars", "d_ff", "d_mlp", "dropout", "label_smoothing", "clip_norm",
                "warmup_steps", "frozen"} & set(d)


def test_official_preset_refuses_what_it_is_not():
    with pytest.raises(ValueError, match="preset: official: the official settings are the full-size paper model with sgd"):
        default_config("sva", ratio=100.0, seed=0, quick=False, data_dir="/x", preset="official", optimizer="adamw")
    with pytest.raises(ValueError, match="preset: official"):
        default_config("squad", ratio=20.0, seed=0, quick=True, data_dir="/x", preset="official")
    with pytest.raises(ValueError, match="preset: official"):
        default_config("hatexplain", ratio=30.0, seed=0, quick=False, data_dir="/x", model="small",
                       preset="official")


def hand_made_example() -> SquadExample:
    # 300 words "w000".."w299", each 4 characters and a space: word i spans characters [5i, 5i + 4)
    text = " ".join(f"w{i:03d}" for i in range(300))
    words, offsets = split_words(text)
    return SquadExample(uid="q1", article="a", question=("which", "word"), context=tuple(words),
                        offsets=tuple(offsets), context_text=text, spans=((150, 151),), answers=("w150 w151",),
                        sentence=(0, 299))


def test_context_is_cut_to_200_characters_either_side_of_the_answer():
    ex = hand_made_example()
    # answer characters [750, 759); the cut keeps the words lying wholly in [550, 959): w110 .. w191
    vocab = Vocab.train([ex.context, ex.question], min_frequency=1, max_size=1000)
    t = encode_decoder([ex], vocab, W=160, Q=4, A=3, context_chars=200)
    window = [vocab.tokenizer.id_to_token(int(i)) for i, v in zip(t.ids[0, :160], t.valid[0, :160]) if v]
    assert window == [f"w{i:03d}" for i in range(110, 192)]
    assert int(t.start[0]) == 110
    # the answer's context positions are marked where w150, w151 sit in the window
    assert t.answer_ctx[0].nonzero()[:, 0].tolist() == [40, 41]
    # a slot shorter than the cut keeps the answer (the W words nearest the cut's start that hold it)
    t2 = encode_decoder([ex], vocab, W=32, Q=4, A=3, context_chars=200)
    assert int(t2.start[0]) == 120 and t2.answer_ctx[0].nonzero()[:, 0].tolist() == [30, 31]


def test_label_smoothing_uses_the_whole_pointer_generator_distribution():
    torch.manual_seed(0)
    ex = hand_made_example()
    vocab = Vocab.train([ex.context, ex.question], min_frequency=1, max_size=1000)
    b = encode_decoder([ex, dataclasses.replace(ex, uid="q2")], vocab, W=24, Q=4, A=3, context_chars=40)
    model = DecoderLM(len(vocab), d=16, layers=2, heads=2, d_head=8, max_T=b.ids.shape[1] + 5, eos_id=vocab.cls)
    model.eval()
    plain = decoder_loss(model, b)
    # epsilon -> 0 gives the plain loss: the (n, V) distribution matches the target log-probabilities
    assert float(decoder_loss(model, b, label_smoothing=1e-9).detach()) == pytest.approx(float(plain.detach()), rel=1e-6)
    eps = 0.1
    h, att = model(b.ids, b.valid)
    sel = b.target >= 0
    rows = att[-1].mean(1)[sel]
    p = model.next_word_probs(h[sel], rows, b.ids[:, None, :].expand(-1, b.ids.shape[1], -1)[sel])
    assert torch.allclose(p.sum(1), torch.ones(len(p)), atol=1e-5)          # a distribution per position
    uniform_term = -torch.log(p + 1e-12).mean(1).mean()
    expected = (1 - eps) * plain + eps * uniform_term
    assert float(decoder_loss(model, b, label_smoothing=eps)) == pytest.approx(float(expected), rel=1e-5)


def test_hatexplain_official_mlp_is_in_no_optimizer_group_and_weight_decay_is_1e_3():
    from validation.real.run import build_classifier
    from validation.real.training import build_optimizer

    cfg = official("hatexplain")
    torch.manual_seed(0)
    model = build_classifier(cfg, vocab_size=50, n_classes=3)
    opt = build_optimizer(model, cfg)
    mlp = {id(p) for p in model.mlp.parameters()}
    in_groups = [id(p) for g in opt.param_groups for p in g["params"]]
    assert mlp and not mlp & set(in_groups)
    assert sorted(in_groups) == sorted(id(p) for p in model.parameters() if id(p) not in mlp)
    assert {g["weight_decay"] for g in opt.param_groups} == {1e-3}
    assert {g["circuit"]: g["lr"] for g in opt.param_groups}["embedding"] == pytest.approx(30 * 5e-5)
    # one step: the MLP stays at its initialisation, the attention moves
    before = [p.detach().clone() for p in model.mlp.parameters()]
    wq = model.W_Q.detach().clone()
    ids = torch.randint(1, 50, (4, 6))
    logits, _ = model(ids, torch.ones(4, 6, dtype=torch.bool), torch.full((4,), 5))
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2, 0])).backward()
    opt.step()
    assert all(torch.equal(a, p) for a, p in zip(before, model.mlp.parameters()))
    assert not torch.equal(wq, model.W_Q)


def test_the_grouping_key_separates_sized_from_official_runs(tmp_path):
    def run(preset):
        kw = {"preset": "official"} if preset == "official" else {}
        cfg = default_config("hatexplain", ratio=30.0, seed=0, quick=False, data_dir=str(tmp_path), **kw)
        return {"dir": tmp_path / preset, "config": cfg.to_json_dict(),
                "metrics": {"accuracy": 0.6, "relevant_mass_mean": 0.4}, "arrays": {}}

    grouped, conflicts = group_runs([run("sized"), run("official")])
    assert len(grouped) == 2 and not any(conflicts.values())
    assert any(name.endswith("/preset=official") for name in grouped)
    assert RealSweep(datasets=("squad",), preset="official").overrides()["preset"] == "official"
    assert "preset" not in RealSweep(datasets=("squad",)).overrides()


@pytest.mark.parametrize("args, line", [
    (["--dataset", "squad", "--quick", "--preset", "official"], "preset: official: the official settings are"),
    (["--dataset", "sva", "--preset", "official", "--optimizer", "adamw"], "preset: official: the official settings are"),
    (["--dataset", "hatexplain", "--preset", "bogus"], "preset: bogus: must be one of sized, official"),
    (["--dataset", "hatexplain", "--preset", "official", "--stacked"], "stacked")])
def test_cli_bad_preset_exit_2_nothing_written(tmp_path, capsys, args, line):
    from qkov.cli.main import cli, run_cli

    out = tmp_path / "o"
    rc = run_cli(cli, ["validate", "real", "--data-dir", str(tmp_path), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert rc == 2 and line in err and err.count("\n") == 1 and not out.exists()


def test_stacked_training_refuses_what_its_update_does_not_do():
    from validation.real.stacked import check_stackable

    cfg = official("hatexplain")
    with pytest.raises(ValueError, match="stacked runs: clip: False: not offered"):
        check_stackable([cfg, cfg], [], [])


def test_the_report_shows_an_official_groups_differences_beside_its_verdict():
    from qkov.report.real_table import setting_text

    text = setting_text({"config": official("hatexplain").to_json_dict()})
    assert "preset official" in text and "differs from the paper's settings" in text
    assert all(d in text for d in registry.get("hatexplain").official_differences)
    assert "differs" not in setting_text({"config": default_config("hatexplain", ratio=30.0, seed=0, quick=False,
                                                                   data_dir="/x").to_json_dict()})
