"""One rank of tests/integration/test_hf_distributed.py (spawned; importable by module name)."""

import json
import os

import torch
import torch.distributed as dist

V = 40


def tiny_gpt2():
    import transformers

    torch.manual_seed(0)  # the same model on every rank
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=2, n_embd=16, n_head=2, vocab_size=V, n_positions=16, bos_token_id=0, eos_token_id=0,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))


def run(rank: int, world: int, port: int, out: str) -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.nn.parallel import DistributedDataParallel as DDP

    from theory.errors import InputError
    from validation.distributed import full_params, plain_state_dict
    from validation.update_monitor import UpdateMonitor
    from validation.user_models import param_groups

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    results: dict = {}
    ids = torch.randint(0, V, (2, 8), generator=torch.Generator().manual_seed(rank))  # each rank its own batch
    probe = torch.randint(0, V, (1, 8), generator=torch.Generator().manual_seed(99))
    for mode in ("ddp", "fsdp"):
        model = tiny_gpt2()
        groups = param_groups(model, 1e-3, 10.0)  # split the plain model
        if mode == "ddp":
            wrapped = DDP(model)
        else:
            wrapped = FSDP(model, use_orig_params=True, device_id=torch.device("cpu"))
            groups = param_groups(wrapped, 1e-3, 10.0)  # re-reads the split (collective)
        opt = torch.optim.AdamW(groups, weight_decay=0.0)
        with full_params(wrapped) as inner:
            mon = UpdateMonitor(inner)
        for step in (1, 2):
            opt.zero_grad()
            wrapped(input_ids=ids, labels=ids).loss.backward()
            with full_params(wrapped):
                mon.before()
            opt.step()
            with full_params(wrapped):
                mon.after(step)
        results[mode] = mon.arrays()["ratio"][0].tolist()  # step 1, per layer
        sd = plain_state_dict(wrapped)
        with full_params(wrapped) as inner:
            inner.eval()
            with torch.no_grad():
                ref = inner(input_ids=probe).logits
        if rank == 0:
            torch.save({"state_dict": sd, "logits": ref, "probe": probe}, os.path.join(out, f"{mode}.pt"))
        dist.barrier()
    flat = tiny_gpt2()
    param_groups(flat, 1e-3, 10.0)
    flat = FSDP(flat, use_orig_params=False, device_id=torch.device("cpu"))
    try:
        param_groups(flat, 1e-3, 10.0)
        results["refusal"] = None
    except InputError as e:
        results["refusal"] = str(e)
    late = DDP(tiny_gpt2())  # wrapped before the split: refused, the parts would not be synchronised
    try:
        param_groups(late, 1e-3, 10.0)
        results["unsplit"] = None
    except InputError as e:
        results["unsplit"] = str(e)
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()
