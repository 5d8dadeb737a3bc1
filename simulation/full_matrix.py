r"""Gradient descent on the actual matrices of MODEL.md (float64 numpy): the cross-check of the reduction.

A state is a dict of matrices: collapsed attention ``W_KQ (D, D)`` or factors ``W_K, W_Q (r_QK, D)``;
collapsed output-value ``W_OV (K, D)`` or factors ``W_O (K, r_OV)``, ``W_V (r_OV, D)``. The
population loss of the effective matrices :math:`W_{KQ} = W_K^\top W_Q`, :math:`W_{OV} = W_O W_V` is

.. math::
    \mathcal L = \frac1K\sum_y \mathrm{CE}\Bigl(W_{OV}\sum_j a^{(y)}_j e_{x_j},\ y\Bigr),\qquad
    a^{(y)} = \operatorname{softmax}_j\bigl(W_{KQ}[x_j, q]\bigr).

Its gradients, by the chain rule (checked against torch autograd in the tests,
:func:`autograd_gradients`): with :math:`h_y = \sum_j a^{(y)}_j e_{x_j}`,
:math:`\delta_y = (\operatorname{softmax}(z_y) - e_y)/K`,

.. math::
    G_{OV} = \sum_y \delta_y h_y^\top,\quad
    G_{KQ}[x_j, q] = \sum_y a^{(y)}_j\bigl(g_{yj} - \textstyle\sum_l a^{(y)}_l g_{yl}\bigr),\
    g_{yj} = (W_{OV}^\top\delta_y)_{x_j},

and for factors :math:`\nabla_{W_O} = G_{OV}W_V^\top`, :math:`\nabla_{W_V} = W_O^\top G_{OV}`,
:math:`\nabla_{W_K} = W_Q G_{KQ}^\top`, :math:`\nabla_{W_Q} = W_K G_{KQ}`.

Training is full-batch gradient descent with steps :math:`\eta_{QK}\,dt` and :math:`\eta_{OV}\,dt`
(the explicit Euler scheme of the flow, so it tracks the flow to :math:`O(dt)`), or classical RK4
on the flow (``method="rk4"``, :math:`O(dt^4)`). Starts: MODEL.md's symmetric/balanced start by
effective values (:mod:`simulation.model_matrices`) or seeded Gaussian matrices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import softmax

from simulation.model_matrices import (TokenLayout, balanced_ov_factors, balanced_qk_factors, observables,
                                       symmetric_ov, symmetric_qk)
from theory.parametrization import Parametrization

State = dict[str, np.ndarray]
QK_NAMES = {"C": ("W_KQ",), "F": ("W_K", "W_Q")}
OV_NAMES = {"C": ("W_OV",), "F": ("W_O", "W_V")}


def _check_param(param: str) -> None:
    Parametrization(param)  # ValueError naming the four for anything else


def balanced_state(param: str, K: int, M: int, u0: float, v0: float, *, rank_qk: int = 1,
                   rank_ov: int | None = None) -> State:
    """MODEL.md's start at effective ``(u0, v0)``: symmetric collapsed matrices, balanced factors.

    Raises ``ValueError`` when a factorized circuit is asked to start at 0 (a fixed point of the flow).
    """
    _check_param(param)
    state: State = {}
    if Parametrization(param).qk.factorized:
        if v0 <= 0:
            raise ValueError(f"{param}: a factorized QK circuit started at v0 = 0 is a fixed point of the flow "
                             "(it never moves); give v0 > 0")
        state["W_K"], state["W_Q"] = balanced_qk_factors(K, M, v0, rank=rank_qk)
    else:
        state["W_KQ"] = symmetric_qk(K, M, v0)
    if Parametrization(param).ov.factorized:
        if u0 <= 0:
            raise ValueError(f"{param}: a factorized OV circuit started at u0 = 0 is a fixed point of the flow "
                             "(it never moves); give u0 > 0")
        state["W_O"], state["W_V"] = balanced_ov_factors(K, M, u0, rank=rank_ov)
    else:
        state["W_OV"] = symmetric_ov(K, M, u0)
    return state


def random_state(param: str, K: int, M: int, scale: float, seed: int, *, rank_qk: int | None = None,
                 rank_ov: int | None = None) -> State:
    r"""Every matrix i.i.d. :math:`\mathcal N(0, \text{scale}^2)` from ``numpy.random.default_rng(seed)``.

    Factor ranks default to ``D = K + M + 1`` (as :class:`validation.attention.QKOVAttention`).
    """
    _check_param(param)
    D = TokenLayout(K, M).D
    rq, ro = rank_qk or D, rank_ov or D
    rng = np.random.default_rng(seed)
    g = lambda *shape: scale * rng.standard_normal(shape)  # noqa: E731
    state: State = {}
    if Parametrization(param).qk.factorized:
        state["W_K"], state["W_Q"] = g(rq, D), g(rq, D)
    else:
        state["W_KQ"] = g(D, D)
    if Parametrization(param).ov.factorized:
        state["W_O"], state["W_V"] = g(K, ro), g(ro, D)
    else:
        state["W_OV"] = g(K, D)
    return state


def effective(state: State) -> tuple[np.ndarray, np.ndarray]:
    r"""Effective matrices :math:`W_{KQ} = W_K^\top W_Q` ``(D, D)`` and :math:`W_{OV} = W_O W_V` ``(K, D)``."""
    W_KQ = state["W_KQ"] if "W_KQ" in state else state["W_K"].T @ state["W_Q"]
    W_OV = state["W_OV"] if "W_OV" in state else state["W_O"] @ state["W_V"]
    return W_KQ, W_OV


class PopulationGradient:
    """Loss and effective gradients of the population of ``K`` sequences (see module docstring)."""

    def __init__(self, K: int, M: int):
        self.layout = TokenLayout(K, M)
        self.K, self.M = K, M
        self.seq = self.layout.sequences()                    # (K, L)
        self.q = self.layout.query
        self._rows = np.arange(K)

    def query_column(self, state: State) -> np.ndarray:
        """Column ``q`` of the effective :math:`W_{KQ}`, ``(D,)`` (all that the scores read)."""
        if "W_KQ" in state:
            return state["W_KQ"][:, self.q]
        return state["W_K"].T @ state["W_Q"][:, self.q]

    def effective_grads(self, col_q: np.ndarray, W_OV: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        r"""``loss``, :math:`G_{KQ}[:, q]` ``(D,)`` and :math:`G_{OV}` ``(K, D)`` (other columns of :math:`G_{KQ}` vanish)."""
        K, seq = self.K, self.seq
        s = col_q[seq]                                        # (K, L)
        a = softmax(s, axis=1)
        h = np.zeros((K, self.layout.D))
        np.put_along_axis(h, seq, a, axis=1)                   # tokens are distinct within a sequence
        z = h @ W_OV.T                                         # (K, K)
        zmax = z.max(axis=1, keepdims=True)
        ez = np.exp(z - zmax)
        lse = np.log(ez.sum(axis=1)) + zmax[:, 0]
        loss = float(np.mean(lse - z[self._rows, self._rows]))
        dz = ez / ez.sum(axis=1, keepdims=True)
        dz[self._rows, self._rows] -= 1.0
        dz /= K
        G_OV = dz.T @ h
        g = np.take_along_axis(dz @ W_OV, seq, axis=1)         # (K, L)
        ds = a * (g - np.sum(a * g, axis=1, keepdims=True))
        G_col = np.zeros(self.layout.D)
        np.add.at(G_col, seq, ds)
        return loss, G_col, G_OV

    def gradients(self, state: State) -> tuple[float, State]:
        """Loss and the gradient of every matrix in ``state`` (same keys and shapes)."""
        col = self.query_column(state)
        W_OV = state["W_OV"] if "W_OV" in state else state["W_O"] @ state["W_V"]
        loss, G_col, G_OV = self.effective_grads(col, W_OV)
        grads: State = {}
        if "W_KQ" in state:
            G = np.zeros_like(state["W_KQ"])
            G[:, self.q] = G_col
            grads["W_KQ"] = G
        else:
            W_K, W_Q = state["W_K"], state["W_Q"]
            grads["W_K"] = np.outer(W_Q[:, self.q], G_col)
            GQ = np.zeros_like(W_Q)
            GQ[:, self.q] = W_K @ G_col
            grads["W_Q"] = GQ
        if "W_OV" in state:
            grads["W_OV"] = G_OV
        else:
            grads["W_O"] = G_OV @ state["W_V"].T
            grads["W_V"] = state["W_O"].T @ G_OV
        return loss, grads


def autograd_gradients(state: State, K: int, M: int) -> tuple[float, State]:
    """The same loss and gradients by torch autograd (float64), from :func:`population_forward`'s formula."""
    import torch

    lay = TokenLayout(K, M)
    X = torch.as_tensor(lay.one_hot_population())            # (K, L, D)
    ts = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in state.items()}
    W_KQ = ts["W_KQ"] if "W_KQ" in ts else ts["W_K"].T @ ts["W_Q"]
    W_OV = ts["W_OV"] if "W_OV" in ts else ts["W_O"] @ ts["W_V"]
    xq = X[:, -1, :]                                          # (K, D) the query
    s = torch.einsum("yld,de,ye->yl", X, W_KQ, xq)
    a = torch.softmax(s, dim=1)
    z = torch.einsum("kd,yld,yl->yk", W_OV, X, a)
    loss = torch.nn.functional.cross_entropy(z, torch.arange(K))
    loss.backward()
    return loss.item(), {k: t.grad.numpy() for k, t in ts.items()}


