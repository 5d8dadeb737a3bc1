r"""Exact reduced training maps of element-wise optimizers on the symmetric set (:mod:`theory.optimizer_orbits`).

State: one value per orbit of parameter entries, ``w (n,)``, and per optimizer buffer one value per orbit
(:data:`OPTIMIZERS`). Each step computes the per-entry orbit gradients ``g (n,)`` from the generated
:mod:`simulation.generated_optim` and applies the optimizer's element-wise update, with the learning rate
of the orbit's circuit: :math:`\eta_{OV}\,dt` on OV orbits, :math:`\eta_{QK}\,dt` on QK orbits; step ``n``
sits at time :math:`t = n\,dt`. Because the update of every entry of an orbit is the same function of the
same numbers, this *is* torch's full-matrix training from the symmetric start, to rounding, for as long as
the full run stays on the symmetric set (tests/unit/simulation/test_optimizer_maps.py).

Optimizers (torch's definitions; ``wd`` = weight decay, ``b1, b2`` = betas, step counter ``n >= 1``):

``gd``        :math:`w \mathrel{-}= \ell\,(g + wd\,w)`
``momentum``  heavy ball (``torch.optim.SGD(momentum=b1)``): :math:`m = b_1 m + g'` (:math:`m_1 = g'`),
              :math:`w \mathrel{-}= \ell\,m`, :math:`g' = g + wd\,w`
``nesterov``  as ``momentum`` with the step :math:`g' + b_1 m` (``nesterov=True``)
``adam``      ``torch.optim.Adam`` (coupled L2 ``wd``): :math:`m = b_1 m + (1-b_1)g'`,
              :math:`s = b_2 s + (1-b_2)g'^2`, :math:`w \mathrel{-}= \frac{\ell}{1-b_1^n}\,
              m/(\sqrt{s}/\sqrt{1-b_2^n} + \varepsilon)`
``adamw``     ``torch.optim.AdamW``: :math:`w \mathrel{*}= 1 - \ell\,wd`, then Adam's step with :math:`g' = g`
``sign``      sign descent, Adam's :math:`b_1 = b_2 = 0,\ \varepsilon \to 0` limit: :math:`w \mathrel{-}= \ell\,
              \mathrm{sign}(g)` (decoupled ``wd`` as AdamW)

Everything here is element-wise, so the same :meth:`Optimizer.step` runs on orbit vectors and on
flattened full matrices (what :mod:`simulation.transverse` differentiates, in torch).
"""

from __future__ import annotations

from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulation import generated_optim as gen
from theory.parametrization import Parametrization


@dataclass(frozen=True)
class OptimizerSpec:
    """Hyper-parameters of one element-wise optimizer (:data:`OPTIMIZERS` names ``name``)."""

    name: str = "adam"
    beta1: float = ADAM_BETAS[0]
    beta2: float = ADAM_BETAS[1]
    eps: float = ADAM_EPS
    weight_decay: float = 0.0

    def __post_init__(self):
        if self.name not in OPTIMIZERS:
            raise ValueError(f"optimizer {self.name!r}: must be one of {', '.join(OPTIMIZERS)}")

    @property
    def optimizer(self) -> Optimizer:
        return OPTIMIZERS[self.name]

    def as_json(self) -> dict[str, Any]:
        used = self.optimizer.hyper
        return {"name": self.name} | {k: getattr(self, k) for k in used}


def _xp(a):
    """numpy or torch namespace of ``a`` (the steps run on both)."""
    return np if isinstance(a, (np.ndarray, float, int, np.floating)) else __import__("torch")


def _sqrt(x):
    xp = _xp(x)
    if xp is np:
        return np.sqrt(x)
    pos = x > 0
    return xp.where(pos, xp.sqrt(xp.where(pos, x, xp.ones_like(x))), xp.zeros_like(x))  # finite tangent at 0


def _sign(x):
    return _xp(x).sign(x)


def _gd(w, g, st, lr, h, n):
    return w - lr * (g + h.weight_decay * w), st


def _heavy_ball(nesterov: bool):
    def step(w, g, st, lr, h, n):
        g = g + h.weight_decay * w
        m = g if n == 1 else h.beta1 * st["m"] + g
        d = g + h.beta1 * m if nesterov else m
        return w - lr * d, {"m": m}
    return step


def _adam(decoupled: bool):
    def step(w, g, st, lr, h, n):
        if decoupled:
            w = w * (1 - lr * h.weight_decay)
        else:
            g = g + h.weight_decay * w
        m = st["m"] + (1 - h.beta1) * (g - st["m"])          # torch: exp_avg.lerp_(grad, 1 - beta1)
        s = h.beta2 * st["s"] + (1 - h.beta2) * g * g
        bc1, bc2 = 1 - h.beta1 ** n, 1 - h.beta2 ** n
        denom = _sqrt(s) / bc2 ** 0.5 + h.eps
        return w - (lr / bc1) * m / denom, {"m": m, "s": s}
    return step


def _sign_step(w, g, st, lr, h, n):
    return w * (1 - lr * h.weight_decay) - lr * _sign(g), st


