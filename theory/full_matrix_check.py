r"""Exact full-matrix cross-check of the reduction, for small concrete sizes.

For concrete ``K`` and ``M`` every entry of :math:`W_{KQ} \in \mathbb R^{D\times D}` and
:math:`W_{OV} \in \mathbb R^{K\times D}` is its own sympy symbol; the population loss of
MODEL.md is built from them and differentiated entry by entry. At a symmetric point (entries
set to the orbit coordinates ``A, B, C, E, alpha, beta, gamma``, themselves symbols) every
entry's gradient must equal the symbolic-size orbit gradient of :mod:`theory.orbit_gradient`
with ``K, M`` substituted, and entries outside the query column of :math:`W_{KQ}` must get zero.

For factorized circuits, the gradients of the factors at the factorized symmetric point
(``s_O, s_V, a, b, c``) are pushed to the effective matrices and compared with the reduced
flow (:mod:`theory.reduced`): the factor gradient lies in the factorized symmetric set.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from theory.checks import AT_ONE_SIZE, Check, is_zero, numeric_method, numerically_zero
from theory.orbit_gradient import orbit_gradient
from theory.reduced import reduced_system
from theory.symbols import A_, B_, C_, E_, K, M, a_, alpha, b_, beta, c_, eta_ov, eta_qk, gamma, s_O, s_V
from theory.parametrization import FULLY_FACTORIZED, Parametrization

SIZES = ((2, 1), (2, 2), (3, 1), (3, 2))


def _population_loss(WKQ: sp.Matrix, WOV: sp.Matrix, k: int, m: int) -> sp.Expr:
    """MODEL.md's population loss of explicit matrices (sympy), classes ``0..k-1``."""
    q = k + m
    total = sp.Integer(0)
    for y in range(k):
        seq = [y] + list(range(k, k + m)) + [q]
        scores = [WKQ[j, q] for j in seq]
        ex = [sp.exp(s) for s in scores]
        Z = sum(ex)
        z = [sum(ex[i] / Z * WOV[row, seq[i]] for i in range(len(seq))) for row in range(k)]
        total += -z[y] + sp.log(sum(sp.exp(zz) for zz in z))
    return total / k


def _symmetric_values(k: int, m: int) -> tuple[dict, dict]:
    D, q = k + m + 1, k + m
    ov = {}
    for row in range(k):
        for col in range(D):
            if col < k:
                ov[(row, col)] = A_ if row == col else B_
            elif col < q:
                ov[(row, col)] = C_
            else:
                ov[(row, col)] = E_
    kq = {}
    for i in range(D):
        for j in range(D):
            if j == q:
                kq[(i, j)] = alpha if i < k else (beta if i < q else gamma)
            else:
                kq[(i, j)] = sp.Integer(0)
    return kq, ov


@lru_cache(maxsize=None)
def collapsed_full_matrix_check(k: int, m: int) -> Check:
    """Every entry's exact gradient equals the orbit gradient at a symmetric point (sizes k, m)."""
    D, q = k + m + 1, k + m
    WKQ = sp.Matrix(D, D, lambda i, j: sp.Symbol(f"w_{i}_{j}"))
    WOV = sp.Matrix(k, D, lambda i, j: sp.Symbol(f"o_{i}_{j}"))
    L = _population_loss(WKQ, WOV, k, m)
    kq_vals, ov_vals = _symmetric_values(k, m)
    point = {WKQ[i, j]: val for (i, j), val in kq_vals.items()}
    point.update({WOV[i, j]: val for (i, j), val in ov_vals.items()})
    g = {name: expr.subs({K: k, M: m}) for name, expr in vars(orbit_gradient()).items()}
    ok, numeric_entries = True, 0

    def same(got, want) -> bool:
        nonlocal numeric_entries
        if is_zero(got - want):
            return True
        numeric_entries += 1
        return numerically_zero(got - want, samples=5, digits=40)

    for (i, j), _ in kq_vals.items():
        got = sp.diff(L, WKQ[i, j]).subs(point)
        want = (g["alpha"] if i < k else g["beta"] if i < q else g["gamma"]) if j == q else sp.Integer(0)
        ok &= same(got, want)
    for (i, j), _ in ov_vals.items():
        got = sp.diff(L, WOV[i, j]).subs(point)
        want = (g["A"] if i == j else g["B"]) if j < k else (g["C"] if j < q else g["E"])
        ok &= same(got, want)
    how = "exact entrywise derivative of the full loss vs the orbit gradient"
    if numeric_entries:
        how += f" ({numeric_entries} entries compared numerically)"
    return Check(f"full-matrix-collapsed-K{k}-M{m}",
                 rf"\nabla_{{W}}\mathcal L \text{{ at symmetric points equals the orbit gradient (K={k}, M={m})}}",
                 numeric_method(40, 5) if numeric_entries else AT_ONE_SIZE, bool(ok), how)


