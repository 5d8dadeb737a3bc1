"""Multi-head softmax attention for the toy modules of the layout tests (no projections of its own)."""

from __future__ import annotations

import torch


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int) -> torch.Tensor:
    """``softmax(q k^T / sqrt(d)) v`` per head, q/k/v ``(B, L, E)`` -> ``(B, L, E)``, ``d = E / heads``."""
    b, n, e = q.shape
    d = e // heads
    q, k, v = (t.view(b, n, heads, d).transpose(1, 2) for t in (q, k, v))
    a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1)
    return (a @ v).transpose(1, 2).reshape(b, n, e)
