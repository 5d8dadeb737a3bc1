"""Study stage of the synthetic validation (docs/architecture.md): independent runs for ``qkov reproduce``.

Runs (kind ``synthetic``): full-batch GD on the exact population from the symmetric start (against
the ODE and closed forms), the same from a small random start, AdamW on the population, SGD on
sampled data and SGD on the paper's Figure-2 preset. Runs of kind ``figure2`` (:mod:`qkov.study.figure2_run`):
the paper's Figure 2, one run per parametrization (full: 5 seeds, 10^5 steps). Kind ``adam``
(:mod:`qkov.study.adam_run`): GD against Adam at matched loss, evidence for ``adam-ratio``. Kind
``synthetic-optimizer`` (:mod:`qkov.study.optimizer_run`): Adam at default betas and momentum against their
exact reduced maps, evidence for ``adam-ratio-default`` and ``optimizer-stability``. Quick mode shortens each run so the stage takes
about a minute on 2 cores; each run writes ``claims.json`` (:mod:`qkov.study.claims` evidence) for the
claims it tests: :func:`evidence` turns the run's summaries into typed evidence, and the rules
(:mod:`qkov.study.rules`) into verdicts that refuse vacuous evidence (0 comparisons, ties within
``attention-resolution``, loss levels not reached, runs that did not leave their start: ``insufficient``).
"""

from __future__ import annotations

from qkov.study.context import DEFAULT_CONTEXT, RunContext

import pathlib
from typing import TYPE_CHECKING, Any

from qkov.core.config import parse_config
from qkov.core.runstore import RunWriter
from qkov.study import adam_phase_run, adam_run, figure2_run, optimizer_run
from qkov.study import evidence_types as et
from qkov.study.claims import THRESHOLDS, Evidence, write_evidence
from qkov.study.rules import evidence as judged
from qkov.study.rules import run_left_start
from theory.parametrization import PARAMETRIZATIONS
from validation.synthetic.experiment import SyntheticConfig, run_grid
from validation.synthetic.report import LOSS_LEVELS, write_run

if TYPE_CHECKING:
    import numpy as np

STAGE = "synthetic"
RUN_KINDS = {m.KIND: m for m in (figure2_run, adam_run, optimizer_run, adam_phase_run)}
"""The stage's other run kinds, each a module with ``KIND``, ``study_configs(quick)`` and ``execute(config,
run_dir)``: the paper's Figure 2, GD against Adam(0, 0), Adam at default betas and momentum (issue 23)."""


def study_runs(quick: bool, data_dir: pathlib.Path | None) -> list[tuple[str, dict]]:
    """The ``(kind, config)`` pairs of the stage; configs are plain JSON data with their seed."""
    s = 1 if quick else 8
    ratios = (1.0, 10.0) if quick else (1.0, 3.0, 10.0, 30.0)
    cfgs = [
        SyntheticConfig(ratios=ratios, steps=1000 * s, log_every=20 * s, dt=0.05),
        SyntheticConfig(ratios=ratios, init="random", init_std=0.05, steps=1000 * s, log_every=20 * s),
        SyntheticConfig(ratios=ratios, optimizer="adamw", dt=0.01, steps=500 * s, log_every=10 * s),
        SyntheticConfig(ratios=ratios, data="sampled", optimizer="sgd", init="random", init_std=0.1,
                        steps=400 * s, log_every=20 * s, test_size=1000),
        SyntheticConfig(ratios=ratios, data="paper", optimizer="sgd", dt=0.5, float64=False,
                        steps=100 * s * s, log_every=10 * s, test_size=500),
    ]
    return ([("synthetic", c.to_json_dict()) for c in cfgs]
            + [(kind, c.to_json_dict()) for kind, module in RUN_KINDS.items() for c in module.study_configs(quick)])


def _where(cfg: SyntheticConfig) -> str:
    return f"{cfg.optimizer} on {cfg.data} data, {cfg.init} start"