def symmetric_projection_distance(W_KQ: np.ndarray, W_OV: np.ndarray, K: int, M: int) -> tuple[float, float]:
    r"""Relative distance of the effective matrices from the symmetric set, OV and QK.

    The projection averages each orbit: :math:`W_{OV}` over its diagonal distinct entries, its
    off-diagonal distinct entries, the common columns and the query column; the query column of
    :math:`W_{KQ}` over distinct and common tokens (the query entry is its own orbit). Returns
    :math:`\|W - \Pi W\|_F / \|W\|_F` for each (0 on the symmetric set; columns of :math:`W_{KQ}`
    other than the query's do not enter the scores and are ignored).
    """
    lay = TokenLayout(K, M)
    d, c, q = lay.distinct, lay.common, lay.query
    Wd = W_OV[:, d]
    eye = np.eye(K, dtype=bool)
    proj = np.empty_like(W_OV)
    proj[:, d] = np.where(eye, Wd[eye].mean(), Wd[~eye].mean() if K > 1 else 0.0)
    proj[:, c] = W_OV[:, c].mean()
    proj[:, q] = W_OV[:, q].mean()
    col = W_KQ[:, q]
    pcol = np.empty_like(col)
    pcol[d] = col[d].mean()
    pcol[c] = col[c].mean()
    pcol[q] = col[q]
    rel = lambda x, px: float(np.linalg.norm(x - px) / max(np.linalg.norm(x), 1e-300))  # noqa: E731
    return rel(W_OV, proj), rel(col, pcol)


