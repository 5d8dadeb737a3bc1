r"""Check where W_Q, W_K, W_V and W_O live by running the module's own forward.

Guessing a fused layout from a name is how rates go silently wrong (GPT-BigCode with
``multi_query=False`` interleaves q, k, v per head in ``c_attn``; CodeGen orders ``qkv_proj``
as q, v, k). :func:`probe_sites` runs the model once on example inputs and, inside each
attention module, records

* the *score side*: the softmax output :math:`P` (eager kernels) or the ``query`` and ``key``
  arguments of ``scaled_dot_product_attention`` (SDPA kernels), and
* the *value side*: the module's output :math:`Y` (its first tensor).

For a parameter :math:`W` of the module, rows :math:`i` (along the fused axis) with
:math:`\partial \langle R, P\rangle / \partial W_i \ne 0` for a random :math:`R` move the
attention scores: they are query or key rows. Rows with a zero score gradient but
:math:`\partial \langle R', Y\rangle / \partial W_i \ne 0` move only what is averaged: value
(or output) rows. A gradient is an infinitesimal perturbation of one row, so one backward
pass tests every row at once. Only the module's first call is recorded (ALBERT shares one
module across layers), so :math:`P` depends on :math:`W` only through this call.

The probe separates the QK circuit from the OV circuit, which is all the learning rates need;
it does not tell q rows from k rows (both are at ``ratio * lr``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

REL_TOL = 1e-6
"""A row "moves" a side when its largest gradient entry exceeds ``REL_TOL`` x the tensor's largest.

Structural zeros are exact (the gradient of an unused slice is a zero block); genuine q, k and
v rows of a random-input probe have gradients within a few orders of magnitude of each other.
"""


@dataclass
class SiteRecord:
    """What one attention module computed on its first call."""

    scores: list[torch.Tensor] = field(default_factory=list)
    output: torch.Tensor | None = None
    active: bool = False
    done: bool = False


class _Capture(TorchFunctionMode):
    """Records the attention scores of the module currently marked active."""

    def __init__(self) -> None:
        super().__init__()
        self.current: SiteRecord | None = None

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        rec = self.current
        if rec is not None and not rec.scores:
            name = getattr(func, "__name__", "")
            if name == "scaled_dot_product_attention":
                q = kwargs.get("query", args[0] if args else None)
                k = kwargs.get("key", args[1] if len(args) > 1 else None)
                rec.scores = [t for t in (q, k) if isinstance(t, torch.Tensor)]
            elif name in ("softmax", "_softmax") and isinstance(out, torch.Tensor) and out.dim() >= 2:
                rec.scores = [out]
        return out


def _first_tensor(out: Any) -> torch.Tensor | None:
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)):
        for o in out:
            t = _first_tensor(o)
            if t is not None:
                return t
    return None


def default_inputs(model: nn.Module) -> Any | None:
    """Inputs to probe ``model`` with: a Hugging Face model's ``dummy_inputs`` (first row), else ``None``."""
    dummy = getattr(model, "dummy_inputs", None)
    if isinstance(dummy, Mapping) and dummy:
        return {k: (v[:1] if isinstance(v, torch.Tensor) and v.dim() > 0 else v) for k, v in dummy.items()}
    return None


def _call(model: nn.Module, inputs: Any) -> Any:
    if isinstance(inputs, Mapping):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def run_probe(model: nn.Module, modules: Mapping[str, nn.Module], inputs: Any) -> dict[str, SiteRecord]:
    """Run ``model`` on ``inputs`` once (eval mode, grad on), recording each of ``modules``' first call."""
    records = {name: SiteRecord() for name in modules}
    cap = _Capture()

    def pre(name: str):
        def hook(_m: nn.Module, _args: Any) -> None:
            rec = records[name]
            if not rec.done and cap.current is None:
                rec.active = True
                cap.current = rec
        return hook

    def post(name: str):
        def hook(_m: nn.Module, _args: Any, out: Any) -> None:
            rec = records[name]
            if rec.active:
                rec.output = _first_tensor(out)
                rec.active, rec.done = False, True
                cap.current = None
        return hook

    handles = [h for name, m in modules.items()
               for h in (m.register_forward_pre_hook(pre(name)), m.register_forward_hook(post(name)))]
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad(), cap:
            _call(model, inputs)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return records


def _functional(ts: list[torch.Tensor], seed: int) -> torch.Tensor | None:
    g = torch.Generator().manual_seed(seed)
    total = None
    for t in ts:
        if not t.requires_grad:
            continue
        r = torch.randn(t.shape, generator=g, dtype=torch.float64).to(t.dtype).to(t.device)
        term = (t * r).sum()
        total = term if total is None else total + term
    return total


