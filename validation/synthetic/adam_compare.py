r"""Adam against its derived limit flows (:mod:`theory.adam`), and GD against Adam at matched loss.

* :func:`train_symmetric` — full-batch training of MODEL.md's population from the symmetric start
  (factorized OV in the class-indexed basis), with GD or Adam(:math:`\beta_1, \beta_2`, :math:`\varepsilon`),
  logging ``t, u, v, loss`` and, measured on the model (:func:`measured_state`), the attention residual
  :math:`1-p` (summed over the non-distinct positions, so resolved below :math:`10^{-16}`), the prediction and the
  distance from the symmetric set.
* :func:`sign_law` — the exact sign-descent trajectory ``u(t), v(t)`` of :func:`theory.adam.sign_laws`.
* :func:`residual_vs_loss_data` — per ratio, :math:`1-p` against the loss under GD and under Adam, plus the
  derived sign-descent curve; :func:`plot_residual_vs_loss` draws them side by side (PNG + SVG).

Clock: Adam with lr :math:`\eta_c\,dt` and :math:`\beta_1 = \beta_2 = 0` is the Euler step of
:math:`\dot w = -\eta_c\,g/(|g| + \varepsilon)`; step ``n`` is time :math:`t = n\,dt` (as for GD).
"""

from __future__ import annotations

from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import torch

from annotated_types import MinLen

from theory.parametrization import BASELINE, FULLY_FACTORIZED, PARAMETRIZATIONS, ParamName, Parametrization
from theory.spec import Ge, Le, PositiveFinite, Spec
from validation.synthetic.data import population_batch
from validation.synthetic.models import symmetric_model
from validation.synthetic.observables import measure
from validation.synthetic.trainer import make_circuit_optimizer, train


@dataclass
class OptimizerTrajectory:
    """Logged columns ``t, u, v, loss, residual, u_spread, v_spread`` (float64 arrays) of one run."""

    param: str
    ratio: float
    optimizer: str
    eps: float
    cols: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class AdamCompareConfig(Spec):
    """GD against Adam(0, 0, eps) at matched loss (:func:`residual_vs_loss_data`); ``seed`` is recorded only
    (population data from the symmetric start: the runs are deterministic)."""

    params: Annotated[tuple[ParamName, ...], MinLen(1)] = (BASELINE, FULLY_FACTORIZED)
    ratios: Annotated[tuple[PositiveFinite, ...], MinLen(1)] = (1.0, 3.0, 10.0)
    eps: PositiveFinite = ADAM_EPS
    K: Annotated[int, Ge(2), Le(100)] = 4
    M: Annotated[int, Ge(1), Le(100)] = 8
    dt: PositiveFinite = 0.01
    steps_adam: Annotated[int, Ge(1), Le(1_000_000)] = 600
    dt_gd: PositiveFinite = 0.4
    steps_gd: Annotated[int, Ge(1), Le(1_000_000)] = 1500
    stop_loss: PositiveFinite = 1e-4
    seed: Annotated[int, Ge(0)] = 0

    def data(self) -> dict:
        """Train it: :func:`residual_vs_loss_data` with these settings."""
        return residual_vs_loss_data(tuple(self.params), tuple(self.ratios), eps=self.eps, K=self.K, M=self.M,
                                     dt=self.dt, steps_adam=self.steps_adam, dt_gd=self.dt_gd,
                                     steps_gd=self.steps_gd, stop_loss=self.stop_loss)


def log_residual_of_v(v: np.ndarray, M: int) -> np.ndarray:
    r""":math:`\log(1-p)` on MODEL.md's symmetric line from ``v`` (generated from :mod:`theory.optimizer_orbits`,
    no underflow for large ``v``). For the derived *laws* only; trained runs record the measured residual."""
    from simulation.generated_optim import log_residual_of_v as gen

    return gen(np.asarray(v, dtype=np.float64), M)


def residual_of_v(v: np.ndarray, M: int) -> np.ndarray:
    r""":math:`1 - p` on MODEL.md's symmetric line from ``v`` (the law's curve; :func:`log_residual_of_v`)."""
    return np.exp(log_residual_of_v(v, M))


TRAINERS = {"gd": "gd", "adam": "adamw", "adamw": "adamw", "momentum": "sgd"}
"""train_symmetric's optimizer names -> :func:`validation.synthetic.trainer.make_circuit_optimizer`'s."""


