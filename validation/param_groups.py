r"""Per-circuit learning rates for any torch optimizer.

The only intervention qkov studies is the ratio :math:`\eta_{QK}/\eta_{OV}`: the QK
parameters get ``ratio * lr_ov``, the OV parameters ``lr_ov``, and every other
parameter a fixed ``lr_other`` (by default ``lr_ov``), unchanged across a sweep.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import nn


def circuit_param_groups(qk: Iterable[nn.Parameter], ov: Iterable[nn.Parameter],
                         other: Iterable[nn.Parameter] = (), *, lr_ov: float, ratio: float,
                         lr_other: float | None = None, **group_options: Any) -> list[dict[str, Any]]:
    r"""Optimizer parameter groups with :math:`\eta_{QK} = \text{ratio}\cdot\eta_{OV}`, the base (OV) rate first.

    In the order ``"ov"`` (at ``lr_ov``), ``"qk"`` (at ``ratio * lr_ov``), ``"other"`` (at ``lr_other``, default
    ``lr_ov``); empty groups are left out. Each group carries ``"name"`` and ``"circuit"`` (both the circuit:
    ``"name"`` is what Lightning's ``LearningRateMonitor`` labels a group with; torch optimizers ignore unknown
    keys), so the first group's rate, which ``transformers.Trainer`` logs as ``learning_rate`` and schedulers
    report first, is the OV rate. A parameter listed twice raises ``ValueError``.
    """
    if not (ratio > 0 and lr_ov > 0):
        raise ValueError(f"ratio={ratio!r}, lr_ov={lr_ov!r}: both must be > 0")
    groups = []
    seen: set[int] = set()
    for name, params, lr in (("ov", ov, lr_ov), ("qk", qk, ratio * lr_ov),
                             ("other", other, lr_ov if lr_other is None else lr_other)):
        ps = [p for p in params if p.requires_grad]
        for p in ps:
            if id(p) in seen:
                raise ValueError(f"a parameter appears in more than one circuit ({name})")
            seen.add(id(p))
        if ps:
            groups.append({"params": ps, "lr": lr, "name": name, "circuit": name, **group_options})
    return groups


def model_param_groups(model: nn.Module, *, lr_ov: float, ratio: float, lr_other: float | None = None,
                       **group_options: Any) -> list[dict[str, Any]]:
    """Parameter groups for a module exposing ``qk_parameters()`` and ``ov_parameters()``.

    Parameters of ``model`` in neither circuit (embeddings, heads, norms) form the
    ``"other"`` group at ``lr_other``.
    """
    qk_parameters = getattr(model, "qk_parameters", None)
    ov_parameters = getattr(model, "ov_parameters", None)
    if not (callable(qk_parameters) and callable(ov_parameters)):
        raise TypeError(f"{type(model).__name__} has no qk_parameters() and ov_parameters() "
                        "(use qkov.param_groups for other models)")
    qk = list(qk_parameters())
    ov = list(ov_parameters())
    ids = {id(p) for p in qk + ov}
    other = [p for p in model.parameters() if id(p) not in ids]
    return circuit_param_groups(qk, ov, other, lr_ov=lr_ov, ratio=ratio, lr_other=lr_other, **group_options)


def make_optimizer(name: str, groups: list[dict[str, Any]], **kwargs: Any) -> torch.optim.Optimizer:
    """``"gd"``/``"sgd"`` -> :class:`torch.optim.SGD`, ``"adamw"`` -> :class:`torch.optim.AdamW`."""
    if name in ("gd", "sgd"):
        return torch.optim.SGD(groups, **kwargs)
    if name == "adamw":
        return torch.optim.AdamW(groups, **kwargs)
    raise ValueError(f"optimizer {name!r}: must be one of gd, sgd, adamw")
