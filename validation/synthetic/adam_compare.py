r"""Adam against its derived limit flows (:mod:`theory.adam`), and GD against Adam at matched loss.

* :func:`train_symmetric` — full-batch training of MODEL.md's population from the symmetric start
  (factorized OV in the class-indexed basis), with GD or Adam(:math:`\beta_1, \beta_2`, :math:`\varepsilon`),
  logging ``t, u, v, loss`` and the residual :math:`1-p = (M+1)/(e^v + M + 1)` computed from ``v``
  (float64 cannot resolve :math:`1-p` below :math:`10^{-16}` from ``p``; on the symmetric line the two are equal).
* :func:`sign_law` — the exact sign-descent trajectory ``u(t), v(t)`` of :func:`theory.adam.sign_laws`.
* :func:`residual_vs_loss_data` — per ratio, :math:`1-p` against the loss under GD and under Adam, plus the
  derived sign-descent curve; :func:`plot_residual_vs_loss` draws them side by side (PNG + SVG).

Clock: Adam with lr :math:`\eta_c\,dt` and :math:`\beta_1 = \beta_2 = 0` is the Euler step of
:math:`\dot w = -\eta_c\,g/(|g| + \varepsilon)`; step ``n`` is time :math:`t = n\,dt` (as for GD).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from validation.synthetic.data import population_batch
from validation.synthetic.models import symmetric_model
from validation.synthetic.observables import measure
from validation.synthetic.trainer import make_circuit_optimizer, train


@dataclass
class Trajectory:
    """Logged columns ``t, u, v, loss, residual, u_spread, v_spread`` (float64 arrays) of one run."""

    param: str
    ratio: float
    optimizer: str
    eps: float
    cols: dict[str, np.ndarray] = field(default_factory=dict)


def residual_of_v(v: np.ndarray, M: int) -> np.ndarray:
    r""":math:`1 - p = (M+1)/(e^v + M + 1)` on the symmetric line (overflow-safe)."""
    v = np.asarray(v, dtype=np.float64)
    return np.exp(np.log(M + 1.0) - np.logaddexp(v, np.log(M + 1.0)))


def log_residual_of_v(v: np.ndarray, M: int) -> np.ndarray:
    r""":math:`\log(1-p) = \log(M+1) - \log(e^v + M + 1)` (no underflow for large ``v``)."""
    return np.log(M + 1.0) - np.logaddexp(np.asarray(v, dtype=np.float64), np.log(M + 1.0))


def train_symmetric(param: str, ratio: float, *, optimizer: str = "adam", eps: float = 1e-8,
                    betas: tuple[float, float] = (0.0, 0.0), K: int = 4, M: int = 8, u0: float = 0.5,
                    v0: float = 0.5, eta_ov: float = 1.0, dt: float = 0.01, steps: int = 400,
                    log_every: int = 10, stop_loss: float | None = None) -> Trajectory:
    """Train from MODEL.md's symmetric start (float64) with ``"gd"`` or ``"adam"`` (AdamW, no decay)."""
    model = symmetric_model(param, K, M, u0, v0, ov_basis="class", dtype=torch.float64)
    pop = population_batch(K, M, torch.float64)
    if optimizer == "adam":
        opt = make_circuit_optimizer(model, "adamw", eta_ov=eta_ov, ratio=ratio, dt=dt, weight_decay=0.0,
                                     betas=betas, eps=eps)
    elif optimizer == "gd":
        opt = make_circuit_optimizer(model, "gd", eta_ov=eta_ov, ratio=ratio, dt=dt)
    else:
        raise ValueError(f"optimizer {optimizer!r}: must be gd or adam")
    log = train(model, lambda step: pop, opt, steps, observe=lambda m: measure(m, K, M), log_every=log_every,
                dt=dt, progress=False, stop_loss=stop_loss)
    cols = log.arrays()
    keep = {k: cols[k] for k in ("t", "u", "v", "loss", "u_spread", "v_spread")}
    keep["residual"] = residual_of_v(cols["v"], M)
    return Trajectory(param, ratio, optimizer, eps if optimizer == "adam" else 0.0, keep)


