"""FSDP2 (``fully_shard``) across 2 processes (gloo, CPU): GPT-2 (fused ``c_attn``) and Qwen2 (Llama-like).

Known answer: AdamW's first step moves every weight entry by about ``lr`` (gradients >> eps), so the per-entry
RMS update of W_Q/W_K over W_V/W_O (:class:`validation.update_monitor.UpdateMonitor`, on the sharded DTensor
Parameters), and of W_Q over W_V and W_K over W_V separately, is the rate ratio, 10, on each rank (1% tolerance for entries whose gradient is near eps). The
groups built before ``fully_shard`` hold Parameters FSDP2 replaced: their optimizer's first ``step()`` is refused
in one line, before any update. The rank-0 checkpoint (gathered, parts folded back) loads in a plain model and
gives the sharded model's logits (float32, atol 1e-6). Measured: 51-62 s wall on the shared 2-core machine under
load (about 20 s of CPU), most of it importing transformers in each process.
"""

import json
import socket

import pytest
import torch

pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")
fsdp = pytest.importorskip("torch.distributed.fsdp")

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(300)
def test_fsdp2_groups_from_the_sharded_model_give_the_ratio_on_both_ranks(tmp_path):
    import torch.distributed as dist
    import torch.multiprocessing as mp

    if not (dist.is_available() and dist.is_gloo_available() and hasattr(fsdp, "fully_shard")):
        pytest.skip("torch.distributed with gloo and fully_shard not available")
    from tests.integration._fsdp2_worker import run, tiny

    mp.spawn(run, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r, res in enumerate(ranks):
        for kind in ("gpt2", "qwen2"):
            got = res[kind]
            msg = got["documented_order"]
            assert msg is not None and "\n" not in msg and "fully_shard" in msg and "no longer in the model" in msg
            assert got["names"] == ["ov", "qk", "other"]
            assert sum(got["held"]) == got["live"]  # every live (sharded) Parameter is in a group, once
            assert len(got["ratio"]) == 2, (r, kind)  # 2 layers
            for ratio in got["ratio"]:
                assert ratio == pytest.approx(10.0, rel=0.01), (r, kind, got["ratio"])
            assert got["q_over_v"] == pytest.approx(10.0, rel=0.01), (r, kind)  # W_Q and W_K each, not pooled
            assert got["k_over_v"] == pytest.approx(10.0, rel=0.01), (r, kind)
        late = res["unsplit"]
        assert late is not None and "\n" not in late and "not split before wrapping" in late
    for kind in ("gpt2", "qwen2"):
        saved = torch.load(tmp_path / f"{kind}.pt")
        plain = tiny(kind).eval()
        plain.load_state_dict(saved["state_dict"])
        with torch.no_grad():
            torch.testing.assert_close(plain(input_ids=saved["probe"]).logits, saved["logits"], rtol=0, atol=1e-6)
    assert "transformer.h.0.attn.c_attn.weight" in torch.load(tmp_path / "gpt2.pt")["state_dict"]
