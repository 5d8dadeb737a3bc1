"""One rank of tests/integration/test_hf_fsdp2.py (spawned; importable by module name)."""

import json
import os

import torch
import torch.distributed as dist

V = 40


def tiny(kind: str):
    """The same tiny model on every rank: GPT-2 (fused ``c_attn``) or Qwen2 (Llama-like, separate q/k/v/o)."""
    import transformers

    torch.manual_seed(0)
    if kind == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_layer=2, n_embd=16, n_head=2, vocab_size=V, n_positions=16, bos_token_id=0, eos_token_id=0,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, intermediate_size=32,
        vocab_size=V, max_position_embeddings=16, bos_token_id=0, eos_token_id=0))


def shard(model):
    """FSDP2 as torch and accelerate recommend: ``fully_shard`` each block, then the root."""
    from torch.distributed.fsdp import fully_shard

    inner = model.transformer.h if hasattr(model, "transformer") else model.model.layers
    for block in inner:
        fully_shard(block)
    fully_shard(model)
    return model


def one_line(fn):
    try:
        fn()
    except (RuntimeError, ValueError) as e:
        return str(e)
    return None


def role_rms(model, before) -> dict:
    """RMS update per entry of the W_Q, W_K, W_V weights (split parts included) since ``before``, over all layers.

    Sums of squares of the sharded DTensors are summed over the shards (``whole``: collective)."""
    import math

    from validation.distributed import whole
    from validation.user_models import plan_qk_ov

    params = dict(model.named_parameters())
    acc = {r: [0.0, 0] for r in "QKV"}
    for row in plan_qk_ov(model, verify=False):
        role = row.role[:1]
        if role in acc and row.name in params and params[row.name].dim() == 2:
            p = params[row.name].detach()
            acc[role][0] += float(whole((p - before[row.name]).double().pow(2).sum()))
            acc[role][1] += p.numel()
    return {r: math.sqrt(sq / n) for r, (sq, n) in acc.items()}


def run(rank: int, world: int, port: int, out: str) -> None:
    import qkov
    from validation.distributed import plain_state_dict
    from validation.update_monitor import UpdateMonitor

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    ids = torch.randint(0, V, (2, 8), generator=torch.Generator().manual_seed(rank))  # each rank its own batch
    probe = torch.randint(0, V, (1, 8), generator=torch.Generator().manual_seed(99))
    results: dict = {}
    for kind in ("gpt2", "qwen2"):
        res = results[kind] = {}
        # the order that works for DDP/FSDP1: groups from the plain model, shard, AdamW on those groups
        model = tiny(kind)
        groups = qkov.param_groups(model, 1e-3, 10.0)
        shard(model)
        opt = torch.optim.AdamW(groups, weight_decay=0.0)
        model(input_ids=ids, labels=ids).loss.backward()
        res["documented_order"] = one_line(opt.step)
        # FSDP2's order: split the plain model, shard, then the groups from the sharded model
        model = tiny(kind)
        qkov.param_groups(model, 1e-3, 10.0)
        shard(model)
        groups = qkov.param_groups(model, 1e-3, 10.0)
        res["names"] = [g["name"] for g in groups]
        live = {id(p) for p in model.parameters()}
        res["held"] = [sum(id(p) in live for p in g["params"]) for g in groups]
        res["live"] = len(live)
        opt = torch.optim.AdamW(groups, weight_decay=0.0)
        monitor = UpdateMonitor(model)
        for step in (1, 2):
            opt.zero_grad()
            model(input_ids=ids, labels=ids).loss.backward()
            before = {n: p.detach().clone() for n, p in model.named_parameters()}
            with monitor.step(step):
                opt.step()
            if step == 1:
                rms = role_rms(model, before)
                res["q_over_v"], res["k_over_v"] = rms["Q"] / rms["V"], rms["K"] / rms["V"]
        res["ratio"] = monitor.arrays()["ratio"][0].tolist()  # step 1, per layer
        sd = plain_state_dict(model)  # collective
        model.eval()
        with torch.no_grad():
            logits = model(input_ids=probe).logits  # collective
        if rank == 0:
            torch.save({"state_dict": sd, "logits": logits, "probe": probe}, os.path.join(out, f"{kind}.pt"))
        dist.barrier()
    unsplit = shard(tiny("gpt2"))  # sharded before the split: refused
    results["unsplit"] = one_line(lambda: qkov.param_groups(unsplit, 1e-3, 10.0))
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    dist.barrier()
    dist.destroy_process_group()