@dataclass(frozen=True)
class Optimizer:
    """One registry entry: element-wise ``step(w, g, state, lr, spec, n) -> (w, state)``, its buffers, hyper-parameters."""

    name: str
    step: Callable
    buffers: tuple[str, ...]
    hyper: tuple[str, ...]
    description: str
    torch_name: str | None = None   # torch.optim class this matches (None: no torch counterpart)
    torch_kwargs: Callable[[OptimizerSpec], dict] = field(default=lambda s: {})


OPTIMIZERS: dict[str, Optimizer] = {o.name: o for o in (
    Optimizer("gd", _gd, (), ("weight_decay",), "gradient descent", "SGD",
              lambda s: {"weight_decay": s.weight_decay}),
    Optimizer("momentum", _heavy_ball(False), ("m",), ("beta1", "weight_decay"), "heavy-ball momentum", "SGD",
              lambda s: {"momentum": s.beta1, "weight_decay": s.weight_decay}),
    Optimizer("nesterov", _heavy_ball(True), ("m",), ("beta1", "weight_decay"), "Nesterov momentum", "SGD",
              lambda s: {"momentum": s.beta1, "nesterov": True, "weight_decay": s.weight_decay}),
    Optimizer("adam", _adam(False), ("m", "s"), ("beta1", "beta2", "eps", "weight_decay"),
              "Adam (coupled L2 weight decay)", "Adam",
              lambda s: {"betas": (s.beta1, s.beta2), "eps": s.eps, "weight_decay": s.weight_decay}),
    Optimizer("adamw", _adam(True), ("m", "s"), ("beta1", "beta2", "eps", "weight_decay"),
              "AdamW (decoupled weight decay)", "AdamW",
              lambda s: {"betas": (s.beta1, s.beta2), "eps": s.eps, "weight_decay": s.weight_decay}),
    Optimizer("sign", _sign_step, (), ("weight_decay",), "sign descent (Adam's beta = 0, eps -> 0 limit)"),
)}
"""Every element-wise optimizer qkov reduces exactly (one declaration each)."""


def orbit_lr(param: str, eta_qk: float, eta_ov: float, dt: float) -> np.ndarray:
    r"""Per-orbit learning rate ``(n,)``: :math:`\eta_{OV}dt` on OV orbits, :math:`\eta_{QK}dt` on QK ones."""
    return np.array([(eta_ov if c == "OV" else eta_qk) * dt for c in gen.ORBIT_CIRCUITS[param]])


@dataclass(frozen=True)
class OrbitRun:
    r"""One reduced-map run: ``t (T,)``, orbit values ``w (T, n)`` (names ``orbit_names``), observables ``(T,)``,
    and the optimizer state at the last step."""

    param: str
    optimizer: dict
    orbit_names: tuple[str, ...]
    t: np.ndarray
    step: np.ndarray
    w: np.ndarray
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    residual: np.ndarray
    loss: np.ndarray

    def as_json(self) -> dict:
        return {"param": self.param, "optimizer": self.optimizer, "t": self.t.tolist(), "u": self.u.tolist(),
                "v": self.v.tolist(), "p": self.p.tolist(), "residual": self.residual.tolist(),
                "loss": self.loss.tolist()}


def iterate_orbit_map(param: str, spec: OptimizerSpec, *, K: int, M: int, eta_qk: float, eta_ov: float, dt: float,
                      steps: int, u0: float, v0: float):
    """Yield ``(n, w, state)`` for ``n = 0..steps``: orbit values ``w (n_orbits,)`` and buffers ``{name: (n_orbits,)}``
    after step ``n`` (``n = 0``: MODEL.md's start, zero buffers). The arrays yielded are fresh each step."""
    param = str(Parametrization(param))
    if steps < 0:
        raise ValueError(f"steps {steps}: must be >= 0")
    w = np.asarray(gen.ORBIT_INIT[param](u0, v0, K), dtype=np.float64)
    lr = orbit_lr(param, eta_qk, eta_ov, dt)
    opt = spec.optimizer
    st = {b: np.zeros_like(w) for b in opt.buffers}
    grad = gen.ORBIT_GRAD[param]
    yield 0, w, st
    for n in range(1, steps + 1):
        g = np.asarray(grad(*w, K, M), dtype=np.float64)  # type: ignore[operator]  # generated table of callables
        w, st = opt.step(w, g, st, lr, spec, n)
        yield n, w, st


def run_orbit_map(param: str, spec: OptimizerSpec, *, K: int, M: int, eta_qk: float, eta_ov: float, dt: float,
                  steps: int, u0: float, v0: float, record: np.ndarray | None = None) -> OrbitRun:
    """Run ``steps`` steps of ``spec`` on the orbit values from MODEL.md's start; record at the step numbers
    ``record`` (default every step, 0 included)."""
    param = str(Parametrization(param))
    want = set((np.arange(steps + 1) if record is None else np.asarray(record, dtype=int)).tolist())
    ws, idx = [], []
    for n, w, _ in iterate_orbit_map(param, spec, K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, dt=dt, steps=steps,
                                     u0=u0, v0=v0):
        if n in want:
            ws.append(w); idx.append(n)
    W = np.array(ws).reshape(len(ws), -1)
    obs = np.array([gen.ORBIT_OBS[param](*x, K, M) for x in W]).reshape(len(ws), 5)  # type: ignore[operator]
    steps_arr = np.asarray(idx)
    return OrbitRun(param, spec.as_json(), tuple(gen.ORBIT_NAMES[param]), steps_arr * dt, steps_arr, W,
                    *(obs[:, i] for i in range(5)))