def _row_norm(grad: torch.Tensor | None, like: torch.Tensor, dim: int) -> torch.Tensor:
    if grad is None:
        return torch.zeros(like.shape[dim], dtype=torch.float64)
    g = grad.detach().abs().to(torch.float64).movedim(dim, 0).reshape(like.shape[dim], -1)
    return g.amax(dim=1)


def _moves(norm: torch.Tensor, ref: float) -> torch.Tensor:
    return norm > REL_TOL * ref if ref > 0 else torch.zeros_like(norm, dtype=torch.bool)


def row_effects(rec: SiteRecord, tensors: list[tuple[torch.Tensor, int]]) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
    """For each ``(parameter, axis)``: boolean rows ``(moves scores, moves output)`` along ``axis``.

    ``None`` when the module recorded no attention scores (then nothing can be verified).
    """
    if not rec.scores or rec.output is None:
        return None
    params = [p for p, _ in tensors]
    s = _functional(rec.scores, 0)
    y = _functional([rec.output], 1)
    zeros = [None] * len(params)
    gs = list(torch.autograd.grad(s, params, retain_graph=True, allow_unused=True)) if s is not None else zeros
    gy = list(torch.autograd.grad(y, params, retain_graph=True, allow_unused=True)) if y is not None else zeros
    out = []
    ns = [_row_norm(g, p, d) for g, (p, d) in zip(gs, tensors)]
    ny = [_row_norm(g, p, d) for g, (p, d) in zip(gy, tensors)]
    ref_s = max([float(n.max()) for n in ns if n.numel()] + [0.0])
    ref_y = max([float(n.max()) for n in ny if n.numel()] + [0.0])
    for a, b in zip(ns, ny):
        out.append((_moves(a, ref_s), _moves(b, ref_y)))
    return out


def ranges(mask: torch.Tensor) -> str:
    """``[0:8, 24:32]``-style listing of the True runs of a boolean vector."""
    idx = mask.nonzero().flatten().tolist()
    runs: list[list[int]] = []
    for i in idx:
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    head = ", ".join(f"{a}:{b}" for a, b in runs[:4]) + (f", ... ({len(runs)} runs)" if len(runs) > 4 else "")
    return f"[{head}]"


def _is_attention_op(name: str, out: Any) -> bool:
    """``scaled_dot_product_attention``, or a softmax over scores ``(..., L_q, L_k)``.

    A softmax counts when its output has at least 4 dimensions (``(B, H, L_q, L_k)``) or 3 with
    ``L_q == L_k`` (``(B*H, L, L)``); a router's ``(B, T, n_experts)`` softmax does not.
    """
    if name == "scaled_dot_product_attention":
        return True
    if name in ("softmax", "_softmax") and isinstance(out, torch.Tensor):
        return out.dim() >= 4 or (out.dim() == 3 and out.shape[-1] == out.shape[-2] and out.shape[-1] > 1)
    return False


class _Finder(TorchFunctionMode):
    """Names the innermost module with parameters active at each attention op."""

    def __init__(self, stack: list[str]) -> None:
        super().__init__()
        self.stack = stack
        self.found: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if self.stack and _is_attention_op(getattr(func, "__name__", ""), out) and self.stack[-1] not in self.found:
            self.found.append(self.stack[-1])
        return out


def attention_modules(model: nn.Module, inputs: Any) -> list[str]:
    """Names of the modules that compute attention scores in one forward of ``model`` on ``inputs``.

    Structure, not names: each module is the innermost one *with parameters* that was running
    when ``scaled_dot_product_attention`` or a scores-shaped softmax (:func:`_is_attention_op`)
    was called, in call order. ``""`` is the root model. Eval mode, grad off.
    """
    stack: list[str] = []
    owns = {id(m): any(True for _ in m.parameters()) for m in model.modules()}

    def pre(name: str, m: nn.Module):
        def hook(_m: nn.Module, _args: Any) -> None:
            stack.append(name if owns.get(id(m)) or not stack else stack[-1])
        return hook

    def post(_m: nn.Module, _args: Any, _out: Any) -> None:
        if stack:
            stack.pop()

    handles = [h for name, m in model.named_modules()
               for h in (m.register_forward_pre_hook(pre(name, m)), m.register_forward_hook(post))]
    finder = _Finder(stack)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), finder:
            _call(model, inputs)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return finder.found