def chance(cfg: SyntheticConfig) -> float:
    """Chance level of p_true: 1 / the number of outputs (the paper preset predicts over its vocabulary)."""
    if cfg.data == "paper":
        from validation.synthetic.paper_preset import VOCAB

        return 1.0 / VOCAB
    return 1.0 / cfg.K


def run_state(cfg: SyntheticConfig, s: dict[str, Any]) -> et.RunState:
    """What a run's summary says about leaving its start: its attention change and held-out p_true.

    Attention change: the held-out distinct attention's change over training (``test_curve``), or, for runs on
    the exact population (no held-out curve), the population attention ``p`` at the end minus at the start
    (``final.p - start.p``); prediction: the held-out (population) mean p_true of the DTAP summary.
    """
    p_true = (s.get("dtap") or {}).get("mean_p_true")
    mass = ((s.get("test_curve") or {}).get("mass")) or []
    mass = [m for m in mass if m is not None]
    p_end, p_start = (s.get("final") or {}).get("p"), (s.get("start") or {}).get("p")
    if len(mass) >= 2:
        moved = mass[-1] - mass[0]
    elif p_end is not None and p_start is not None:
        moved = p_end - p_start          # exact population from the symmetric start: attention p itself
    else:
        moved = None
    return et.RunState(moved, p_true, chance(cfg))


def trained(cfg: SyntheticConfig, s: dict[str, Any]) -> tuple[bool, str]:
    """Did the run leave its start in what the sharpness claims are about (:func:`qkov.study.rules.left_start`
    of :func:`run_state`)?"""
    return run_left_start(run_state(cfg, s))


def _scope(cfg: SyntheticConfig) -> str:
    return (f"{cfg.optimizer}, {cfg.data} data, {cfg.init} start, K={cfg.K}, M={cfg.M}, "
            f"ratios {', '.join(f'{r:g}' for r in sorted(cfg.ratios))}, {cfg.steps} steps")


def evidence(cfg: SyntheticConfig, summaries: list[dict[str, Any]], rescale: dict[str, Any] | None) -> list[Evidence]:
    """Evidence of one synthetic run on ``rescaling``, ``fixed-lines``, ``sharpness-ratio``, ``sharpness-order``.

    Runs that did not leave their start (:func:`trained`) count for no sharpness comparison.
    """
    out: list[Evidence] = []
    where = _where(cfg)
    status = {(s["param"], s["ratio"]): trained(cfg, s) for s in summaries}
    summaries = [{**s, "_trained": status[(s["param"], s["ratio"])][0]} for s in summaries]
    stuck = [f"{s['param']} r={s['ratio']:g} ({status[(s['param'], s['ratio'])][1]})" for s in summaries
             if not s["_trained"]]
    stuck_txt = f"; did not leave the start: {', '.join(stuck)}" if stuck else ""
    if rescale is not None:
        n = len(rescale["states"])
        err = rescale["max_rel_err"]
        tol = THRESHOLDS["rescaling-tolerance"]
        out.append(judged("rescaling", STAGE, et.Bound("rescaling-tolerance", err, n, "max relative error",
                                                       _scope(cfg)),
                          f"{where}: max relative error {err if err is None else f'{err:.1e}'} over {n} states "
                          f"(tolerance {tol.bound:g})", "theory_vs_training",
                          "Factorized speed / collapsed speed at the same state against theory's rho_OV = 2u and "
                          "rho_QK at the balanced start. " + tol.reason))
    if (summaries and all("spread" in s for s in summaries) and cfg.optimizer in ("gd", "sgd")
            and cfg.init == "symmetric" and cfg.data == "population"):
        # The claim is about the lines from a symmetric start under gradient descent; random starts (attraction
        # of the symmetric set) and Adam (per-coordinate scaling) are not what it says, and are not judged.
        worst = max(max(s["spread"]["max_abs_u"], s["spread"]["max_abs_v"]) for s in summaries)
        th = THRESHOLDS["symmetric-spread"]
        out.append(judged("fixed-lines", STAGE, et.Bound("symmetric-spread", worst, len(summaries), "spread",
                                                         _scope(cfg)),
                          f"{where}: largest spread of u, v across classes/tokens {worst:.1e} over "
                          f"{len(summaries)} runs (bound {th.bound:g})", "theory_vs_training",
                          "From the symmetric start the trained model must stay on the symmetric set, where each "
                          "circuit's effective parameter is on its line (spread 0 up to round-off). " + th.reason))
    if len(cfg.ratios) > 1:
        out.append(_sharpness_ratio(cfg, summaries, where, stuck_txt, tuple(stuck)))
    if set(cfg.params) >= set(PARAMETRIZATIONS):
        out.append(_sharpness_order(cfg, summaries, where, stuck_txt, tuple(stuck)))
    return out


