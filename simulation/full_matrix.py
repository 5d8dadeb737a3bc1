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

from simulation.integrators import steps_for_times
from simulation.model_matrices import TokenLayout
from theory.parametrization import Parametrization, registered

State = dict[str, np.ndarray]


def _check_param(param: Parametrization) -> Parametrization:
    return Parametrization(param)  # ValueError naming the registered ones for anything else


def balanced_state(param: Parametrization, K: int, M: int, u0: float, v0: float, *, rank_qk: int = 1,
                   rank_ov: int | None = None) -> State:
    """MODEL.md's start at effective ``(u0, v0)``: each circuit's kind's start (:meth:`CircuitKind.start`).

    Raises ``ValueError`` when a factorized or tied circuit is asked to start at 0 (a fixed point of the flow).
    """
    p = _check_param(param)
    state: State = {}
    for circuit, value, rank in ((p.qk, v0, rank_qk), (p.ov, u0, rank_ov)):
        try:
            mats = circuit.start(K, M, value, rank)
        except ValueError as e:
            raise ValueError(f"{p}: {e}; give a positive start") from None
        state.update(zip(circuit.factors, mats, strict=True))
    return state


def random_state(param: Parametrization, K: int, M: int, scale: float, seed: int, *, rank_qk: int | None = None,
                 rank_ov: int | None = None) -> State:
    r"""Every matrix i.i.d. :math:`\mathcal N(0, \text{scale}^2)` from ``numpy.random.default_rng(seed)``.

    Factor ranks default to ``D = K + M + 1`` (as :class:`validation.attention.QKOVAttention`).
    """
    p = _check_param(param)
    D = TokenLayout(K, M).D
    rng = np.random.default_rng(seed)
    state: State = {}
    for circuit, rank in ((p.qk, rank_qk or D), (p.ov, rank_ov or D)):
        for name, shape in zip(circuit.factors, circuit.kind.factor_shapes(circuit.name, D, K, rank), strict=True):
            state[name] = scale * rng.standard_normal(shape)
    return state


def effective(state: State, param: Parametrization | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Effective matrices :math:`W_{KQ}` ``(D, D)`` and :math:`W_{OV}` ``(K, D)`` of a state.

    ``param`` names the kinds; without it they are read off the state's keys (:func:`param_of_state`).
    """
    p = _check_param(param) if param is not None else param_of_state(state)
    return (p.qk.effective([state[k] for k in p.qk.factors]), p.ov.effective([state[k] for k in p.ov.factors]))


def param_of_state(state: State) -> Parametrization:
    """The registered parametrization whose factor names are exactly the keys of ``state``."""
    for name in registered():
        p = Parametrization(name)
        if set(p.qk.factors) | set(p.ov.factors) == set(state):
            return p
    raise ValueError(f"no parametrization has the matrices {sorted(state)}")


class PopulationGradient:
    """Loss and effective gradients of the population of ``K`` sequences (see module docstring)."""

    def __init__(self, K: int, M: int):
        self.layout = TokenLayout(K, M)
        self.K, self.M = K, M
        self.seq = self.layout.sequences()                    # (K, L)
        self.q = self.layout.query
        self._rows = np.arange(K)

    def query_column(self, state: State, param: Parametrization | None = None) -> np.ndarray:
        """Column ``q`` of the effective :math:`W_{KQ}`, ``(D,)`` (all that the scores read)."""
        return effective(state, param)[0][:, self.q]

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

    def gradients(self, state: State, param: Parametrization | None = None) -> tuple[float, State]:
        """Loss and the gradient of every matrix in ``state`` (same keys and shapes): each circuit's pull-back
        (:meth:`theory.parametrization.CircuitKind.pullback`) of the effective gradients."""
        p = _check_param(param) if param is not None else param_of_state(state)
        W_KQ, W_OV = effective(state, p)
        loss, G_col, G_OV = self.effective_grads(W_KQ[:, self.q], W_OV)
        G_KQ = np.zeros_like(W_KQ)
        G_KQ[:, self.q] = G_col
        grads: State = {}
        for circuit, G in ((p.qk, G_KQ), (p.ov, G_OV)):
            grads.update(zip(circuit.factors, circuit.pullback([state[k] for k in circuit.factors], G), strict=True))
        return loss, grads


def autograd_gradients(state: State, K: int, M: int) -> tuple[float, State]:
    """The same loss and gradients by torch autograd (float64), from :func:`population_forward`'s formula."""
    import torch

    lay = TokenLayout(K, M)
    X = torch.as_tensor(lay.one_hot_population())            # (K, L, D)
    ts = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in state.items()}
    W_KQ, W_OV = effective(ts)  # type: ignore[arg-type]
    xq = X[:, -1, :]                                          # (K, D) the query
    s = torch.einsum("yld,de,ye->yl", X, W_KQ, xq)
    a = torch.softmax(s, dim=1)
    z = torch.einsum("kd,yld,yl->yk", W_OV, X, a)
    loss = torch.nn.functional.cross_entropy(z, torch.arange(K))
    loss.backward()
    return loss.item(), {k: t.grad.numpy() for k, t in ts.items() if t.grad is not None}


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
    rel = lambda x, px: float(np.linalg.norm(x - px) / max(float(np.linalg.norm(x)), 1e-300))  # noqa: E731
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
    success: bool = True
    message: str = ""

    def as_json(self) -> dict:
        return {"param": self.param, "t": self.t.tolist(), "u": self.u.tolist(), "v": self.v.tolist(),
                "p": self.p.tolist(), "loss": self.loss.tolist()}


def simulate_full(param: Parametrization, K: int, M: int, eta_qk: float, eta_ov: float, t_eval, dt: float, *,
                  state: State, method: Literal["gd", "rk4"] = "gd") -> FullTrajectory:
    r"""Run the full-matrix flow from ``state`` and record observables at ``t_eval`` (multiples of ``dt``).

    ``method="gd"``: :math:`W \leftarrow W - \eta\,dt\,\nabla_W\mathcal L` (gradient descent, the Euler scheme);
    ``"rk4"``: one classical Runge-Kutta step of the flow per ``dt`` (:mod:`simulation.integrators`).
    A state that turns non-finite (a step too large for the rates) gives ``success`` False and NaN from there.
    """
    from simulation.integrators import INTEGRATORS
    from simulation.systems import full_from_state

    p = _check_param(param)
    if method not in ("gd", "rk4"):
        raise ValueError(f"method {method!r}: must be 'gd' or 'rk4'")
    n_at = steps_for_times(t_eval, dt)
    system = full_from_state(p, K, M, eta_qk, eta_ov, state)
    run = INTEGRATORS[method](system, n_at * dt, dt=dt)
    ob = system.observe(run.y)
    return FullTrajectory(str(p), n_at * dt, ob["u"], ob["v"], ob["p"], ob["loss"], ob["u_spread"], ob["v_spread"],
                          ob["p_spread"], ob["asym_ov"], ob["asym_qk"], dt=dt, method=method, success=bool(run.success),
                          message=run.message)


__all__ = ["State", "balanced_state", "random_state", "effective", "PopulationGradient", "autograd_gradients",
           "symmetric_projection_distance", "FullTrajectory", "simulate_full", "steps_for_times"]
