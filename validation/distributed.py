r"""The QK/OV ratio across processes: DDP, FSDP (``use_orig_params=True``), FSDP2 (``fully_shard``), accelerate.

The rates live in optimizer groups, one per circuit; what a wrapper must keep is each split
part (W_Q, W_K, W_V, W_O) as its own ``Parameter``. The order that works everywhere:

1. split on the plain model: ``groups = qkov.param_groups(model, lr, ratio)`` (fused tensors
   are re-parametrized in place, the same on every rank since each builds the same model);
2. wrap: ``DistributedDataParallel(model)`` or
   ``FullyShardedDataParallel(model, use_orig_params=True)`` (both keep the Parameter objects;
   FSDP turns them into views of its shards), or shard with ``fully_shard`` (FSDP2), which replaces
   every Parameter by a sharded ``DTensor`` Parameter of the same name;
3. build the optimizer on those groups, or on ``qkov.param_groups(wrapped, ...)``, which re-reads
   the split made in step 1 without running the model (under FSDP it is collective, so every rank
   calls it). Under FSDP2 the second call is required: an optimizer on the groups of step 1 holds
   replaced Parameters and is refused at its first step (:mod:`validation.step_checks`).

FSDP with ``use_orig_params=False`` flattens every tensor into one ``FlatParameter`` that no
group can split: :func:`validation.user_models.param_groups` refuses it in one line, as it
refuses a fused projection first split after wrapping or sharding. Under DDP, gradients are averaged
before each rank's (identical) AdamW step, so the rates, hence Q/V = ratio, are the same on every rank.

:func:`full_params` gives the whole tensors on every rank (FSDP's ``summon_full_params``; a no-op
otherwise) and :func:`plain_state_dict` the checkpoint a plain model loads: the model's own keys
(``c_attn.weight`` ..., :mod:`validation.user_models` folds the parts back on save; under FSDP2 the
shards are gathered first), to write from rank 0. See ``docs/tutorials/distributed.md`` for recipes
that run on CPU with ``gloo``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch import nn


def fsdp1_class() -> Any:
    """``FullyShardedDataParallel`` (FSDP1, the wrapper class), ``None`` in a torch without it."""
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
    except ImportError:  # pragma: no cover - torch without distributed
        return None
    return FullyShardedDataParallel


def fsdp1_root(model: nn.Module) -> Any:
    """The outermost FSDP1 wrapper in ``model`` (``None`` if none)."""
    cls = fsdp1_class()
    return next((m for m in model.modules() if isinstance(m, cls)), None) if cls is not None else None


def fsdp2_class() -> Any:
    """``torch.distributed.fsdp.FSDPModule`` (the class ``fully_shard`` mixes into a module), ``None`` without it."""
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # pragma: no cover - torch without distributed, or older than 2.6
        return None
    return FSDPModule


def is_fsdp2(model: nn.Module) -> bool:
    """Whether ``fully_shard`` (FSDP2) has sharded ``model`` or one of its submodules."""
    cls = fsdp2_class()
    return cls is not None and any(isinstance(m, cls) for m in model.modules())


def is_dtensor(t: Any) -> bool:
    """Whether ``t`` is a ``torch.distributed.tensor.DTensor`` (FSDP2's sharded Parameters are)."""
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # pragma: no cover - torch without distributed
        return False
    return isinstance(t, DTensor)


def whole(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a ``DTensor`` (collective: every rank of its mesh calls it), else ``t`` itself."""
    return t.full_tensor() if is_dtensor(t) else t  # type: ignore[attr-defined]


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside a DDP / FSDP / accelerate wrapper (``model`` itself when unwrapped)."""
    seen = 0
    while hasattr(model, "module") and isinstance(model.module, nn.Module) and seen < 8:
        model, seen = model.module, seen + 1
    return model


@contextlib.contextmanager
def full_params(model: nn.Module) -> Iterator[nn.Module]:
    """Inside: every parameter whole on every rank (FSDP), the unwrapped module is yielded.

    Collective under FSDP: call it on every rank. Changes made inside are not written back.
    """
    root = fsdp1_root(model)
    if root is None:
        yield unwrap(model)
        return
    with root.summon_full_params(root, writeback=False):
        yield unwrap(model)


def plain_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """A CPU state dict with the plain model's keys, from a (wrapped) split model; collective under FSDP.

    Save it from rank 0 (``if dist.get_rank() == 0: torch.save(sd, path)``); it loads with
    ``load_state_dict`` into a plain model built from the same config, split or not. Under FSDP2
    (``fully_shard``) each sharded tensor is gathered (:func:`whole`) and the split parts are folded back.
    """
    if is_fsdp2(model):
        from validation.user_models import fold_split_parts

        sd = {k: whole(v.detach()).to("cpu", copy=True) for k, v in model.state_dict().items()}
        return fold_split_parts(model, sd)
    with full_params(model) as inner:
        return {k: v.detach().to("cpu", copy=True) for k, v in inner.state_dict().items()}