def common_test_levels(summaries: list[dict[str, Any]], n: int = 5) -> "np.ndarray":
    """``n`` log-spaced test-loss levels inside the range every run's held-out loss passed through
    (below the largest final loss, above the smallest starting loss); empty when there is none."""
    import numpy as np

    curves = [s["test_curve"] for s in summaries if s.get("test_curve")]
    if not curves:
        return np.array([])
    hi = min(max(x for x in c["loss"] if x is not None) for c in curves)
    lo = max(min(x for x in c["loss"] if x is not None) for c in curves)
    if not (0 < lo < hi):
        return np.array([])
    return np.exp(np.linspace(np.log(hi), np.log(lo), n + 2)[1:-1])


def mass_at_test_loss(summary: dict[str, Any], level: float) -> float | None:
    """Held-out distinct attention where the run's test loss first falls to ``level`` (linear interpolation
    between the two logged points around it); None if it never does."""
    c = summary.get("test_curve") or {}
    loss, mass = c.get("loss") or [], c.get("mass") or []
    for i in range(1, len(loss)):
        a, b = loss[i - 1], loss[i]
        if a is None or b is None or mass[i - 1] is None or mass[i] is None:
            continue
        if a >= level >= b and a != b:
            w = (a - level) / (a - b)
            return mass[i - 1] + w * (mass[i] - mass[i - 1])
    return None


def _sharpness_ratio(cfg: SyntheticConfig, summaries: list[dict[str, Any]], where: str, stuck_txt: str,
                     stuck: tuple[str, ...] = ()) -> Evidence:
    """Attention at matched loss (population p, or held-out distinct attention at matched test loss) along the
    ratios, per parametrization and loss level (:class:`~qkov.study.evidence_types.RatioTrend`); runs that did not
    leave their start and levels not reached are None (not comparisons)."""
    by = {(s["param"], s["ratio"]): s for s in summaries}
    ratios = sorted(cfg.ratios)
    if all("p_at_loss" in s for s in summaries):
        what = "attention p at matched loss"
        lv_txt = [f"{lev:g}" for lev in LOSS_LEVELS]
        series = [et.Series(f"{p} L={lev}", tuple(ratios),
                            tuple(by[(p, r)]["p_at_loss"].get(lev) if by[(p, r)].get("_trained", True) else None
                                  for r in ratios)) for p in cfg.params for lev in lv_txt]
        scope = _scope(cfg) + f", loss {LOSS_LEVELS[0]:g}..{LOSS_LEVELS[-1]:g}"
    else:
        levels = common_test_levels([by[(p, r)] for p in cfg.params for r in ratios if by[(p, r)].get("_trained", True)])
        what = (f"held-out distinct-token attention at matched test loss ({len(levels)} levels "
                + (f"{levels[0]:.3g}..{levels[-1]:.3g})" if levels.size else "reached by every trained run: none)"))
        series = [et.Series(f"{p} L={lev:.3g}", tuple(ratios),
                            tuple(mass_at_test_loss(by[(p, r)], lev) if by[(p, r)].get("_trained", True) else None
                                  for r in ratios)) for p in cfg.params for lev in levels]
        scope = _scope(cfg) + (f", test loss {levels[0]:.3g}..{levels[-1]:.3g}" if levels.size else "")
    trend = et.RatioTrend("attention", tuple(series), scope, stuck)
    return judged("sharpness-ratio", STAGE, trend, f"{where}: {what} along eta_QK/eta_OV{stuck_txt}",
                  "attention_vs_loss",
                  f"Consecutive ratios {ratios} compared per parametrization and loss level; a level not reached by "
                  "both runs is not a comparison; steps within attention-resolution are ties.")