def sign_law(param: str, t: np.ndarray, ratio: float, *, K: int = 4, u0: float = 0.5, v0: float = 0.5,
             eta_ov: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Derived sign-descent ``u(t), v(t)`` (:func:`theory.adam.sign_laws`, generated into :mod:`simulation.generated`)."""
    from simulation import generated

    fu, fv = generated.SIGN_LAWS[param]
    t = np.asarray(t, dtype=np.float64)
    args = (t, eta_ov, ratio * eta_ov, u0, v0, K)
    return np.broadcast_to(fu(*args), t.shape).astype(float), np.broadcast_to(fv(*args), t.shape).astype(float)


def loss_on_line(u: np.ndarray, v: np.ndarray, K: int, M: int) -> np.ndarray:
    r""":math:`\log(1 + (K-1)e^{-p u})` with :math:`p = 1 - (1-p)` from ``v``."""
    p = 1.0 - residual_of_v(v, M)
    return np.log1p((K - 1) * np.exp(-p * np.asarray(u)))


def residual_vs_loss_data(params: tuple[str, ...] = ("CACO", "FAFO"), ratios: tuple[float, ...] = (1.0, 3.0, 10.0),
                          *, eps: float = 1e-8, K: int = 4, M: int = 8, dt: float = 0.01, steps_adam: int = 600,
                          dt_gd: float = 0.2, steps_gd: int = 3000, stop_loss: float = 1e-4) -> dict:
    """Per (param, ratio): GD and Adam(0, 0, ``eps``) trajectories and the sign-descent law at the same losses.

    Returns ``{"params", "ratios", "eps", "runs": {(param, ratio): {"gd": Trajectory, "adam": Trajectory,
    "law": {"loss", "residual"}}}}``.
    """
    runs = {}
    for param in params:
        for r in ratios:
            gd = train_symmetric(param, r, optimizer="gd", K=K, M=M, dt=dt_gd, steps=steps_gd, log_every=20,
                                 stop_loss=stop_loss)
            adam = train_symmetric(param, r, optimizer="adam", eps=eps, K=K, M=M, dt=dt, steps=steps_adam,
                                   log_every=2, stop_loss=stop_loss)
            t = np.linspace(0.0, adam.cols["t"][-1], 400)
            u, v = sign_law(param, t, r, K=K)
            runs[(param, r)] = {"gd": gd, "adam": adam,
                                "law": {"loss": loss_on_line(u, v, K, M), "residual": residual_of_v(v, M)}}
    return {"params": params, "ratios": ratios, "eps": eps, "runs": runs}


def plot_residual_vs_loss(data: dict, out_stem: Path | str) -> list[Path]:
    """Residual vs matched loss, one row per param, GD left and Adam right; writes ``out_stem``.png/.svg."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params, ratios = data["params"], data["ratios"]
    fig, axes = plt.subplots(len(params), 2, figsize=(9, 3.4 * len(params)), squeeze=False, sharey="row")
    colors = plt.cm.viridis(np.linspace(0, 0.85, len(ratios)))
    for i, param in enumerate(params):
        for r, col in zip(ratios, colors):
            run = data["runs"][(param, r)]
            g, a, law = run["gd"].cols, run["adam"].cols, run["law"]
            axes[i, 0].loglog(g["loss"], g["residual"], color=col, label=f"ratio {r:g}")
            axes[i, 1].loglog(a["loss"], a["residual"], color=col, label=f"ratio {r:g} (Adam)")
            axes[i, 1].loglog(law["loss"], law["residual"], color=col, ls=":", lw=1)
        axes[i, 0].set_title(f"{param}: gradient descent", fontsize=9)
        axes[i, 1].set_title(f"{param}: Adam(beta=0, eps={data['eps']:g})\ndotted: derived sign-descent law", fontsize=9)
        for ax in axes[i]:
            ax.invert_xaxis()
            ax.set_xlabel("population loss L")
            ax.grid(True, which="both", alpha=0.3)
        axes[i, 0].set_ylabel("attention residual 1 - p")
        axes[i, 1].set_ylim(1e-30, 2.0)
        axes[i, 0].legend(fontsize=8)
    fig.tight_layout()
    stem = Path(out_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for p in paths:
        fig.savefig(p, dpi=120)
    plt.close(fig)
    return paths


def pattern_gradients(model, K: int, M: int):
    """Gradients of the entries ``u`` and ``v`` are read from (each analytically nonzero on the symmetric set).

    OV: the distinct columns of ``W_OV``, or all of ``W_O`` and the distinct columns of ``W_V``; QK: the query
    column of ``W_KQ``, or ``W_K`` and the query column of ``W_Q`` (rank one). Every other entry has zero
    gradient analytically (rounding-level in float64) and does not enter ``u`` or ``v``.
    """
    q = K + M
    ov = [model.W_O.grad, model.W_V.grad[:, :K]] if model.ov_factorized else [model.W_OV.grad[:, :K]]
    qk = [model.W_K.grad, model.W_Q.grad[:, q]] if model.qk_factorized else [model.W_KQ.grad[:, q]]
    return {"ov": ov, "qk": qk}


def eps_sweep(param: str = "CACO", ratio: float = 3.0, eps_values: tuple[float, ...] = (1e-14, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0),
              *, K: int = 4, M: int = 8, dt: float = 0.01, steps: int = 200, u0: float = 0.5, v0: float = 0.5,
              betas: tuple[float, float] = (0.0, 0.0)) -> list[dict]:
    r"""Adam at each ``eps``: final ``u, v`` against the sign law, and the regime indicator.

    Per row: ``eps``, ``u``, ``v``, ``u_law``, ``v_law`` (sign descent at :math:`t = n\,dt`), ``g_qk``, ``g_ov``
    (the smallest moving-entry gradient of each circuit at the end; the sign law holds while these are
    :math:`\gg \varepsilon`, the GD law once they are :math:`\ll \varepsilon`) and ``loss``, ``residual``.
    """
    out = []
    t_end = steps * dt
    u_law, v_law = (float(x) for x in sign_law(param, np.array(t_end), ratio, K=K, u0=u0, v0=v0))
    for eps in eps_values:
        model = symmetric_model(param, K, M, u0, v0, ov_basis="class", dtype=torch.float64)
        pop = population_batch(K, M, torch.float64)
        opt = make_circuit_optimizer(model, "adamw", eta_ov=1.0, ratio=ratio, dt=dt, weight_decay=0.0,
                                     betas=betas, eps=eps)
        gmin = {}
        for n in range(steps):
            opt.zero_grad()
            logits, _ = model(pop.x)
            torch.nn.functional.cross_entropy(logits, pop.y).backward()
            if n == steps - 1:
                for circuit, gs in pattern_gradients(model, K, M).items():
                    gmin[circuit] = min(float(g.abs().min()) for g in gs)
            opt.step()
        obs = measure(model, K, M)
        out.append({"eps": eps, "u": obs["u"], "v": obs["v"], "u_law": u_law, "v_law": v_law,
                    "g_qk": gmin["qk"], "g_ov": gmin["ov"], "loss": obs["loss"],
                    "residual": float(residual_of_v(obs["v"], M))})
    return out
