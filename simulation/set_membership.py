r"""Which invariant set a trained state is on: the classes and common tokens it keeps equal.

For a state with effective matrices :math:`W_{KQ}` ``(D, D)`` and :math:`W_{OV}` ``(K, D)`` (MODEL.md's token
layout, :class:`simulation.model_matrices.TokenLayout`), the model reads the query's score column
:math:`s = W_{KQ}[:, q]` and :math:`W_{OV}`. A class transposition :math:`(i\,j)` swaps rows ``i, j`` of
:math:`W_{OV}`, its columns ``d_i, d_j`` and the entries ``d_i, d_j`` of ``s``; a commons transposition
:math:`(a\,b)` swaps columns ``c_a, c_b`` of :math:`W_{OV}` and entries ``c_a, c_b`` of ``s``
(:mod:`theory.subgroup_orbits`' action on the effective matrices, where a factorized circuit's inner basis has
dropped out). Two classes (commons) are *equal* at tolerance ``tol`` when their transposition moves
:math:`X = (W_{OV}, s)` by at most ``tol`` relative (Frobenius); the blocks of equal classes and commons are the
Young subgroup whose fixed-point set the state is on (to ``tol``), named as in
:data:`theory.subgroup_orbits.SUBGROUPS` up to relabelling (:func:`set_name`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.model_matrices import TokenLayout
from theory.subgroup_orbits import SUBGROUPS

SET_TOLERANCE = 0.1
"""Default ``tol`` of :func:`membership`: two classes (commons) count as equal when their transposition moves the
state by at most 10% relative. Measured on the 32-member ensemble of issue 41's case (CACO, K=4, M=3,
u0=v0=0.1, lr 1e-3, ratio 4, at L = 1e-2): inside a block the transpositions move the state by 0.000-0.02 (the
blocks are still drifting together), between blocks by 0.88-1.25, so 0.1 separates them by half a decade on each
side; the ensembles' starts are 1e-6 off the symmetric set."""


@dataclass(frozen=True)
class Membership:
    """``class_blocks``/``common_blocks``: the equal classes / commons (index tuples, each sorted, blocks by their
    first index); ``name``: :func:`set_name`; ``class_distances`` ``(K, K)`` and ``common_distances`` ``(M, M)``:
    the relative move of each transposition (0 on the diagonal)."""

    class_blocks: tuple[tuple[int, ...], ...]
    common_blocks: tuple[tuple[int, ...], ...]
    name: str
    class_distances: np.ndarray
    common_distances: np.ndarray


def _swap_distances(X: np.ndarray, idx: list[np.ndarray | None], n: int) -> np.ndarray:
    """``(n, n)``: :math:`\\|\\tau_{ab} X - X\\|_F / \\|X\\|_F` where ``tau_ab`` swaps ``idx[axis][a]`` and
    ``idx[axis][b]`` on every axis listed (``idx``: per axis of ``X`` an index array of length ``n`` or None)."""
    nrm = float(np.linalg.norm(X)) or 1.0
    out = np.zeros((n, n))
    for a in range(n):
        for b in range(a + 1, n):
            Y = X
            for axis, ix in enumerate(idx):
                if ix is None:
                    continue
                perm = np.arange(X.shape[axis])
                perm[ix[a]], perm[ix[b]] = ix[b], ix[a]
                Y = np.take(Y, perm, axis=axis)
            out[a, b] = out[b, a] = float(np.linalg.norm(Y - X)) / nrm
    return out


def _blocks(dist: np.ndarray, tol: float) -> tuple[tuple[int, ...], ...]:
    """Connected components of ``dist <= tol`` (union-find), each sorted, ordered by first index."""
    n = dist.shape[0]
    root = list(range(n))

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for a in range(n):
        for b in range(a + 1, n):
            if dist[a, b] <= tol:
                root[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for a in range(n):
        groups.setdefault(find(a), []).append(a)
    return tuple(sorted(tuple(sorted(g)) for g in groups.values()))


def set_name(class_sizes: tuple[int, ...], common_sizes: tuple[int, ...], K: int, M: int) -> str:
    """The :data:`theory.subgroup_orbits.SUBGROUPS` name whose blocks have these sizes (as multisets: the set up to
    relabelling classes and commons), else ``"classes a+b+..., commons c+..."`` (sizes, largest first)."""
    want = (tuple(sorted(class_sizes)), tuple(sorted(common_sizes)))
    for name, blocks in SUBGROUPS.items():
        cb, mb = blocks(K, M)
        if (tuple(sorted(b for b in cb if b > 0)), tuple(sorted(b for b in mb if b > 0))) == want:
            return name
    c = "+".join(map(str, sorted(class_sizes, reverse=True)))
    m = "+".join(map(str, sorted(common_sizes, reverse=True)))
    return f"classes {c}, commons {m}"


def membership(wkq: np.ndarray, wov: np.ndarray, K: int, M: int, tol: float = SET_TOLERANCE) -> Membership:
    """The set one state is on (module doc): ``wkq (D, D)``, ``wov (K, D)`` effective matrices, float arrays."""
    lay = TokenLayout(K, M)
    s = np.asarray(wkq, dtype=np.float64)[:, lay.query]
    wov = np.asarray(wov, dtype=np.float64)
    X = np.concatenate([wov, s[None, :]], axis=0)                  # (K + 1, D): the row K is the score column
    rows = np.arange(K)
    d = np.asarray(lay.distinct).reshape(-1)
    c = np.asarray(lay.common).reshape(-1)
    dc = _swap_distances(X, [rows, d], K)
    dm = _swap_distances(X, [None, c], M) if M > 1 else np.zeros((M, M))
    cb, mb = _blocks(dc, tol), _blocks(dm, tol)
    return Membership(cb, mb, set_name(tuple(map(len, cb)), tuple(map(len, mb)), K, M), dc, dm)


__all__ = ["Membership", "SET_TOLERANCE", "membership", "set_name"]