def _sharpness_order(cfg: SyntheticConfig, summaries: list[dict[str, Any]], where: str, stuck_txt: str,
                     stuck: tuple[str, ...] = ()) -> Evidence:
    """The paper's pairwise orders (theory.claims.SHARPNESS_ORDER_PAIRS) at the smallest ratio, at the
    smallest loss level every parametrization reached (or on held-out attention at a matched test loss)."""
    r0 = min(cfg.ratios)
    at = {s["param"]: s for s in summaries if s["ratio"] == r0}
    if all("p_at_loss" in s for s in at.values()):
        live = [p for p in cfg.params if at[p].get("_trained", True)]
        lev = next((f"{lev:g}" for lev in LOSS_LEVELS[::-1]
                    if live and all(at[p]["p_at_loss"].get(f"{lev:g}") is not None for p in live)), None)
        residual = {p: 1 - at[p]["p_at_loss"][lev] for p in live} if lev else {}
        what = f"1-p at loss {lev}" if lev else f"no loss level in {[float(x) for x in LOSS_LEVELS]} reached by all"
    else:
        moved = [p for p in cfg.params if at[p].get("_trained", True)]
        levels = common_test_levels([at[p] for p in moved])
        masses = {p: mass_at_test_loss(at[p], levels[-1]) for p in moved} if levels.size else {}
        residual = {p: 1 - m for p, m in masses.items() if m is not None}
        what = (f"1 - held-out distinct attention at test loss {levels[-1]:.3g}" if levels.size
                else "no test loss reached by every trained run")
    order = " < ".join(f"{p} {residual[p]:.3f}" for p in sorted(residual, key=residual.__getitem__))
    ev = et.Order(tuple(residual.items()), "attention-resolution", _scope(cfg).split(", ratios")[0]
                  + f", ratio {r0:g}, {what}", stuck)
    return judged("sharpness-order", STAGE, ev,
                  f"{where}, ratio {r0:g}, {what} (sharpest first): {order or 'nothing to compare'}{stuck_txt}",
                  "attention_vs_loss" if residual else "",
                  "The paper's pairs: collapsed OV (CACO, FACO) sharper than factorized OV (CAFO, FAFO); pairs "
                  "closer than attention-resolution are ties and not compared.")


def write_synthetic_run(cfg: SyntheticConfig, runs: list, run: RunWriter) -> dict[str, Any]:
    """Metrics and figures (validation.synthetic.report.write_run), then ``claims.json``; returns both."""
    res = write_run(cfg, runs, run)
    ev = write_evidence(run, evidence(cfg, res["summaries"], res["rescaling"]))
    return {"metrics": res["metrics"], "evidence": ev}


def execute(kind: str, config: dict, run_dir: pathlib.Path, ctx: RunContext = DEFAULT_CONTEXT) -> None:
    """Perform one run of :func:`study_runs` into ``run_dir`` (``ctx.progress``: bars while training; CPU float64
    by design, so ``ctx.device`` is not used)."""
    if kind in RUN_KINDS:
        RUN_KINDS[kind].execute(config, run_dir)
        return
    if kind != "synthetic":
        raise ValueError(f"kind {kind!r}: qkov.study.synthetic_stage runs 'synthetic', {', '.join(map(repr, RUN_KINDS))} "
                         "only")
    cfg = parse_config(SyntheticConfig, **config)
    runs = run_grid(cfg, progress=ctx.progress)
    with RunWriter(run_dir, kind=kind, config=config, seed=cfg.seed) as run:
        write_synthetic_run(cfg, runs, run)
