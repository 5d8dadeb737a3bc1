"""Input coercion shared by the metric modules (numpy in, numpy out)."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_numpy(x: Any, *, name: str, dtype: Any = None) -> np.ndarray:
    """``x`` (numpy array, torch tensor, nested lists) as a numpy array of ``dtype``."""
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: cannot be read as an array of {dtype} ({exc})") from None
    return arr


def as_2d(x: Any, *, name: str, dtype: Any = None) -> np.ndarray:
    """``x`` as a 2-D array ``(N, L)``; a 1-D input is one instance ``(1, L)``."""
    arr = as_numpy(x, name=name, dtype=dtype)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected shape (N, L), got {arr.shape}")
    return arr


def same_shape(*pairs: tuple[str, np.ndarray]) -> None:
    """Raise ``ValueError`` naming the arrays when their shapes differ."""
    (n0, a0), *rest = pairs
    for n, a in rest:
        if a.shape != a0.shape:
            raise ValueError(f"{n}: shape {a.shape} differs from {n0} shape {a0.shape}")
