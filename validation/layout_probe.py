r"""Check where W_Q, W_K, W_V and W_O live by running the module's own forward.

Guessing a fused layout from a name is how rates go silently wrong (GPT-BigCode with
``multi_query=False`` interleaves q, k, v per head in ``c_attn``; CodeGen orders ``qkv_proj``
as q, v, k). :func:`run_probe` runs the model once on example inputs and, inside each
attention module, records

* the *score side*: the softmax output :math:`P` (eager kernels) or the ``query`` and ``key``
  arguments of ``scaled_dot_product_attention`` (SDPA kernels), and
* the *value side*: the module's output :math:`Y` (its first tensor).

For a parameter :math:`W` of the module, rows :math:`i` (along the fused axis) with
:math:`\partial \langle R, P\rangle / \partial W_i \ne 0` for a random :math:`R` move the
attention scores: they are query or key rows. Rows with a zero score gradient but
:math:`\partial \langle R', Y\rangle / \partial W_i \ne 0` move only what is averaged: value
(or output) rows. A gradient is an infinitesimal perturbation of one row, so one backward
pass tests every row at once. Every call of the module is recorded with its inputs detached
(ALBERT runs one module at every layer; Zamba2's layers hold the same Parameters), so a call's
:math:`P` depends on :math:`W` only through that call, never through an earlier layer's output.

With ``fix_scores`` the pattern :math:`P` is detached inside each call (a second pass): a parameter
whose output gradient then vanishes but whose score gradient does not acts *only* on the scores
(a q/k norm, an attention sink, a positional q/k projection), which is what
``param_groups(..., whole_circuit=True)`` trains with QK (:func:`whole_tensor_effects`).

The probe separates the QK circuit from the OV circuit, which is all the learning rates need;
it does not tell q rows from k rows (both are at ``ratio * lr``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

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
    """What one attention module computed in each of its calls (a module shared across layers runs several)."""

    scores: list[torch.Tensor] = field(default_factory=list)
    outputs: list[torch.Tensor] = field(default_factory=list)
    active: bool = False
    done: bool = False
    captured: bool = False

    @property
    def output(self) -> torch.Tensor | None:
        """The output of the first call (``None`` before any)."""
        return self.outputs[0] if self.outputs else None


def _sdpa_fixed(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Any = None,
                dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                enable_gqa: bool = False, **_ignored: Any) -> torch.Tensor:
    r"""``scaled_dot_product_attention`` with the attention pattern :math:`P` detached: :math:`\bar P V`.

    The math of torch's reference implementation (eval: no dropout); the output's gradient then flows to the
    values only, so what moves it with :math:`P` held fixed is on the value side.
    """
    n_q, n_k = query.size(-2), key.size(-2)
    s = 1.0 / query.size(-1) ** 0.5 if scale is None else scale
    if enable_gqa and key.dim() >= 3 and key.size(-3) != query.size(-3):
        rep = query.size(-3) // key.size(-3)
        key, value = key.repeat_interleave(rep, -3), value.repeat_interleave(rep, -3)
    logits = query @ key.transpose(-2, -1) * s
    if is_causal:
        keep = torch.ones(n_q, n_k, dtype=torch.bool, device=query.device).tril()
        logits = logits.masked_fill(~keep, float("-inf"))
    if isinstance(attn_mask, torch.Tensor):
        logits = logits.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else logits + attn_mask
    return torch.softmax(logits, dim=-1).detach().to(value.dtype) @ value


class _Capture(TorchFunctionMode):
    """Records the attention scores of the module currently marked active (in each of its calls).

    ``fix_scores``: the attention pattern is detached inside active calls (softmax outputs; SDPA through
    :func:`_sdpa_fixed`), so that gradients of the output reach only what acts on the values.
    """

    def __init__(self, fix_scores: bool = False) -> None:
        super().__init__()
        self.current: SiteRecord | None = None
        self.fix_scores = fix_scores

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        rec = self.current
        name = getattr(func, "__name__", "")
        if rec is not None and self.fix_scores and name == "scaled_dot_product_attention":
            return _sdpa_fixed(*args, **kwargs)
        out = func(*args, **kwargs)
        if rec is not None and name in ("softmax", "_softmax") and isinstance(out, torch.Tensor) and out.dim() >= 2 \
                and self.fix_scores:
            return out.detach()
        if rec is not None and not rec.captured:
            if name == "scaled_dot_product_attention":
                q = kwargs.get("query", args[0] if args else None)
                k = kwargs.get("key", args[1] if len(args) > 1 else None)
                rec.scores += [t for t in (q, k) if isinstance(t, torch.Tensor)]
                rec.captured = True
            elif name in ("softmax", "_softmax") and isinstance(out, torch.Tensor) and out.dim() >= 2:
                rec.scores.append(out)
                rec.captured = True
        return out


def _detached(x: Any) -> Any:
    """``x`` with every tensor (also inside a tuple or list, one level down) cut from the graph."""
    if isinstance(x, torch.Tensor):
        return x.detach() if x.requires_grad else x
    if isinstance(x, (tuple, list)) and any(isinstance(t, torch.Tensor) and t.requires_grad for t in x):
        return type(x)(t.detach() if isinstance(t, torch.Tensor) else t for t in x)
    return x


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


def run_probe(model: nn.Module, modules: Mapping[str, nn.Module], inputs: Any, *,
              fix_scores: bool = False) -> dict[str, SiteRecord]:
    """Run ``model`` on ``inputs`` once (eval mode, grad on), recording every call of each of ``modules``.

    Each call's inputs are detached, so what a call records depends on a Parameter only through that call: a
    Parameter shared by several modules (or a module run at several layers, ALBERT, Zamba2) is judged by what
    it does inside each call, not through an earlier layer's output. ``fix_scores``: see :class:`_Capture`.
    """
    records = {name: SiteRecord() for name in modules}
    cap = _Capture(fix_scores)

    def pre(name: str):
        def hook(_m: nn.Module, args: Any, kwargs: Any) -> Any:
            rec = records[name]
            if cap.current is None:
                rec.active, rec.captured = True, False
                cap.current = rec
                return tuple(_detached(a) for a in args), {k: _detached(v) for k, v in kwargs.items()}
            return None
        return hook

    def post(name: str):
        def hook(_m: nn.Module, _args: Any, out: Any) -> None:
            rec = records[name]
            if rec.active:
                first = _first_tensor(out)
                if first is not None:
                    rec.outputs.append(first)
                rec.active, rec.done = False, True
                cap.current = None
        return hook

    handles = [h for name, m in modules.items()
               for h in (m.register_forward_pre_hook(pre(name), with_kwargs=True), m.register_forward_hook(post(name)))]
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
    if not rec.scores or not rec.outputs:
        return None
    params = [p for p, _ in tensors]
    s = _functional(rec.scores, 0)
    y = _functional(rec.outputs, 1)
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


def whole_tensor_effects(scored: SiteRecord, fixed: SiteRecord,
                         params: Sequence[torch.Tensor]) -> list[tuple[bool, bool]] | None:
    """For each of ``params``: ``(moves the scores, moves the output with the attention pattern held fixed)``.

    ``scored``: a record of :func:`run_probe`; ``fixed``: of the same module in a run with ``fix_scores=True``.
    A tensor "moves" a side when its largest gradient entry exceeds ``REL_TOL`` times the largest over
    ``params`` (structural zeros are exact). ``None`` when the module recorded no attention scores.
    """
    if not scored.scores or not fixed.outputs or not params:
        return None
    zeros: list[torch.Tensor | None] = [None] * len(params)
    s = _functional(scored.scores, 0)
    y = _functional(fixed.outputs, 1)
    gs = list(torch.autograd.grad(s, params, retain_graph=True, allow_unused=True)) if s is not None else zeros
    gy = list(torch.autograd.grad(y, params, retain_graph=True, allow_unused=True)) if y is not None else zeros

    def peak(g: torch.Tensor | None) -> float:
        return 0.0 if g is None else float(g.detach().abs().max())

    ps, py = [peak(g) for g in gs], [peak(g) for g in gy]
    ref_s, ref_y = max(ps + [0.0]), max(py + [0.0])
    return [(a > REL_TOL * ref_s > 0, b > REL_TOL * ref_y > 0) for a, b in zip(ps, py)]
