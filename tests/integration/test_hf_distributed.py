"""The split and the groups across 2 processes (gloo, CPU): DDP and FSDP(use_orig_params=True).

Known answer: AdamW's first step moves every weight entry by ``lr`` (gradients >> eps), so the
per-entry RMS update of W_Q/W_K over W_V/W_O is the rate ratio, 10, on each rank (1% tolerance
for entries whose gradient is near eps). The rank-0 checkpoint loads in a plain GPT-2 and gives
the trained model's logits (float32, atol 1e-6).
"""

import json
import socket

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(240)
def test_ddp_and_fsdp_keep_the_ratio_on_both_ranks_and_rank0_checkpoints_reload(tmp_path):
    import torch.distributed as dist
    import torch.multiprocessing as mp

    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo not available")
    from tests.integration._distributed_worker import run, tiny_gpt2

    mp.spawn(run, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r, res in enumerate(ranks):
        for mode in ("ddp", "fsdp"):
            assert len(res[mode]) == 2, (r, mode)  # 2 layers
            for ratio in res[mode]:
                assert ratio == pytest.approx(10.0, rel=0.01), (r, mode, res[mode])
        msg = res["refusal"]
        assert msg is not None and "\n" not in msg and "use_orig_params=True" in msg
        late = res["unsplit"]
        assert late is not None and "\n" not in late and "not split before wrapping" in late
    for mode in ("ddp", "fsdp"):
        saved = torch.load(tmp_path / f"{mode}.pt")
        plain = tiny_gpt2().eval()
        assert "transformer.h.0.attn.c_attn.weight" in saved["state_dict"]
        plain.load_state_dict(saved["state_dict"])
        with torch.no_grad():
            torch.testing.assert_close(plain(input_ids=saved["probe"]).logits, saved["logits"], rtol=0, atol=1e-6)
        assert not torch.equal(saved["state_dict"]["transformer.h.0.attn.c_attn.weight"],
                               tiny_gpt2().state_dict()["transformer.h.0.attn.c_attn.weight"])  # it trained
