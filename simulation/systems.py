r"""The systems :func:`simulation.solve` integrates, as flat states with one right-hand side each.

A :class:`System` is :math:`\dot y = f(y)` on a flat state ``y (n,)`` with its start ``y0`` and a map from
states ``(n, T)`` to MODEL.md's observables ``u, v, p, residual (= 1 - p), loss`` ``(T,)``. :data:`SYSTEMS`:

``"reduced"`` — the derived reduced flow of a parametrization (:mod:`simulation.generated`), from MODEL.md's start.

``"full"`` — gradient flow on the full matrices (:mod:`simulation.full_matrix`), every factor of the
parametrization's kinds flattened into ``y``; from the balanced start or seeded Gaussian matrices.

``"paper"`` — the paper's reduced equations (:func:`theory.paper.paper_system`) with its own parameters
``m, n, b, M_out`` (default the identification with MODEL.md: ``m = 1``, ``n = M + 1``, ``b = 1``,
``M_out = K``) and its own clock: ``clock="tau"`` reads the times as the paper's
:math:`\tau = t\min(\eta_{QK}, \eta_{OV})` (what its RK4 step of 10 is measured in). So the paper's setting
(``m=5, n=50, b=50, M_out=20``, any ratio, 0.1 included) runs as written, without rescaling rates.
Its state is ``(mu_OV, mu_QK)``, reported as ``u, v``. Collapsed circuits only: the paper's equations are CACO's.

A new system is one builder ``f(param, K, M, eta_qk, eta_ov, u0, v0, **options) -> System`` added with
:func:`register_system`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from theory.parametrization import BASELINE, Parametrization

Array = np.ndarray


@dataclass(frozen=True)
class System:
    r""":math:`\dot y = f(y)`: ``rhs(y)`` for ``y (n,)`` or a batch ``(n, B)`` (``vectorized``), its start, its observables."""

    name: str
    param: Parametrization
    state_names: tuple[str, ...]
    y0: Array
    rhs: Callable[[Array], Array]
    observe: Callable[[Array], dict[str, Array]]
    jacobian: Callable[[Array], Array] | None = None
    vectorized: bool = True
    generated_rhs: Callable[..., tuple] | None = None
    """The generated ``f(*y, *rhs_params) -> tuple`` behind ``rhs`` where there is one (the reduced flows): the
    small-batch path (:mod:`simulation.scalar`) calls it without ``rhs``'s broadcasting."""
    rhs_params: tuple[float, ...] = ()

    def rhs_batch(self, y: Array, idx: Array | None = None) -> Array:
        """``rhs`` of a batch ``(n, B)``, column by column when the system is not vectorised."""
        if self.vectorized:
            return self.rhs(y)
        return np.stack([self.rhs(y[:, b]) for b in range(y.shape[1])], axis=1)


Builder = Callable[..., System]
SYSTEMS: dict[str, Builder] = {}
"""system name -> builder ``(param, K, M, eta_qk, eta_ov, u0, v0, **options) -> System``."""


def register_system(name: str) -> Callable[[Builder], Builder]:
    """Decorator adding a system builder to :data:`SYSTEMS`."""
    def deco(fn: Builder) -> Builder:
        SYSTEMS[name] = fn
        return fn
    return deco


@register_system("reduced")
def reduced(param, K, M, eta_qk, eta_ov, u0, v0, *, y0: Array | None = None) -> System:
    """The generated reduced flow of ``param`` from MODEL.md's start (or the reduced state ``y0``)."""
    from simulation.numeric import numeric_system

    ns = numeric_system(param)
    start = (ns.initial_state(np.asarray(float(u0)), np.asarray(float(v0)), np.asarray(float(K)))
             if y0 is None else np.asarray(y0, dtype=float))
    pars = (float(K), float(M), float(eta_qk), float(eta_ov))
    return System("reduced", Parametrization(param), ns.state_names, start,
                  lambda y: ns.rhs(y, *pars), lambda Y: ns.observables(Y, pars[0], pars[1]),
                  lambda y: ns.jacobian(y, *pars), generated_rhs=ns.generated_rhs, rhs_params=pars)


def _pack(state: dict[str, Array], names: tuple[str, ...]) -> Array:
    return np.concatenate([state[k].ravel() for k in names])