def measured_state(model, K: int, M: int) -> dict[str, float]:
    r"""What the model does on the population, measured: attention residual, prediction, set distance.

    ``residual`` :math:`= \frac1K\sum_y (1 - a^{(y)}_{d_y})`, summed over the attention on the common tokens and
    the query (no cancellation: resolves residuals far below 1e-16); ``residual_max`` the largest over classes;
    ``prob_true`` the mean softmax probability of the true class and ``accuracy``; ``set_distance`` the relative
    Frobenius distance of the parameters from the symmetric set (:func:`simulation.optimizer_maps.symmetric_distance`;
    class-indexed OV factors, rank-one QK factors).
    """
    from simulation.optimizer_maps import symmetric_distance

    pop = population_batch(K, M, torch.float64)
    with torch.no_grad():
        logits, att = model(pop.x)
        res = att[:, 1:].sum(1)
        prob = torch.softmax(logits, 1)[torch.arange(K), pop.y]
        mats = {n: p.detach().double().numpy() for n, p in model.named_parameters()}
    return {"residual": float(res.mean()), "residual_max": float(res.max()), "prob_true": float(prob.mean()),
            "accuracy": float((logits.argmax(1) == pop.y).double().mean()),
            "set_distance": symmetric_distance(model.param, mats, K, M)}


def train_symmetric(param: str, ratio: float, *, optimizer: str = "adam", eps: float = ADAM_EPS,
                    betas: tuple[float, float] = (0.0, 0.0), K: int = 4, M: int = 8, u0: float = 0.5,
                    v0: float = 0.5, eta_ov: float = 1.0, dt: float = 0.01, steps: int = 400,
                    log_every: int = 10, stop_loss: float | None = None, weight_decay: float = 0.0,
                    momentum: float = 0.9) -> OptimizerTrajectory:
    """Train from MODEL.md's symmetric start (float64) with ``gd``, ``momentum`` (heavy ball, ``momentum``), or
    ``adam``/``adamw`` (torch AdamW, ``betas``, ``eps``, decoupled ``weight_decay``).

    Logged columns: ``t, u, v, loss, u_spread, v_spread`` (:func:`validation.synthetic.observables.measure`) and
    :func:`measured_state`'s ``residual, residual_max, prob_true, accuracy, set_distance``: every observable is
    measured on the model, none computed from a formula of ``u, v``.
    """
    if optimizer not in TRAINERS:
        raise ValueError(f"optimizer {optimizer!r}: must be one of {', '.join(TRAINERS)}")
    model = symmetric_model(Parametrization(param), K, M, u0, v0, ov_basis="class", dtype=torch.float64)
    pop = population_batch(K, M, torch.float64)
    kind = TRAINERS[optimizer]
    extra = ({"weight_decay": weight_decay, "betas": betas, "eps": eps} if kind == "adamw"
             else {"momentum": momentum} if optimizer == "momentum" else {})
    opt = make_circuit_optimizer(model, kind, eta_ov=eta_ov, ratio=ratio, dt=dt, **extra)
    log = train(model, lambda step: pop, opt, steps, observe=lambda m: measure(m, K, M) | measured_state(m, K, M),
                log_every=log_every, dt=dt, progress=False, stop_loss=stop_loss)
    cols = log.arrays()
    keep = {k: cols[k] for k in ("t", "u", "v", "loss", "u_spread", "v_spread", "residual", "residual_max",
                                 "prob_true", "accuracy", "set_distance")}
    return OptimizerTrajectory(param, ratio, optimizer, eps if kind == "adamw" else 0.0, keep)