@lru_cache(maxsize=None)
def factorized_full_matrix_check(k: int, m: int, param: Parametrization | str = FULLY_FACTORIZED) -> Check:
    r"""Factor gradients at the factorized symmetric point reproduce the reduced flow (sizes k, m).

    Uses :math:`r_{QK} = 1` and :math:`r_{OV} = K-1` with an explicit orthonormal basis :math:`U`
    of :math:`\mathbf 1^\perp`, :math:`V = E_d U`, :math:`R = I`.
    """
    D, q = k + m + 1, k + m
    sysm = reduced_system(param)
    # Orthonormal basis of 1-perp in R^k (Gram-Schmidt on e_i - e_{i+1}).
    basis = sp.GramSchmidt([sp.Matrix([1 if t == i else (-1 if t == i + 1 else 0) for t in range(k)])
                            for i in range(k - 1)], orthonormal=True)
    U = sp.Matrix.hstack(*basis)                                  # k x (k-1)
    V = sp.zeros(D, k - 1)
    V[:k, :] = U
    WO = sp.Matrix(k, k - 1, lambda i, j: sp.Symbol(f"O_{i}_{j}"))
    WV = sp.Matrix(k - 1, D, lambda i, j: sp.Symbol(f"V_{i}_{j}"))
    WK = sp.Matrix(1, D, lambda i, j: sp.Symbol(f"K_{j}"))
    WQ = sp.Matrix(1, D, lambda i, j: sp.Symbol(f"Q_{j}"))
    L = _population_loss(WK.T * WQ, WO * WV, k, m)
    pt_O = s_O * U
    pt_V = s_V * V.T
    pt_K = sp.Matrix(1, D, lambda i, j: b_ if j < k else c_)
    pt_Q = sp.Matrix(1, D, lambda i, j: a_ if j == q else 0)
    point = {}
    for Wsym, Wval in ((WO, pt_O), (WV, pt_V), (WK, pt_K), (WQ, pt_Q)):
        point.update({Wsym[i, j]: Wval[i, j] for i in range(Wsym.rows) for j in range(Wsym.cols)})
    rhs = dict(zip(sysm.state, sysm.rhs, strict=False))
    sub_kmr = {K: k, M: m}
    ok, numeric = True, 0
    # Flow of each factor entry vs the reduced coordinates' rates times the direction matrices: exactly
    # (is_zero), else at random points with 30 digits (counted, and the check labelled numeric).
    for Wsym, rate, pred in ((WO, eta_ov, rhs[s_O].subs(sub_kmr) * U),
                             (WV, eta_ov, rhs[s_V].subs(sub_kmr) * V.T),
                             (WK, eta_qk, sp.Matrix(1, D, lambda i, j: (rhs[b_] if j < k else rhs[c_]).subs(sub_kmr))),
                             (WQ, eta_qk, sp.Matrix(1, D, lambda i, j: rhs[a_].subs(sub_kmr) if j == q else 0))):
        for i in range(Wsym.rows):
            for j in range(Wsym.cols):
                diff = (-rate * sp.diff(L, Wsym[i, j])).subs(point) - pred[i, j]
                if is_zero(diff):
                    continue
                numeric += 1
                ok &= numerically_zero(diff, samples=3, digits=30)
    entries = sum(W.rows * W.cols for W in (WO, WV, WK, WQ))
    name = f"full-matrix-{param}-K{k}-M{m}"
    statement = rf"\text{{factor flow at the factorized symmetric point = reduced {param} flow (K={k}, M={m})}}"
    if numeric:
        return Check(name, statement, numeric_method(30, 3), bool(ok),
                     f"exact factor gradients (sympy); {numeric} of {entries} entries compared at random points")
    return Check(name, statement, AT_ONE_SIZE, True, f"exact factor gradients (sympy), all {entries} entries simplify to 0")


def full_matrix_checks(quick: bool = False) -> list[Check]:
    """Concrete-size cross-checks (``quick``, the default derive: collapsed and FAFO at the smallest size;
    FAFO has both circuits factorized, so it covers the factorized reduction of both)."""
    sizes = SIZES[:1] if quick else SIZES
    out = [collapsed_full_matrix_check(k, m) for k, m in sizes]
    out += [factorized_full_matrix_check(k, m) for k, m in sizes[:2]]
    return out