def full_from_state(param, K: int, M: int, eta_qk: float, eta_ov: float, state: dict[str, Array]) -> System:
    r"""Gradient flow :math:`\dot W = -\eta\nabla_W\mathcal L` on the factors of ``state`` (a dict of matrices)."""
    from simulation.full_matrix import PopulationGradient, effective
    from simulation.model_matrices import observables

    p = Parametrization(param)
    names = p.qk.factors + p.ov.factors
    shapes = [np.shape(state[k]) for k in names]
    sizes = [int(np.prod(s)) for s in shapes]
    rates = np.concatenate([np.full(n, eta_qk if k in p.qk.factors else eta_ov) for k, n in zip(names, sizes, strict=True)])
    pg = PopulationGradient(K, M)
    cuts = np.cumsum(sizes)[:-1]

    def unpack(y: Array) -> dict[str, Array]:
        return {k: part.reshape(s) for k, part, s in zip(names, np.split(y, cuts), shapes, strict=True)}

    def rhs(y: Array) -> Array:
        _, g = pg.gradients(unpack(y), p)
        return -rates * _pack(g, names)

    def observe(Y: Array) -> dict[str, Array]:
        from simulation.full_matrix import symmetric_projection_distance

        rows = []
        for y in np.asarray(Y, dtype=float).T:
            W_KQ, W_OV = effective(unpack(y), p)
            ob = observables(W_KQ, W_OV, K, M)
            rows.append((ob.u, ob.v, ob.p, 1 - ob.p, ob.loss, ob.u_spread, ob.v_spread, ob.p_spread,
                         *symmetric_projection_distance(W_KQ, W_OV, K, M)))
        keys = ("u", "v", "p", "residual", "loss", "u_spread", "v_spread", "p_spread", "asym_ov", "asym_qk")
        arr = np.array(rows, dtype=float).reshape(-1, len(keys)).T
        return dict(zip(keys, arr, strict=True))

    state_names = tuple(f"{k}[{i}]" for k, n in zip(names, sizes, strict=True) for i in range(n))
    return System("full", p, state_names, _pack({k: np.asarray(v, float) for k, v in state.items()}, names), rhs,
                  observe, vectorized=False)


@register_system("full")
def full(param, K, M, eta_qk, eta_ov, u0, v0, *, init: str = "balanced", scale: float = 0.05, seed: int = 0,
         rank_qk: int | None = None, rank_ov: int | None = None) -> System:
    """Full matrices from the balanced start at ``(u0, v0)`` or (``init="random"``) Gaussian at ``scale``, ``seed``."""
    from simulation.full_matrix import balanced_state, random_state

    if init == "random":
        state = random_state(param, K, M, scale, seed, rank_qk=rank_qk, rank_ov=rank_ov)
    elif init == "balanced":
        state = balanced_state(param, K, M, u0, v0, rank_qk=rank_qk or 1, rank_ov=rank_ov)
    else:
        raise ValueError(f"init {init!r}: must be 'balanced' or 'random'")
    return full_from_state(param, K, M, eta_qk, eta_ov, state)


@register_system("paper")
def paper(param, K, M, eta_qk, eta_ov, u0, v0, *, m: float = 1.0, n: float | None = None, b: float = 1.0,
          M_out: float | None = None, clock: str = "t") -> System:
    r"""The paper's equations at ``(m, n, b, M_out)`` from :math:`\mu = (u_0, v_0)`, in time ``t`` or the paper's ``tau``."""
    from simulation import generated

    p = Parametrization(param)
    if p != BASELINE:
        raise ValueError(f"system 'paper': the paper's equations describe collapsed circuits ({BASELINE}) only, not {p}")
    if clock not in ("t", "tau"):
        raise ValueError(f"clock {clock!r}: must be 't' or 'tau' (the paper's t * min(eta))")
    pars = (float(m), float(M + 1 if n is None else n), float(b), float(K if M_out is None else M_out),
            float(eta_ov), float(eta_qk))
    scale = float(min(eta_qk, eta_ov)) if clock == "tau" else 1.0   # dy/dtau = f(y) / min(eta), as the paper's RK4

    paper_rhs: Callable[..., tuple] = generated.paper_rhs       # generated, untyped: (*state, *parameters)
    paper_attention: Callable[..., Array] = generated.paper_attention
    paper_loss: Callable[..., Array] = generated.paper_loss

    def rhs(y: Array) -> Array:
        return np.stack([np.broadcast_to(x, np.shape(y)[1:]) for x in paper_rhs(*y, *pars)]) / scale

    def observe(Y: Array) -> dict[str, Array]:
        att = np.broadcast_to(np.asarray(paper_attention(*Y, *pars), dtype=np.float64), Y.shape[1:]).copy()
        loss = np.broadcast_to(np.asarray(paper_loss(*Y, *pars), dtype=np.float64), Y.shape[1:]).copy()
        return {"u": Y[0], "v": Y[1], "p": att, "residual": 1 - att, "loss": loss}

    return System("paper", p, ("mu_OV", "mu_QK"), np.array([float(u0), float(v0)]), rhs, observe)


def system_options(name: str) -> frozenset[str]:
    """Keyword options the builder of system ``name`` accepts."""
    import inspect

    sig = inspect.signature(SYSTEMS[name])
    return frozenset(k for k, v in sig.parameters.items() if v.kind is inspect.Parameter.KEYWORD_ONLY)


__all__ = ["System", "SYSTEMS", "register_system", "reduced", "full", "full_from_state", "paper", "system_options"]
