r"""The whole QK circuit: an attention module's other Parameters that act only on the scores (or only on the values).

Besides W_Q and W_K, a module's attention scores :math:`S = \mathrm{softmax}(q(x)^\top k(x) + b)` may depend on
q/k norm gains (Qwen3, Gemma3, OLMo2: :math:`q = g_q \odot \mathrm{norm}(W_Q x)`), attention sinks (GPT-OSS: one
logit per head in the softmax's denominator), positional q/k projections (DeBERTa's ``pos_query_proj``,
``pos_key_proj``), T5's relative position bias, and low-rank adapters added to q and k (Zamba2's
``linear_q_adapter_list``). With ``param_groups(..., whole_circuit=True)`` these train with QK; parameters that
act only on the attended values (Zamba2's ``linear_v_adapter_list``) train with OV.

Decided by structure, on the module's own forward (:mod:`validation.layout_probe`): for each Parameter of an
attention module that is not W_Q/W_K/W_V/W_O (nor their biases or adapters),

* it acts on the scores when :math:`\partial\langle R, P\rangle/\partial\theta \ne 0` (a random projection of the
  pattern :math:`P`, each call's inputs detached);
* it acts on the values when :math:`\partial\langle R', Y\rangle/\partial\theta \ne 0` in a second pass in which
  :math:`P` is held fixed (detached), :math:`Y` the module's output.

Scores only -> ``"qk"``; values only -> ``"ov"``; both (e.g. a norm applied to the input before q, k and v inside
the module) or neither -> left at ``lr_other``. The result is remembered on each attention module, so a second
call on the same model after DDP, FSDP or ``fully_shard`` (where the model cannot be probed) reads it back.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from validation import layout_probe
from validation.attention_layouts import AttentionSite, UnknownAttentionLayout

_MEMO = "_qkov_whole_circuit"
"""Attribute of an attention module: ``{parameter name relative to it: (acts on the scores, acts on the values)}``."""


def _assigned(sites: list[AttentionSite], adapters: Any) -> set[int]:
    ids: set[int] = set()
    for s in sites:
        for wt in s.whole:
            ids.add(id(getattr(wt.module, wt.attr)))
            if wt.attr == "weight":
                ids |= {id(p) for _, p in adapters(wt.module)}
        for ft in s.fused:
            ids |= {id(p) for p in ft.module.parameters()}
    return ids


def candidates(sites: list[AttentionSite], adapters: Any) -> dict[str, list[tuple[str, nn.Parameter]]]:
    """``{site: [(name relative to the site module, Parameter)]}``: the trainable Parameters of each attention
    module that are not a recognised W_Q/W_K/W_V/W_O, bias or adapter. A Parameter shared by several sites is
    listed under each (its effect is the union over them)."""
    taken = _assigned(sites, adapters)
    return {s.name: [(n, p) for n, p in s.module.named_parameters() if id(p) not in taken and p.requires_grad]
            for s in sites}


def whole_circuit_params(model: nn.Module, sites: list[AttentionSite], inputs: Any, *, adapters: Any,
                         probe: bool = True) -> dict[int, tuple[str, str, str]]:
    """``{id(Parameter): (circuit, site name, reason)}`` for the score-only (``"qk"``) and value-only (``"ov"``)
    Parameters of every site (see the module docstring); others are left out. A Parameter several sites share
    (Zamba2's layers) is judged over all of them and named under the first.

    ``probe=False`` (a wrapped or sharded model) reads what an earlier call remembered on each module, and
    refuses in one line a module never probed. ``adapters``: the function listing a projection's adapters
    (:func:`validation.user_models.adapter_parameters`).
    """
    cands = candidates(sites, adapters)
    todo = [s for s in sites if cands[s.name]]
    if not todo:
        return {}
    if not probe or inputs is None:
        missing = [s for s in todo if not isinstance(s.module.__dict__.get(_MEMO), dict)]
        if missing:
            s = missing[0]
            why = ("a wrapped or sharded model cannot be run to find them: call qkov.param_groups(model, ..., "
                   "whole_circuit=True) on the plain model first" if not probe else
                   "qkov finds them by running the model: pass example_inputs=...")
            raise UnknownAttentionLayout(
                f"{s.name or '<root>'} ({type(s.module).__name__}): whole_circuit=True must tell which of "
                f"{', '.join(n for n, _ in cands[s.name][:4])} act only on the attention scores; {why}")
    else:
        mods = {s.name: s.module for s in todo}
        scored = layout_probe.run_probe(model, mods, inputs)
        fixed = layout_probe.run_probe(model, mods, inputs, fix_scores=True)
        for s in todo:
            params = [p for _, p in cands[s.name]]
            eff = layout_probe.whole_tensor_effects(scored[s.name], fixed[s.name], params)
            s.module.__dict__[_MEMO] = {n: e for (n, _), e in zip(cands[s.name], eff or [(False, False)] * len(params))}
    effect: dict[int, tuple[bool, bool, str]] = {}
    for s in todo:
        memo = s.module.__dict__[_MEMO]
        for n, p in cands[s.name]:
            score, value = memo.get(n, (False, False))
            old = effect.get(id(p))
            effect[id(p)] = (score or (old is not None and old[0]), value or (old is not None and old[1]),
                             old[2] if old is not None else s.name)
    out: dict[int, tuple[str, str, str]] = {}
    for pid, (score, value, site) in effect.items():
        if score != value:
            out[pid] = ("qk", site, "acts only on the scores") if score else ("ov", site, "acts only on the values")
    return out
