r"""What qkov checks when any torch optimizer steps: the groups it built are the ones being stepped.

One global optimizer step pre-hook (:func:`torch.optim.optimizer.register_optimizer_step_pre_hook`), registered
the first time qkov splits a model or builds groups, holds an optimizer against what qkov recorded:

* **retired** Parameters: a split (or :func:`~validation.user_models.merge_all`) took a fused tensor out of its
  model; an optimizer still holding it would move nothing: ``RuntimeError`` at its first ``step()``, before any
  update (one line naming the fix);
* **replaced** Parameters: a W_Q/W_K/W_V/W_O Parameter that :func:`~validation.user_models.param_groups` put in a
  group is no longer in the model it came from (FSDP2's ``fully_shard`` replaces every Parameter by a sharded
  ``DTensor`` one): ``RuntimeError`` at the first ``step()``, before any update;
* **no QK group**: the optimizer holds W_Q/W_K and W_V/W_O Parameters of a model qkov grouped (at a ratio other
  than 1) in one and the same group, so they share one rate: an optimizer built before the groups, or from
  ``model.parameters()`` after them (groups built and never used): a ``UserWarning``, once per optimizer.

Cost: an optimizer is checked again only when something changed since its last check (a split, a merge, new
groups, or the number of its groups or Parameters); otherwise the hook is two dictionary look-ups per step.
"""

from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.weak import WeakIdKeyDictionary


@dataclass(frozen=True)
class GroupedParam:
    """What :func:`~validation.user_models.param_groups` recorded about one Parameter it put in a group."""

    circuit: str
    ratio: float
    name: str
    model: weakref.ref


_REPLACED: dict[int, weakref.ref] = {}
"""Parameters a split (or merge) took out of a model: an optimizer still holding one drives nothing."""
_GROUPED: Any = WeakIdKeyDictionary()
"""Parameter -> :class:`GroupedParam`, for every Parameter of every group qkov built (weakly held)."""
_CHECKED: Any = weakref.WeakKeyDictionary()
"""Optimizer -> the state key it was last checked at (see :func:`_key`)."""
_GENERATION = [0]
_HOOKED = [False]


def _ensure_hook() -> None:
    if not _HOOKED[0]:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        register_optimizer_step_pre_hook(check_optimizer)
        _HOOKED[0] = True


def retire(p: Any) -> None:
    """Remember ``p`` as taken out of its model (an optimizer holding it is refused at its next step)."""
    if not isinstance(p, nn.Parameter):
        return
    _ensure_hook()
    key = id(p)

    def forget(_ref: weakref.ref) -> None:  # p was garbage-collected: its id may be reused
        _REPLACED.pop(key, None)

    _REPLACED[key] = weakref.ref(p, forget)
    _GENERATION[0] += 1


def retired(p: torch.Tensor) -> bool:
    """Whether ``p`` itself (not a new tensor at the same address) was taken out of its model by qkov."""
    ref = _REPLACED.get(id(p))
    return ref is not None and ref() is p


def record_groups(model: nn.Module, groups: list[dict[str, Any]], ratio: float) -> None:
    """Record each Parameter of ``groups`` (built from ``model`` at ``ratio``) for :func:`check_optimizer`."""
    _ensure_hook()
    ref = weakref.ref(model)
    names = {id(p): n for n, p in model.named_parameters()}
    for g in groups:
        for p in g["params"]:
            _GROUPED[p] = GroupedParam(str(g.get("circuit", "other")), float(ratio), names.get(id(p), "?"), ref)
    _GENERATION[0] += 1


def _key(optimizer: torch.optim.Optimizer) -> tuple[int, int, int]:
    return (_GENERATION[0], len(optimizer.param_groups), sum(len(g["params"]) for g in optimizer.param_groups))


def check_optimizer(optimizer: torch.optim.Optimizer, _args: Any = (), _kwargs: Any = None) -> None:
    """Optimizer step pre-hook: refuse retired or replaced circuit Parameters, warn on a missing QK group."""
    key = _key(optimizer)
    try:
        if _CHECKED.get(optimizer) == key:
            return
    except TypeError:  # pragma: no cover - an optimizer that cannot be weakly referenced: check every step
        pass
    _check_retired(optimizer)
    _check_replaced(optimizer)
    _check_shared_group(optimizer)
    try:
        _CHECKED[optimizer] = key
    except TypeError:  # pragma: no cover
        pass


def _check_retired(optimizer: torch.optim.Optimizer) -> None:
    if not _REPLACED:
        return
    for g in optimizer.param_groups:
        for p in g["params"]:
            if retired(p):
                raise RuntimeError(
                    f"qkov: this {type(optimizer).__name__} holds a tensor of shape {tuple(p.shape)} that qkov took "
                    "out of the model (the split of a fused q/k/v projection, or merge_all): it was built before the "
                    "split and would never move those weights; build it after the split, from the groups "
                    "qkov.param_groups(model, lr, ratio) returns")


def _check_replaced(optimizer: torch.optim.Optimizer) -> None:
    """A W_Q/W_K/W_V/W_O Parameter qkov grouped that its model no longer holds (FSDP2 replaced it)."""
    live: dict[int, set[int] | None] = {}
    stale: list[GroupedParam] = []
    for g in optimizer.param_groups:
        for p in g["params"]:
            rec = _GROUPED.get(p)
            if rec is None or rec.circuit not in ("qk", "ov"):
                continue
            model = rec.model()
            if model is None:
                continue
            ids = live.get(id(model))
            if ids is None:
                ids = live[id(model)] = {id(q) for q in model.parameters()}
            if id(p) not in ids:
                stale.append(rec)
    if not stale:
        return
    from validation.distributed import is_fsdp2

    model = stale[0].model()
    sharded = model is not None and is_fsdp2(model)
    why = ("fully_shard (FSDP2) replaced every Parameter of the model by a sharded DTensor Parameter"
           if sharded else "the model's Parameters were replaced after the groups were built")
    raise RuntimeError(
        f"qkov: this {type(optimizer).__name__} holds {len(stale)} W_Q/W_K/W_V/W_O Parameters (e.g. "
        f"{stale[0].name}) that are no longer in the model ({why}): it would move nothing; build the optimizer "
        "from qkov.param_groups(model, lr, ratio) called on the model as it is now (after fully_shard; see "
        "docs/tutorials/distributed.md)")


def _check_shared_group(optimizer: torch.optim.Optimizer) -> None:
    """W_Q/W_K and W_V/W_O of a model grouped at ratio != 1 held in one group: they move at one rate."""
    for g in optimizer.param_groups:
        qk = ov = 0
        ratio = 1.0
        for p in g["params"]:
            rec = _GROUPED.get(p)
            if rec is None:
                continue
            qk += rec.circuit == "qk"
            ov += rec.circuit == "ov"
            ratio = rec.ratio
        if qk and ov and ratio != 1.0:
            warnings.warn(
                f"qkov: this {type(optimizer).__name__} holds {qk} W_Q/W_K and {ov} W_V/W_O Parameters in one group "
                f"(lr {g.get('lr')}), so they train at one rate, not at the ratio {ratio:g} qkov.param_groups was "
                "asked for: it was built before the groups, or from model.parameters(); build it from the groups "
                "qkov.param_groups(model, lr, ratio) returns", UserWarning, stacklevel=4)
            return