def sign_law(param: str, t: np.ndarray, ratio: float, *, K: int = 4, u0: float = 0.5, v0: float = 0.5,
             eta_ov: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Derived sign-descent ``u(t), v(t)`` (:func:`theory.adam.sign_laws`, generated into :mod:`simulation.generated`)."""
    from simulation import generated

    fu, fv = generated.SIGN_LAWS[param]
    t = np.asarray(t, dtype=np.float64)
    args = (t, eta_ov, ratio * eta_ov, u0, v0, K)
    return np.broadcast_to(fu(*args), t.shape).astype(float), np.broadcast_to(fv(*args), t.shape).astype(float)


def loss_on_line(u: np.ndarray, v: np.ndarray, K: int, M: int) -> np.ndarray:
    r""":math:`\log(1 + (K-1)e^{-p u})` with :math:`p(v)` (both generated: :mod:`simulation.generated`)."""
    from simulation import generated

    return generated.margin_loss(np.asarray(u, dtype=float), generated.p_of_v(np.asarray(v, dtype=float), M), K)


def residual_vs_loss_data(params: tuple[str, ...] = (BASELINE, FULLY_FACTORIZED), ratios: tuple[float, ...] = (1.0, 3.0, 10.0),
                          *, eps: float = ADAM_EPS, K: int = 4, M: int = 8, dt: float = 0.01, steps_adam: int = 600,
                          dt_gd: float = 0.2, steps_gd: int = 3000, stop_loss: float = 1e-4) -> dict:
    """Per (param, ratio): GD and Adam(0, 0, ``eps``) trajectories and the sign-descent law at the same losses.

    Returns ``{"params", "ratios", "eps", "runs": {(param, ratio): {"gd": OptimizerTrajectory, "adam": OptimizerTrajectory,
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


def residual_vs_loss_figure(data: dict):
    """Residual vs matched loss, one row per param, GD left and Adam right (a matplotlib Figure); Okabe-Ito
    colours per ratio, dotted: the derived sign-descent law from the same start."""
    from matplotlib.figure import Figure

    from validation.synthetic.report import RATIO_COLORS

    params, ratios = data["params"], data["ratios"]
    fig = Figure(figsize=(9, 3.4 * len(params)))
    axes = fig.subplots(len(params), 2, squeeze=False, sharey="row")
    for i, param in enumerate(params):
        for j, r in enumerate(ratios):
            col = RATIO_COLORS[j % len(RATIO_COLORS)]
            run = data["runs"][(param, r)]
            g, a, law = run["gd"].cols, run["adam"].cols, run["law"]
            axes[i, 0].loglog(g["loss"], g["residual"], color=col, label=f"eta_QK/eta_OV = {r:g}")
            axes[i, 1].loglog(a["loss"], a["residual"], color=col, label=f"eta_QK/eta_OV = {r:g} (Adam)")
            axes[i, 1].loglog(law["loss"], law["residual"], color=col, ls=":", lw=1.2)
        axes[i, 0].set_title(f"{param}: gradient descent", fontsize=9)
        axes[i, 1].set_title(f"{param}: Adam(beta=0, eps={data['eps']:g})\ndotted: derived sign-descent law", fontsize=9)
        for ax in axes[i]:
            ax.invert_xaxis()
            ax.set_xlabel("population loss L (falls to the right)")
            ax.grid(True, which="both", alpha=0.3)
        axes[i, 0].set_ylabel("attention residual 1 - p")
        shown = np.concatenate([np.asarray(c, float) for r in ratios for c in
                                (data["runs"][(param, r)]["adam"].cols["residual"],
                                 data["runs"][(param, r)]["gd"].cols["residual"], data["runs"][(param, r)]["law"]["residual"])])
        shown = shown[np.isfinite(shown) & (shown > 0)]
        axes[i, 1].set_ylim(max(1e-30, shown.min() / 3) if shown.size else 1e-30, 2.0)
        axes[i, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_residual_vs_loss(data: dict, out_stem: Path | str) -> list[Path]:
    """:func:`residual_vs_loss_figure` written as ``out_stem``.png and .svg; returns the paths."""
    fig = residual_vs_loss_figure(data)
    stem = Path(out_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for p in paths:
        fig.savefig(p, dpi=120)
    return paths


SIGN_REGIME_MARGIN = 100.0
"""A logged state is in Adam's sign regime when its smallest QK-entry gradient is >= this times eps (the step
then differs from sign descent's by eps/(|g|+eps) <= 1%)."""


def qk_gradient_scale(u: np.ndarray, v: np.ndarray, K: int, M: int) -> np.ndarray:
    r"""Smallest QK-entry gradient on the symmetric line: :math:`|g_\beta|` of ``W_KQ[c_j, q]`` at
    :math:`A = (K-1)u/K,\ B = -u/K,\ \alpha = v` (generated per-entry orbit gradient, :mod:`theory.optimizer_orbits`).

    For a factorized QK circuit the entries' gradients carry a further factor of the other QK factor,
    O(1) and growing on these runs, so this is a conservative estimate there.
    """
    from simulation.generated_optim import orbit_grad_CACO

    u, v = np.broadcast_arrays(np.asarray(u, dtype=float), np.asarray(v, dtype=float))
    with np.errstate(over="ignore", invalid="ignore"):
        g = orbit_grad_CACO((K - 1) * u / K, -u / K, 0.0 * u, 0.0 * u, v, 0.0 * u, 0.0 * u, K, M)[5]
    return np.nan_to_num(np.abs(g), nan=0.0)


def fit_slope(loss: np.ndarray, residual: np.ndarray) -> float | None:
    """Least-squares slope of log(1-p) against log L (None for fewer than 2 points or one loss)."""
    x, y = np.log(np.asarray(loss, dtype=float)), np.log(np.asarray(residual, dtype=float))
    if x.size < 2 or np.ptp(x) == 0:
        return None
    return float(np.polyfit(x, y, 1)[0])


def asymptotic_exponent(param: str, ratio: float) -> float | None:
    """The sign-descent law's exponent of 1-p in L as L -> 0, derived by :func:`theory.adam.sign_laws` and
    generated into :data:`simulation.generated.SIGN_EXPONENT` (r for CACO, r^2/2 for FAFO); ``None`` when it is
    no finite power (FACO: faster than any power; CAFO: slower) or the parametrization has no sign-descent law."""
    from simulation.generated import SIGN_EXPONENT

    law = SIGN_EXPONENT.get(str(param))
    if law is None:
        return None
    e = float(law(ratio))
    return e if 0 < e < float("inf") else None


def slope_summary(run: dict, param: str, ratio: float, *, eps: float, K: int, M: int) -> dict:
    """Measured vs derived slope d log(1-p) / d log L of one (param, ratio) of :func:`residual_vs_loss_data`.

    Usable points: Adam's logged states (loss > 0, residual > 0) in the sign regime
    (:func:`qk_gradient_scale` >= :data:`SIGN_REGIME_MARGIN` * eps), i.e. before the eps floor. The law's slope is
    fitted at the same losses (the law's curve interpolated in log-log), so both are the local exponent over the
    same range; GD's slope over the part of that range GD reached is reported beside them.
    """
    a, law, g = run["adam"].cols, run["law"], run["gd"].cols
    L, res = np.asarray(a["loss"], float), np.asarray(a["residual"], float)
    ok = (L > 0) & (res > 0) & np.isfinite(L) & np.isfinite(res)
    ok &= qk_gradient_scale(a["u"], a["v"], K, M) >= SIGN_REGIME_MARGIN * eps
    Lu, ru = L[ok], res[ok]
    out = {"param": param, "ratio": ratio, "n_usable": int(ok.sum()), "n_logged": int(L.size),
           "loss_range": [float(Lu.max()), float(Lu.min())] if Lu.size else None,
           "final_loss": float(L[-1]) if L.size else None, "asymptotic_exponent": asymptotic_exponent(param, ratio),
           "slope_adam": fit_slope(Lu, ru), "slope_law": None, "slope_gd": None}
    if Lu.size >= 2:
        ll, lr = np.log(np.asarray(law["loss"], float)), np.log(np.asarray(law["residual"], float))
        o = np.argsort(ll)
        inside = (np.log(Lu) >= ll[o][0]) & (np.log(Lu) <= ll[o][-1])
        if inside.sum() >= 2:
            out["slope_law"] = fit_slope(Lu[inside], np.exp(np.interp(np.log(Lu[inside]), ll[o], lr[o])))
        gl, gr = np.asarray(g["loss"], float), np.asarray(g["residual"], float)
        gin = (gl <= Lu.max()) & (gl >= Lu.min()) & (gr > 0)
        out["slope_gd"] = fit_slope(gl[gin], gr[gin])
    return out


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


def eps_sweep(param: str = BASELINE, ratio: float = 3.0, eps_values: tuple[float, ...] = (1e-14, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0),
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
        model = symmetric_model(Parametrization(param), K, M, u0, v0, ov_basis="class", dtype=torch.float64)
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
                    "residual": measured_state(model, K, M)["residual"]})
    return out


# ---- any element-wise optimizer from the symmetric start: measured against its reduced map at matched loss ------

def crossing(loss: np.ndarray, y: np.ndarray, level: float) -> float | None:
    """``y`` where ``loss`` first falls to ``level`` (log-log interpolation between the two logged points), or None."""
    loss, y = np.asarray(loss, float), np.asarray(y, float)
    hit = np.flatnonzero(loss <= level)
    if not hit.size or hit[0] == 0:
        return float(y[0]) if hit.size and loss[0] == level else None
    i = hit[0]
    x0, x1 = np.log(loss[i - 1]), np.log(loss[i])
    f = (np.log(level) - x0) / (x1 - x0) if x1 != x0 else 1.0
    if y[i - 1] > 0 and y[i] > 0:
        return float(np.exp(np.log(y[i - 1]) + f * (np.log(y[i]) - np.log(y[i - 1]))))
    return float(y[i - 1] + f * (y[i] - y[i - 1]))


def _reduced_until(param: str, spec, *, K: int, M: int, eta_qk: float, dt: float, steps: int, u0: float, v0: float,
                   record_every: int, stop: float | None):
    """The exact reduced map (:func:`simulation.optimizer_maps.iterate_orbit_map`) recorded every ``record_every``
    steps, stopped after the first record with loss below ``stop``: an :class:`~simulation.optimizer_maps.OrbitRun`."""
    from simulation import generated_optim as gen
    from simulation.optimizer_maps import OrbitRun, iterate_orbit_map

    rows, idx = [], []
    for n, w, _ in iterate_orbit_map(param, spec, K=K, M=M, eta_qk=eta_qk, eta_ov=1.0, dt=dt, steps=steps, u0=u0,
                                     v0=v0):
        if n % record_every and n != steps:
            continue
        obs = np.asarray(gen.ORBIT_OBS[param](*w, K, M), dtype=np.float64).reshape(5)  # type: ignore[operator]
        rows.append((w, obs))
        idx.append(n)
        if stop is not None and obs[4] < stop:
            break
    W = np.array([w for w, _ in rows])
    obs = np.array([o for _, o in rows])
    st = np.asarray(idx)
    return OrbitRun(param, spec.as_json(), tuple(gen.ORBIT_NAMES[param]), st * dt, st, W,
                    *(obs[:, i] for i in range(5)))


def optimizer_matched_loss(param: str, ratios: tuple[float, ...], *, optimizer: str = "adam",
                           betas: tuple[float, float] = ADAM_BETAS, eps: float = ADAM_EPS, weight_decay: float = 0.0,
                           K: int = 4, M: int = 8, dt: float = 0.01, steps: int = 1000, n_levels: int = 5,
                           u0: float = 0.5, v0: float = 0.5, stability_steps: int = 40,
                           curves: bool = False, levels: tuple[float, ...] | None = None,
                           stop_loss: float | None = None, predict: bool = True, ensemble: int | None = None,
                           amplitude: float | None = None, seed: int = 0) -> dict:
    r"""Train the full matrices from the symmetric start under ``optimizer`` at each ratio and compare, at matched
    losses, the **measured** residual :math:`1-p` with the exact reduced map of the same optimizer
    (:func:`simulation.optimizer_maps.run_orbit_map`) and with gradient flow (:func:`simulation.reduced.integrate`).

    First, before any training, the transverse analysis (:func:`simulation.transverse.transverse_growth` over
    ``stability_steps``) says per ratio whether a run leaves the symmetric set. Where one does (Adam at its default
    ``eps``), one run's outcome is decided by rounding (issue 41), so the measurement is a seeded **ensemble**
    (:func:`validation.synthetic.ensemble.train_ensemble`, ``ensemble`` members per ratio, default
    :data:`~validation.synthetic.ensemble.ENSEMBLE_SIZE`, start perturbation ``amplitude`` relative, default
    :data:`~validation.synthetic.ensemble.AMPLITUDE`, seeds ``seed + i``): per pair and level the members' median
    1 - p (``measured``), its 10% and 90% quantiles, the median set distance (``distance``), and for every ratio above
    the lowest the number of members that de-sharpen against the lowest (``desharpen_k`` of ``desharpen_n``),
    ``p_desharpen`` and its Wilson interval at :data:`~validation.synthetic.ensemble.CONFIDENCE`; and the sets the
    members end on (``ensemble_sets``). With ``predict`` the sign-pattern predictor
    (:func:`simulation.desharpen_predictor.predict_probability`) gives ``predicted_p_desharpen`` first. Where no run
    leaves (GD, momentum) or ``ensemble=0``, one unperturbed run per ratio (deterministic on the set).

    Levels: ``levels`` when given (training stops once every run's loss is below ``stop_loss``, default the lowest
    level, or after ``steps``), else ``n_levels`` log-spaced losses inside the reduced maps' range over ``steps``
    (deterministic: no level depends on a rounding-seeded run). Returns ``{"levels", "pairs": [{param, ratio,
    measured, distance, reduced, flow (lists over levels, None where not reached), predicted_departure_step,
    ftle_per_step, ...}], "ensemble", "predictor"}``. With ``curves``, each pair also carries ``"curves"`` (float64
    arrays for :func:`validation.synthetic.optimizer_map_run.optimizer_map_figure`): the training's ``loss``,
    ``residual`` (``(T,)`` for one run, ``(T, n)`` for an ensemble's members) and the reduced map's and the flow's.
    """
    import time

    from simulation.desharpen_predictor import predict_probability
    from simulation.optimizer_maps import OptimizerSpec
    from simulation.reduced import integrate
    from simulation.transverse import predicted_departure_step, transverse_growth
    from validation.synthetic.ensemble import AMPLITUDE, ENSEMBLE_SIZE, train_ensemble

    name = {"adamw": "adamw", "adam": "adamw" if weight_decay else "adam", "momentum": "momentum", "gd": "gd"}[optimizer]
    spec = OptimizerSpec(name, betas[0], betas[1], eps, weight_decay)
    size = ENSEMBLE_SIZE if ensemble is None else int(ensemble)
    amp = AMPLITUDE if amplitude is None else float(amplitude)
    log_every = max(1, steps // 200) if levels is None else max(1, min(steps // 200, 10))
    stop = stop_loss if stop_loss is not None else (min(levels) if levels else None)
    ratios = tuple(float(r) for r in ratios)
    cost: dict[str, float] = {}
    t0 = time.process_time()
    st = {r: transverse_growth(param, spec, K=K, M=M, eta_qk=r, eta_ov=1.0, dt=dt, steps=min(stability_steps, steps),
                               u0=u0, v0=v0) for r in ratios}
    leaves = {r: predicted_departure_step(st[r]) is not None for r in ratios}
    red = {r: _reduced_until(param, spec, K=K, M=M, eta_qk=r, dt=dt, steps=steps, u0=u0, v0=v0,
                             record_every=log_every, stop=stop) for r in ratios}
    flow = {r: integrate(Parametrization(param), K, M, r, 1.0, u0, v0, np.geomspace(1e-3, 1e7, 400)) for r in ratios}
    cost["theory_cpu_s"] = time.process_time() - t0
    loss_levels: list[float]
    if levels:
        loss_levels = [float(x) for x in levels]
    else:
        hi = min(float(m.loss[0]) for m in red.values())
        lo = max(float(np.min(m.loss)) for m in red.values())
        loss_levels = [float(x) for x in np.geomspace(hi, lo, n_levels + 2)[1:-1]] if lo < hi else []
    chaotic = size > 0 and any(leaves.values()) and bool(loss_levels)
    prediction = None
    if predict and chaotic:
        t0 = time.process_time()
        prediction = predict_probability(param, spec, K=K, M=M, u0=u0, v0=v0, eta_ov=1.0, dt=dt, ratios=ratios,
                                         levels=tuple(loss_levels), steps=steps, amplitude=amp, record_every=log_every)
        cost["predictor_cpu_s"] = time.process_time() - t0
    t0 = time.process_time()
    ens, single = None, {}
    if chaotic:
        ens = train_ensemble(param, spec, K=K, M=M, u0=u0, v0=v0, dt=dt, ratios=ratios, levels=tuple(loss_levels),
                             steps=steps, size=size, amplitude=amp, seed=seed, stop_loss=stop)
    else:
        for r in ratios:
            single[r] = train_symmetric(param, r, optimizer=optimizer, eps=eps, betas=betas, K=K, M=M, u0=u0, v0=v0,
                                        dt=dt, steps=steps, log_every=log_every, weight_decay=weight_decay,
                                        momentum=betas[0], stop_loss=stop)
    cost["training_cpu_s"] = time.process_time() - t0
    stats = {(s.ratio, s.level): s for s in ens.summary()} if ens is not None else {}
    pairs: list[dict[str, Any]] = []
    for r in ratios:
        rd, fl = red[r], flow[r]
        pair: dict[str, Any] = {"param": param, "ratio": r,
                                "reduced": [crossing(rd.loss, rd.residual, L) for L in loss_levels],
                                "flow": [crossing(fl.loss, fl.residual, L) for L in loss_levels],
                                "ftle_per_step": st[r].ftle, "predicted_departure_step": predicted_departure_step(st[r])}
        if ens is not None:
            rows = [stats[(r, L)] for L in loss_levels]
            pair.update(measured=[s.median for s in rows], distance=[s.distance for s in rows],
                        measured_q10=[s.q10 for s in rows], measured_q90=[s.q90 for s in rows],
                        reached=[s.reached for s in rows], ensemble_size=ens.size,
                        ensemble_sets=ens.set_counts(r),
                        final_loss=float(np.median(ens.final_loss[r])))
            if r != ens.reference():
                pair.update(desharpen_k=[s.k for s in rows], desharpen_n=[s.n for s in rows],
                            p_desharpen=[s.p for s in rows], p_desharpen_lo=[s.lo for s in rows],
                            p_desharpen_hi=[s.hi for s in rows])
            if prediction is not None and r in prediction.p_desharpen:
                pair["predicted_p_desharpen"] = prediction.p_desharpen[r]
            if curves:
                c = ens.curves[r]
                keep = np.unique(np.linspace(0, c["loss"].shape[0] - 1, 300).astype(int))   # figure resolution
                pair["curves"] = {"train_loss": c["loss"][keep], "train_residual": c["residual"][keep],
                                  "train_set_distance": c["distance"][keep]}
        else:
            c = single[r].cols
            off = np.flatnonzero(c["set_distance"] > 1e-6)
            pair.update(measured=[crossing(c["loss"], c["residual"], L) for L in loss_levels],
                        distance=[crossing(c["loss"], c["set_distance"], L) for L in loss_levels],
                        final_loss=float(c["loss"][-1]), final_distance=float(c["set_distance"][-1]),
                        measured_departure_step=int(c["t"][off[0]] / dt + 0.5) if off.size else None)
            if curves:
                pair["curves"] = {"train_loss": c["loss"], "train_residual": c["residual"],
                                  "train_set_distance": c["set_distance"]}
        if curves:
            pair["curves"].update(reduced_loss=np.asarray(rd.loss), reduced_residual=np.asarray(rd.residual),
                                  flow_loss=np.asarray(fl.loss), flow_residual=np.asarray(fl.residual))
        pairs.append(pair)
    ensemble_info = None if ens is None else {
        "size": ens.size, "amplitude": ens.amplitude, "seed": ens.seed, "confidence": ens.confidence,
        "resolution": ens.resolution, "reference_ratio": ens.reference(), "steps": ens.steps, "cpu_s": ens.cpu_s,
        "wall_s": ens.wall_s, "members": ens.as_json()["members"]}
    predictor = None if prediction is None else {**prediction.as_json(), "training_cpu_s": cost["training_cpu_s"]}
    return {"optimizer": spec.as_json(), "K": K, "M": M, "u0": u0, "v0": v0, "dt": dt, "steps": steps,
            "stop_loss": stop, "levels": loss_levels, "pairs": pairs, "ensemble": ensemble_info,
            "predictor": predictor, "cost": cost}


# ---- the broken-set predictor against full-matrix training (issue 31) -------------------------------------------

@dataclass(frozen=True)
class PredictorCase:
    """One base case of the predictor grid: a parametrization, sizes, the symmetric start ``u0 = v0 = start``,
    Adam's lr ``lr`` on OV (``eta_OV = 1``, ``dt = lr``) and the ratios (the lowest is the reference)."""

    param: str
    K: int
    M: int
    start: float
    lr: float
    ratios: tuple[float, ...] = (1.0, 2.0, 4.0)
    steps: int = 20000
    chosen: bool = True


def predictor_grid() -> list[PredictorCase]:
    """The grid of docs/synthetic-validation.md: a designed part (CACO, FAFO x (K, M) in (4, 3), (3, 2) x start
    0.1, 0.5 x lr 1e-3, 1e-2, ratios 2 and 4 against 1; CACO, FAFO x (4, 3), (3, 2) at start 0.1, lr 1e-3, ratio 8;
    CACO, FAFO at (4, 8), start 0.1, lr 1e-3, ratios 4 and 8) and 8 base cases drawn at random (``chosen=False``: numpy
    seed 31, param in the four, K in 3..8, M in 2..10, start log-uniform in [0.05, 1], lr log-uniform in [3e-4, 3e-2],
    one ratio log-uniform in [1.5, 10])."""
    out = [PredictorCase(p, K, M, s, lr, steps=int(20 / lr)) for p in (BASELINE, FULLY_FACTORIZED) for K, M in ((4, 3), (3, 2))
           for s in (0.1, 0.5) for lr in (1e-3, 1e-2)]
    out += [PredictorCase(p, K, M, 0.1, 1e-3, (1.0, 8.0)) for p in (BASELINE, FULLY_FACTORIZED) for K, M in ((4, 3), (3, 2))]
    out += [PredictorCase(p, 4, 8, 0.1, 1e-3, (1.0, 4.0, 8.0)) for p in (BASELINE, FULLY_FACTORIZED)]
    rng = np.random.default_rng(31)
    for _ in range(8):
        p = str(rng.choice(list(PARAMETRIZATIONS)))
        K, M = int(rng.integers(3, 9)), int(rng.integers(2, 11))
        s = float(np.exp(rng.uniform(np.log(0.05), 0.0)))
        lr = float(np.exp(rng.uniform(np.log(3e-4), np.log(3e-2))))
        r = float(np.round(np.exp(rng.uniform(np.log(1.5), np.log(10.0))), 2))
        out.append(PredictorCase(p, K, M, round(s, 3), float(f"{lr:.2g}"), (1.0, r), steps=int(20 / float(f"{lr:.2g}")),
                                 chosen=False))
    return out


def predictor_vs_training(case: PredictorCase, levels: tuple[float, ...] = (1e-1, 1e-2, 1e-3), *,
                          betas: tuple[float, float] = ADAM_BETAS, eps: float = ADAM_EPS) -> dict:
    """Train each ratio of ``case`` with torch Adam (float64, full matrices, :func:`train_symmetric`) until the
    loss is below the lowest level, and run :func:`simulation.broken_set_predictor.predict`; returns the measured
    and predicted 1 - p, set distances and calls per ratio and level, and both costs (seconds)."""
    import time

    from simulation.broken_set_predictor import calls, predict
    from simulation.optimizer_maps import OptimizerSpec

    t0 = time.process_time()
    measured, dist = {}, {}
    for r in case.ratios:
        tr = train_symmetric(case.param, r, optimizer="adam", betas=betas, eps=eps, K=case.K, M=case.M, u0=case.start,
                             v0=case.start, dt=case.lr, steps=case.steps, log_every=10, stop_loss=min(levels))
        c = tr.cols
        measured[r] = [crossing(c["loss"], c["residual"], L) for L in levels]
        dist[r] = [crossing(c["loss"], c["set_distance"], L) for L in levels]
    t1 = time.process_time()
    pred = predict(case.param, OptimizerSpec("adam", betas[0], betas[1], eps), K=case.K, M=case.M, u0=case.start,
                   v0=case.start, eta_ov=1.0, dt=case.lr, ratios=case.ratios, levels=levels, steps=case.steps)
    t2 = time.process_time()
    mc, mr = calls(measured)
    return {"case": {k: getattr(case, k) for k in ("param", "K", "M", "start", "lr", "ratios", "steps", "chosen")},
            "levels": list(levels), "measured": measured, "measured_distance": dist, "measured_call": mc,
            "measured_rises": mr, "predicted": pred.one_minus_p, "predicted_distance": pred.distance,
            "predicted_call": pred.calls, "predicted_rises": pred.rises, "cpu_s_training": t1 - t0,
            "cpu_s_predictor": t2 - t1}
