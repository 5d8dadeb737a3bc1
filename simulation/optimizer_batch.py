r"""The reduced optimizer maps of :mod:`simulation.optimizer_maps`, batched over configurations.

``C`` configurations of one parametrization and one optimizer (each with its own ``K, M, eta_qk, eta_ov, dt``,
``beta1, beta2, eps, weight_decay`` and start ``u0, v0``) run as one map on orbit arrays ``w (n, C)``: the
generated orbit gradients of :mod:`simulation.generated_optim` are element-wise numpy code, so they take a
column per configuration, and :data:`simulation.optimizer_maps.OPTIMIZERS`' steps are element-wise too and run
unchanged with hyper-parameters of shape ``(C,)``. One numpy call per operation for all ``C`` configurations
replaces ``C`` calls on 5-10-element arrays: what phase diagrams over ratio x lr x betas x start need.

Same operations in the same order as the per-configuration loop (:func:`simulation.optimizer_maps.run_orbit_map`),
so the two agree to rounding (tests/unit/simulation/test_optimizer_batch.py: 200 Adam configurations, 1e-10).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from simulation import generated_optim as gen
from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS
from simulation.optimizer_maps import OPTIMIZERS
from theory.parametrization import Parametrization

HYPER_DEFAULTS = {"beta1": ADAM_BETAS[0], "beta2": ADAM_BETAS[1], "eps": ADAM_EPS, "weight_decay": 0.0}


@dataclass(frozen=True)
class OrbitRuns:
    r"""``C`` reduced-map runs on common step numbers: ``step (T,)``, ``t (T, C)`` (:math:`n\,dt`), orbit values
    ``w (T, n, C)`` (names ``orbit_names``), observables ``u, v, p, residual, loss`` each ``(T, C)``; the
    configurations ``config`` as arrays ``(C,)``."""

    param: str
    optimizer: str
    orbit_names: tuple[str, ...]
    step: np.ndarray
    t: np.ndarray
    w: np.ndarray
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    residual: np.ndarray
    loss: np.ndarray
    config: dict

    @property
    def size(self) -> int:
        return self.w.shape[2]


def _columns(values, C: int) -> np.ndarray:
    """A generated tuple (arrays ``(C,)`` or constants) as ``(n, C)`` float64."""
    return np.stack([np.broadcast_to(np.asarray(x, dtype=np.float64), (C,)) for x in values])


def run_orbit_maps(param: str, optimizer: str = "adam", *, K, M, eta_qk, eta_ov, dt, steps: int, u0, v0,
                   record=None, **hyper) -> OrbitRuns:
    r"""Run ``steps`` steps of ``optimizer`` for every configuration at once.

    Args:
        param: a registered parametrization; optimizer: a name of :data:`~simulation.optimizer_maps.OPTIMIZERS`.
        K, M, eta_qk, eta_ov, dt, u0, v0, and the optimizer's hyper-parameters (``beta1, beta2, eps,
            weight_decay``; defaults as :class:`~simulation.optimizer_maps.OptimizerSpec`): scalars or arrays
            that broadcast to ``(C,)``.
        steps: common number of steps (>= 0); record: step numbers to record (default all, 0 included).

    Returns:
        :class:`OrbitRuns` with ``w (T, n_orbits, C)`` and observables ``(T, C)``.
    """
    param = str(Parametrization(param))
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer {optimizer!r}: must be one of {', '.join(OPTIMIZERS)}")
    if steps < 0:
        raise ValueError(f"steps {steps}: must be >= 0")
    unknown = set(hyper) - set(HYPER_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown hyper-parameter(s) {', '.join(sorted(unknown))}: allowed {', '.join(HYPER_DEFAULTS)}")
    opt = OPTIMIZERS[optimizer]
    names = ("K", "M", "eta_qk", "eta_ov", "dt", "u0", "v0", *HYPER_DEFAULTS)
    given = [K, M, eta_qk, eta_ov, dt, u0, v0, *(hyper.get(k, v) for k, v in HYPER_DEFAULTS.items())]
    arrays = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in given))
    cfg = {k: a.ravel().copy() for k, a in zip(names, arrays)}
    C = cfg["K"].size
    h = SimpleNamespace(**{k: cfg[k] for k in HYPER_DEFAULTS})
    w = _columns(gen.ORBIT_INIT[param](cfg["u0"], cfg["v0"], cfg["K"]), C)
    circuits = gen.ORBIT_CIRCUITS[param]
    lr = np.stack([(cfg["eta_ov"] if c == "OV" else cfg["eta_qk"]) * cfg["dt"] for c in circuits])
    st = {b: np.zeros_like(w) for b in opt.buffers}
    grad = gen.ORBIT_GRAD[param]
    want = np.arange(steps + 1) if record is None else np.unique(np.asarray(record, dtype=int))
    want = want[(want >= 0) & (want <= steps)]
    keep = set(want.tolist())
    ws = [w.copy()] if 0 in keep else []
    Kc, Mc = cfg["K"], cfg["M"]
    for n in range(1, steps + 1):
        g = _columns(grad(*w, Kc, Mc), C)  # type: ignore[operator]  # generated table of callables
        w, st = opt.step(w, g, st, lr, h, n)
        if n in keep:
            ws.append(w.copy())
    W = np.array(ws).reshape(len(ws), len(circuits), C)
    obs = gen.ORBIT_OBS[param](*(W[:, i, :] for i in range(W.shape[1])), Kc, Mc)  # type: ignore[operator]
    u, v, p, residual, loss = (np.broadcast_to(np.asarray(o, dtype=np.float64), (len(ws), C)).copy() for o in obs)
    return OrbitRuns(param, optimizer, tuple(gen.ORBIT_NAMES[param]), want, want[:, None] * cfg["dt"][None, :], W,
                     u, v, p, residual, loss, cfg)


__all__ = ["OrbitRuns", "run_orbit_maps"]
