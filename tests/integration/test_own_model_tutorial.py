"""The tutorial's code blocks run as written, in order, and print what the page says."""

import re

import pytest
import torch

from tests.docs_pages import python_blocks, run_page
from tests.paths import DOCS

TUTORIAL = DOCS / "tutorials" / "own-model.md"


def test_tutorial_code_runs(capsys, tmp_path, monkeypatch):
    pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")
    assert len(python_blocks(TUTORIAL.read_text())) == 8
    monkeypatch.chdir(tmp_path)  # whatever the page writes stays out of the checkout
    namespace = run_page(TUTORIAL)
    out = capsys.readouterr().out
    # GPT-2: 2 layers x (q, k parts of c_attn weight and bias) at 30 x 5e-5; OV = v parts + c_proj
    assert "('qk', 8, 0.0015" in out and "('ov', 8, 5e-05)" in out
    assert "q columns [0:32] (32, 96)" in out and "v columns [64:96] (32, 96)" in out
    # Llama with the embedding in the QK group: 2 x (q_proj, k_proj) + embed_tokens
    assert re.search(r"\('qk', 5, 0\.00(3|29999)", out) and "('ov', 4, 0.0003)" in out
    assert "(2, 4, 4, 12, 12)" in out and "(1, 4, 1, 12, 12)" in out and "(2, 2, 4, 7, 7)" in out
    assert re.search(r"rollout mass 0\.\d{3}, AC \d\.\d\d", out)
    # the declared custom layout: q, k parts of wvqk (weight, bias) in QK; its v part and wo in OV
    assert "[('ov', 4), ('qk', 4), ('other', 2)]" in out
    # Qwen3 with whole_circuit: the q norm's line, and its q/k norms in QK
    assert re.search(r"0\.003\s+qk\s+model\.layers\.0\.self_attn\.q_norm\.weight\s+all \(acts only on the scores\)", out)
    assert "[('ov', 4), ('qk', 8), ('other', 13)]" in out
    from validation.attention_layouts import AttentionLayout, UnknownAttentionLayout, register_attention_layout

    cls = namespace["MyAttention"]
    register_attention_layout(cls, AttentionLayout(qkv="wvqk", o="wo", order="qkv"))
    try:  # the refusal the page quotes
        with pytest.raises(UnknownAttentionLayout, match=re.escape(
                "0 (MyAttention): wvqk.weight: the forward puts rows [16:48] of 48 in the attention scores and "
                "[0:16] only in the output; no known layout matches")):
            namespace["qkov"].param_groups(torch.nn.Sequential(cls()), 1e-3, 10.0,
                                           example_inputs=torch.randn(2, 5, 16))
    finally:
        register_attention_layout(cls, None)