def simulate_optimizer(param: str, *, K: int, M: int, eta_qk: float, eta_ov: float, u0: float, v0: float,
                       t, dt: float, optimizer: str = "adam", beta1: float = ADAM_BETAS[0], beta2: float = ADAM_BETAS[1],
                       eps: float = ADAM_EPS, weight_decay: float = 0.0) -> OrbitRun:
    """The reduced map at the output times ``t`` (multiples of ``dt``): the entry ``qkov simulate --optimizer`` calls."""
    spec = OptimizerSpec(optimizer, beta1, beta2, eps, weight_decay)
    t = np.atleast_1d(np.asarray(t, dtype=float))
    n = np.rint(t / dt).astype(int)
    return run_orbit_map(param, spec, K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, dt=dt, steps=int(n.max()),
                         u0=u0, v0=v0, record=n)


# ---- the orbits as entries of the full matrices ----------------------------------------------------------

def orbit_masks(param: str, K: int, M: int) -> dict[str, dict[str, np.ndarray]]:
    """``{parameter: {orbit: bool mask of its entries}}``, OV's then QK's, each from its circuit kind
    (:meth:`theory.parametrization.CircuitKind.orbit_masks`); entries in no mask are the frozen ones (always 0)."""
    p = Parametrization(param)
    return {**p.ov.kind.orbit_masks("OV", K, M), **p.qk.kind.orbit_masks("QK", K, M)}


def embed(param: str, w: np.ndarray, K: int, M: int) -> dict[str, np.ndarray]:
    """Full matrices ``{parameter: array}`` of the symmetric point with orbit values ``w (n,)``."""
    masks = orbit_masks(param, K, M)
    vals = dict(zip(gen.ORBIT_NAMES[param], np.asarray(w, dtype=np.float64)))
    out = {}
    for name, ms in masks.items():
        W = np.zeros(next(iter(ms.values())).shape)
        for orb, m in ms.items():
            W[m] = vals[orb]
        out[name] = W
    return out


def symmetric_projection(param: str, mats: dict[str, np.ndarray], K: int, M: int) -> tuple[np.ndarray, dict]:
    """Orbit averages ``w (n,)`` of full matrices and the projected matrices (frozen entries set to 0)."""
    masks = orbit_masks(param, K, M)
    w = np.array([mats[pn][masks[pn][on]].mean() for on, pn in zip(gen.ORBIT_NAMES[param], gen.ORBIT_PARAMS[param])])
    return w, embed(param, w, K, M)


def symmetric_distance(param: str, mats: dict[str, np.ndarray], K: int, M: int) -> float:
    r"""Distance from the symmetric set, relative: :math:`\|W - \Pi W\|_F / \|W\|_F` over all parameters."""
    _, proj = symmetric_projection(param, mats, K, M)
    num = sum(float(((mats[k] - proj[k]) ** 2).sum()) for k in proj)
    den = sum(float((mats[k] ** 2).sum()) for k in proj)
    return (num / den) ** 0.5 if den > 0 else 0.0


def map_params() -> tuple[str, ...]:
    """The parametrizations the reduced optimizer maps can run: their kinds declare optimizer orbits
    (:func:`theory.parametrization.orbit_map_params`) and :mod:`simulation.generated_optim` holds their generated
    maps (``python -m theory.codegen_optim`` writes them), in registry order."""
    from theory.parametrization import orbit_map_params

    return tuple(p for p in orbit_map_params() if _generated(p))


def _generated(name: str) -> bool:
    """Both generated modules hold ``name``: the orbit maps and the reduced flow (the runs compare with it)."""
    from simulation import generated

    return name in gen.ORBIT_GRAD and Parametrization(name) in generated.STATE_NAMES


def check_map(name: str) -> str:
    """``name`` if :func:`map_params` holds it, else ``ValueError`` (one line): a kind with optimizer orbits whose maps
    or reduced flow were not generated is refused when a run is planned, not with ``KeyError`` inside it."""
    if not _generated(name):
        raise ValueError("its kinds declare optimizer orbits but simulation/generated_optim.py or "
                         f"simulation/generated.py has no code for it (maps: {', '.join(map_params())}): run "
                         "python -m theory.codegen and python -m theory.codegen_optim")
    return name


__all__ = ["iterate_orbit_map", "map_params", "check_map",
    "OPTIMIZERS",
    "Optimizer",
    "OptimizerSpec",
    "OrbitRun",
    "embed",
    "orbit_lr",
    "orbit_masks",
    "run_orbit_map",
    "simulate_optimizer",
    "symmetric_distance",
    "symmetric_projection",
]