@dataclass(frozen=True)
class FullTrajectory:
    """Observables of a full-matrix run at ``t = steps * dt``; every array ``(T,)``.

    ``u, v, p, loss`` are MODEL.md's (averaged over classes/tokens for non-symmetric states),
    ``*_spread`` their standard deviations, ``asym_ov, asym_qk`` the relative distances from the
    symmetric set (:func:`symmetric_projection_distance`).
    """

    param: str
    t: np.ndarray
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    loss: np.ndarray
    u_spread: np.ndarray
    v_spread: np.ndarray
    p_spread: np.ndarray
    asym_ov: np.ndarray
    asym_qk: np.ndarray
    dt: float
    method: str

    def as_json(self) -> dict:
        return {"param": self.param, "t": self.t.tolist(), "u": self.u.tolist(), "v": self.v.tolist(),
                "p": self.p.tolist(), "loss": self.loss.tolist()}


def steps_for_times(t_eval: np.ndarray, dt: float) -> np.ndarray:
    """Step counts ``round(t / dt)``; a time that is not a multiple of ``dt`` (to 1e-6) is an error."""
    t_eval = np.asarray(t_eval, dtype=float)
    n = np.rint(t_eval / dt).astype(np.int64)
    bad = np.abs(n * dt - t_eval) > 1e-6 * np.maximum(1.0, t_eval)
    if np.any(bad):
        raise ValueError(f"time {t_eval[bad][0]:g} is not a multiple of dt = {dt:g}")
    if np.any(np.diff(n) <= 0):
        raise ValueError("times must be strictly increasing multiples of dt")
    return n


def simulate_full(param: str, K: int, M: int, eta_qk: float, eta_ov: float, t_eval, dt: float, *,
                  state: State, method: Literal["gd", "rk4"] = "gd") -> FullTrajectory:
    r"""Run the full-matrix flow from ``state`` and record observables at ``t_eval`` (multiples of ``dt``).

    ``method="gd"``: :math:`W \leftarrow W - \eta\,dt\,\nabla_W\mathcal L` (gradient descent);
    ``"rk4"``: one classical Runge-Kutta step of the flow per ``dt``.
    """
    _check_param(param)
    if dt <= 0:
        raise ValueError("dt must be > 0")
    n_at = steps_for_times(t_eval, dt)
    pg = PopulationGradient(K, M)
    rates = {name: (eta_qk if name in ("W_KQ", "W_K", "W_Q") else eta_ov) for name in state}
    W = {k: np.array(v, dtype=float, copy=True) for k, v in state.items()}

    def velocity(S: State) -> State:
        _, g = pg.gradients(S)
        return {k: -rates[k] * g[k] for k in S}

    rows = []
    step = 0
    for n_target in n_at:
        while step < n_target:
            if method == "gd":
                vel = velocity(W)
                for k in W:
                    W[k] += dt * vel[k]
            elif method == "rk4":
                k1 = velocity(W)
                k2 = velocity({k: W[k] + 0.5 * dt * k1[k] for k in W})
                k3 = velocity({k: W[k] + 0.5 * dt * k2[k] for k in W})
                k4 = velocity({k: W[k] + dt * k3[k] for k in W})
                for k in W:
                    W[k] += dt / 6.0 * (k1[k] + 2 * k2[k] + 2 * k3[k] + k4[k])
            else:
                raise ValueError(f"method {method!r}: must be 'gd' or 'rk4'")
            step += 1
        W_KQ, W_OV = effective(W)
        ob = observables(W_KQ, W_OV, K, M)
        a_ov, a_qk = symmetric_projection_distance(W_KQ, W_OV, K, M)
        rows.append((ob.u, ob.v, ob.p, ob.loss, ob.u_spread, ob.v_spread, ob.p_spread, a_ov, a_qk))
    arr = np.array(rows, dtype=float).T
    return FullTrajectory(param, n_at * dt, *arr, dt=dt, method=method)


__all__ = ["State", "balanced_state", "random_state", "effective", "PopulationGradient", "autograd_gradients",
           "symmetric_projection_distance", "FullTrajectory", "simulate_full", "steps_for_times"]
