"""The Adam-off-the-symmetric-set blocks of docs/synthetic-validation.md (issue 41), built from record sets.

* ``adam-desharpen``: issue 41's reported case (``qkov validate synthetic --optimizer adam ... --ratios 1,4
  --levels 1e-1,1e-2``, record set ``adam-desharpen``): per ratio and matched loss the ensemble's median 1-p with
  its 10-90% range, P(de-sharpen) with its Wilson interval, the predicted probability and the sets the members
  end on.
* ``adam-phase``: the phase diagram (record set ``adam-phase``, :mod:`qkov.study.adam_phase_run`): per
  parametrization, ``(K, M)``, start and lr, per ratio the de-sharpening count at each matched loss, the call
  of :func:`qkov.study.rules.desharpen_call` and the predicted probability.
* ``adam-phase-region``: the configurations where raising the ratio reliably sharpens, where it de-sharpens in more
  than ``desharpen-rare`` of the starts, and where the ensemble cannot tell, by the same rule.
* ``adam-summary`` (README.md): issue 41's case and the region counts in three sentences with their scope.
* ``adam-calibration``: the predictor against the ensembles on the held-out configurations (all but
  :data:`validation.synthetic.phase_diagram.DEVELOPMENT_CASE`): Brier scores (the predictor's, "never
  de-sharpens" and the pooled frequency's), the points inside the Wilson interval, a reliability table, the cost.

Every number comes from the records through the rules' own functions (:func:`qkov.study.rules.desharpen_call`,
:func:`qkov.study.rules.brier`); none is typed here. :func:`phase_figure` draws the diagram from the same records
(``python -m qkov.docsgen.adam_tables --figure docs/figures/adam-phase.png``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Iterator

from qkov.records import Record

PHASE_SET = "adam-phase"
CASE_SET = "adam-desharpen"
CALL_MARK = {"supports": "sharpens", "contradicts": "**de-sharpens**", "inconclusive": "undecided",
             "insufficient": "not reached"}


@dataclasses.dataclass(frozen=True)
class PhasePoint:
    """One (cell, start, ratio above the reference, level) of the phase diagram's records."""

    param: str
    K: int
    M: int
    lr: float
    u0: float
    ratio: float
    level: float
    k: int | None
    n: int | None
    lo: float | None
    hi: float | None
    median: float | None
    predicted: float | None
    predictor_cpu_s: float
    ensemble_cpu_s: float

    def call(self) -> str:
        """:func:`qkov.study.rules.desharpen_call` of the point."""
        from qkov.study import evidence_types as et
        from qkov.study.rules import desharpen_call

        return desharpen_call(et.OptimizerPoint(self.ratio, self.level, self.median, desharpen_k=self.k,
                                                desharpen_n=self.n, p_lo=self.lo, p_hi=self.hi))

    def held_out(self) -> bool:
        from validation.synthetic.phase_diagram import DEVELOPMENT_CASE

        return (self.param, self.K, self.M, self.u0, self.lr) != DEVELOPMENT_CASE


def phase_points(records: list[Record]) -> Iterator[PhasePoint]:
    """Every :class:`PhasePoint` of ``adam-phase`` records, in record order."""
    for rec in records:
        cfg, m = rec.config, rec.metrics
        starts = list(m.get("starts", {}).values())
        for st in starts:
            ratios, levels = st["ratios"], st["levels"]
            for i, r in enumerate(ratios):
                if r == min(ratios):
                    continue
                pred = st.get("predicted", {}).get(f"{r:g}") or [None] * len(levels)
                for j, lv in enumerate(levels):
                    yield PhasePoint(cfg["param"], int(cfg["K"]), int(cfg["M"]), float(cfg["lr"]), float(st["u0"]),
                                     float(r), float(lv), st["desharpen_k"][i][j], st["desharpen_n"][i][j],
                                     st["p_desharpen_lo"][i][j], st["p_desharpen_hi"][i][j],
                                     st["one_minus_p_median"][i][j], pred[j],
                                     float(st.get("predictor_cpu_s") or 0.0),
                                     float(m.get("ensemble_cpu_s") or 0.0) / max(1, len(starts)))


def _p(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _configs(pts: list[PhasePoint]) -> list[tuple]:
    """The distinct ``(param, K, M, u0, lr)`` of ``pts``, ordered by param, K, M, lr, u0."""
    return sorted(set((p.param, p.K, p.M, p.u0, p.lr) for p in pts), key=lambda c: (c[0], c[1], c[2], c[4], c[3]))


def phase_table(load: Callable[[str], list[Record]]) -> str:
    """The ``adam-phase`` block: one table per matched loss; rows (param, K, M, u0 = v0, lr), per ratio
    ``k/n [lo, hi]``, the call and the predicted probability."""
    pts = list(phase_points(load(PHASE_SET)))
    if not pts:
        return "_No adam-phase records._"
    ratios = sorted({p.ratio for p in pts})
    at = {(p.param, p.K, p.M, p.u0, p.lr, p.ratio, p.level): p for p in pts}
    out = []
    conf = f"{_confidence(load):.0%}"
    for lv in sorted({p.level for p in pts}, reverse=True):
        out.append(f"At L = {lv:g} (members de-sharpening / compared [{conf} Wilson interval], call, "
                   "predicted probability):\n")
        out.append("| param | K | M | u0 = v0 | lr | " + " | ".join(f"ratio {r:g}" for r in ratios) + " |")
        out.append("|---|---|---|---|---|" + "---|" * len(ratios))
        for c in _configs(pts):
            cells = []
            for r in ratios:
                p = at.get((*c, r, lv))
                if p is None or not p.n:
                    cells.append("not reached")
                    continue
                cells.append(f"{p.k}/{p.n} [{_p(p.lo)}, {_p(p.hi)}] {CALL_MARK[p.call()]}, pred {_p(p.predicted)}")
            out.append(f"| {c[0]} | {c[1]} | {c[2]} | {c[3]:g} | {c[4]:g} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _confidence(load: Callable[[str], list[Record]]) -> float:
    recs = load(PHASE_SET)
    return float(recs[0].metrics.get("confidence", 0.95)) if recs else 0.95


def region_groups(pts: list[PhasePoint]) -> dict[str, list[str]]:
    """The configurations of ``pts`` by the call of :func:`qkov.study.rules.desharpen_call` over every ratio and
    level: ``all`` (every point sharpens reliably), ``some`` (some point de-sharpens with probability above
    ``desharpen-rare``; named with its ``ratio@L``), ``open`` (otherwise: an interval straddles, or not reached)."""
    groups: dict[str, list[str]] = {"all": [], "some": [], "open": []}
    for c in _configs(pts):
        mine = [p for p in pts if (p.param, p.K, p.M, p.u0, p.lr) == c]
        calls = [p.call() for p in mine]
        bad = sorted({f"{p.ratio:g}@{p.level:g}" for p in mine if p.call() == "contradicts"})
        name = f"{c[0]} K={c[1]} M={c[2]} u0={c[3]:g} lr={c[4]:g}"
        if bad:
            groups["some"].append(f"{name} (ratio@L: {', '.join(bad)})")
        elif all(x == "supports" for x in calls):
            groups["all"].append(name)
        else:
            groups["open"].append(name)
    return groups


def region_text(load: Callable[[str], list[Record]]) -> str:
    """The ``adam-phase-region`` block: per call of :func:`qkov.study.rules.desharpen_call` over every ratio and
    level of a configuration, the configurations it covers (:func:`region_groups`)."""
    pts = list(phase_points(load(PHASE_SET)))
    if not pts:
        return "_No adam-phase records._"
    from simulation.desharpen_predictor import sign_pattern_weights
    from theory.claims import THRESHOLDS

    q = THRESHOLDS["desharpen-rare"].bound
    groups = region_groups(pts)
    n = len(_configs(pts))
    ratios = ", ".join(f"{r:g}" for r in sorted({p.ratio for p in pts}))
    levels = ", ".join(f"{lv:g}" for lv in sorted({p.level for p in pts}, reverse=True))
    return "\n".join([
        f"- **Raising the ratio reliably sharpens** (every ratio {ratios} at every L in {levels}: P(de-sharpen) <= "
        f"{q:g} with {_confidence(load):.0%} confidence), {len(groups['all'])} of {n} configurations: "
        + ("; ".join(groups["all"]) or "none") + ".",
        f"- **De-sharpens in more than {q:g} of the starts** at some ratio and loss (interval above {q:g}), "
        f"{len(groups['some'])} of {n}: " + ("; ".join(groups["some"]) or "none") + ".",
        f"- **Undecided** (an interval straddles {q:g}, none above), {len(groups['open'])} of {n}: "
        + ("; ".join(groups["open"]) or "none") + ".",
        "- Weight of the branch that isolates one class (P_K(1), `simulation.desharpen_predictor."
        "sign_pattern_weights`): " + ", ".join(f"K={K} {sign_pattern_weights(K)[1]:.3f}"
                                              for K in sorted({p.K for p in pts})) + "."])


def _values(pts: list[PhasePoint], attr: str) -> str:
    vals = sorted({getattr(p, attr) for p in pts})
    return ", ".join(f"{v:g}" if isinstance(v, (int, float)) else str(v) for v in vals)


def readme_text(load: Callable[[str], list[Record]]) -> str:
    """The README's ``adam-summary`` block: issue 41's case (``adam-desharpen``: P(de-sharpen) per level at the
    highest ratio, Wilson interval, prediction) and the phase diagram's region counts (:func:`region_groups`), each
    with its scope."""
    from theory.claims import THRESHOLDS

    q = THRESHOLDS["desharpen-rare"].bound
    cases, phase = load(CASE_SET), load(PHASE_SET)
    confidences = ({float(r.metrics["confidence"]) for r in phase if r.metrics.get("confidence") is not None}
                   | {float(run["ensemble"]["confidence"]) for r in cases for run in r.metrics.get("params", {}).values()
                      if (run.get("ensemble") or {}).get("confidence") is not None})
    conf = " / ".join(f"{c:.0%}" for c in sorted(confidences)) or "its"
    out = ["**Adam at its default betas, as a probability** (`adam-ratio-default`; "
           "[docs/synthetic-validation.md](docs/synthetic-validation.md#adam-off-the-symmetric-set-a-probability-over"
           "-seeded-starts-issues-31-41)). Off the symmetric set one run's outcome is decided by rounding, so qkov "
           "trains seeded starts and reports the probability that a higher eta_QK/eta_OV leaves attention *less* "
           f"sharp than ratio 1 (P(de-sharpen)), with its {conf} Wilson interval and the sign-pattern prediction."]
    for rec in cases:
        for param, run in rec.metrics.get("params", {}).items():
            e = run.get("ensemble", {})
            ratio = {key: float(key[2:]) for key in run["pairs"]}          # keys "r=<ratio>"
            pairs = [key for key, p in run["pairs"].items() if p.get("desharpen_n")]
            if not pairs:
                continue
            top_key = max(pairs, key=ratio.__getitem__)
            top = run["pairs"][top_key]
            per = []
            for j, lv in enumerate(run["levels"]):
                k, n = top["desharpen_k"][j], top["desharpen_n"][j]
                pred = (top.get("predicted_p_desharpen") or [None] * (j + 1))[j]
                if n:
                    per.append(f"L = {lv:g}: {k}/{n} = {k / n:.2f} [{top['p_desharpen_lo'][j]:.2f}, "
                               f"{top['p_desharpen_hi'][j]:.2f}], predicted {_p(pred)}")
            out.append(f"Issue 41's case ({param}, K={run['K']}, M={run['M']}, u0=v0={run['u0']:g}, lr {run['dt']:g}, "
                       f"ratio {ratio[top_key]:g} against {min(ratio.values()):g}, {e.get('size')} starts at "
                       f"{e.get('amplitude', 0):g} relative): " + "; ".join(per) + ".")
    pts = list(phase_points(phase))
    if pts:
        g = region_groups(pts)
        n = len(_configs(pts))
        some = "; ".join(x.split(" (")[0] for x in g["some"]) or "none"
        opened = "; ".join(g["open"]) or "none"
        ref = ", ".join(sorted({f"{min(st['ratios']):g}" for r in phase for st in r.metrics.get("starts", {}).values()}))
        out.append(f"Over the phase diagram ({_values(pts, 'param').replace(', ', ' and ')}, K x M in "
                   + ", ".join(sorted({f'{p.K}x{p.M}' for p in pts})) + f", lr {_values(pts, 'lr')}, "
                   f"u0 = v0 in {_values(pts, 'u0')}, ratios {_values(pts, 'ratio')} against {ref}, L in "
                   f"{_values(pts, 'level')}): raising the ratio reliably sharpens (every interval at or below "
                   f"{q:g}) in {len(g['all'])} of {n} configurations; it de-sharpens in more than {q:g} of the starts "
                   f"in {len(g['some'])} ({some}); {len(g['open'])} undecided ({opened}).")
    adams = sorted({(*(float(b) for b in r.config["betas"]), float(r.config["eps"])) for r in cases + phase
                    if r.config.get("betas") and r.config.get("eps") is not None})
    adam = " and ".join(f"Adam({b1:g}, {b2:g}, eps {eps:g})" for b1, b2, eps in adams) or "Adam"
    out.append(f"Scope: the synthetic model's population data, full batch, float64, {adam}; not other betas, larger "
               "sizes or real data.")
    return "\n\n".join(out)


def calibration_table(load: Callable[[str], list[Record]]) -> str:
    """The ``adam-calibration`` block (module doc), on the held-out points with members."""
    from qkov.study import evidence_types as et
    from qkov.study.rules import brier

    pts = [p for p in phase_points(load(PHASE_SET)) if p.n and p.predicted is not None]
    held = [p for p in pts if p.held_out()]
    if not held:
        return "_No held-out adam-phase records._"

    def pr(p: PhasePoint) -> float:
        return float(p.predicted) if p.predicted is not None else float("nan")

    def lo(p: PhasePoint) -> float:
        return float(p.lo) if p.lo is not None else float("nan")

    def hi(p: PhasePoint) -> float:
        return float(p.hi) if p.hi is not None else float("nan")

    def cal(ps: list[PhasePoint], f: Callable[[PhasePoint], float]) -> float | None:
        return brier([et.CalibrationPoint(p.param, p.ratio, p.level, f(p), int(p.k or 0), int(p.n or 0), p.lo, p.hi)
                      for p in ps])

    members = sum(int(p.n or 0) for p in held)
    pooled = sum(int(p.k or 0) for p in held) / members
    inside = sum(1 for p in held if lo(p) <= pr(p) <= hi(p))
    calls_agree = sum(1 for p in held if (pr(p) > 0.1) == (p.call() == "contradicts")
                      and p.call() != "inconclusive")
    decided = sum(1 for p in held if p.call() in ("supports", "contradicts"))
    lines = [f"Held out: {len(held)} (configuration, ratio, level) points, {members} member outcomes, "
             f"{len(_configs(held))} configurations (all but the development case "
             f"{'/'.join(map(str, _dev()))}).\n",
             "| score | value |", "|---|---|",
             f"| Brier, sign-pattern predictor | {cal(held, pr):.4f} |",
             f"| Brier, \"never de-sharpens\" (p = 0) | {cal(held, lambda p: 0.0):.4f} |",
             f"| Brier, pooled frequency (p = {pooled:.3f} everywhere, fitted on these points) | "
             f"{cal(held, lambda p: pooled):.4f} |",
             f"| predicted probability inside the ensemble's Wilson interval | {inside}/{len(held)} |",
             f"| call agrees (predicted > 0.1 vs interval above 0.1), decided points | {calls_agree}/{decided} |",
             "", "Reliability (held-out points binned by predicted probability):", "",
             "| predicted | points | members | mean predicted | observed frequency |", "|---|---|---|---|---|"]
    bins = [(0.0, 0.0, "0"), (0.0, 0.25, "(0, 0.25]"), (0.25, 0.5, "(0.25, 0.5]"), (0.5, 1.0, "(0.5, 1]")]
    for b_lo, b_hi, name in bins:
        b = [p for p in held if (pr(p) == 0.0 if b_hi == 0.0 else b_lo < pr(p) <= b_hi)]
        if not b:
            lines.append(f"| {name} | 0 | 0 | - | - |")
            continue
        nb = sum(int(p.n or 0) for p in b)
        lines.append(f"| {name} | {len(b)} | {nb} | {sum(pr(p) * int(p.n or 0) for p in b) / nb:.3f} | "
                     f"{sum(int(p.k or 0) for p in b) / nb:.3f} |")
    cells = {(p.param, p.K, p.M, p.lr, p.u0): (p.predictor_cpu_s, p.ensemble_cpu_s) for p in pts}
    pc, ec = sum(a for a, _ in cells.values()), sum(b for _, b in cells.values())
    ratios = [a / b for a, b in cells.values() if b > 0]
    lines += ["", f"Cost (CPU seconds, one core, float64): predictor {pc:.0f} s against {ec:.0f} s for the "
              f"ensembles it predicts ({pc / ec:.2f}x; per configuration {min(ratios):.2f}x to {max(ratios):.2f}x)."]
    return "\n".join(lines)


def _dev() -> tuple:
    from validation.synthetic.phase_diagram import DEVELOPMENT_CASE

    return DEVELOPMENT_CASE


def case_table(load: Callable[[str], list[Record]]) -> str:
    """The ``adam-desharpen`` block: issue 41's case from its ``synthetic-optimizer`` record."""
    recs = load(CASE_SET)
    if not recs:
        return "_No adam-desharpen records._"
    out = []
    for rec in recs:
        for param, run in rec.metrics.get("params", {}).items():
            e = run.get("ensemble", {})
            out.append(f"{param}, K={run['K']}, M={run['M']}, u0=v0={run['u0']:g}, lr {run['dt']:g}; "
                       f"{e.get('size')} seeded starts per ratio ({e.get('amplitude', 0):g} relative, seeds "
                       f"{e.get('seed')}..{(e.get('seed') or 0) + (e.get('size') or 1) - 1}); ensemble "
                       f"{e.get('cpu_s', 0):.0f} s CPU, predictor {run.get('predictor_cpu_s') or 0:.0f} s CPU; "
                       f"{e.get('confidence', 0.95):.0%} Wilson intervals.\n")
            out.append("| ratio | L | 1-p median (10-90%) | P(de-sharpen) | predicted | sets at the end |")
            out.append("|---|---|---|---|---|---|")
            for key, p in run["pairs"].items():
                for j, lv in enumerate(run["levels"]):
                    n = (p.get("desharpen_n") or [None] * (j + 1))[j]
                    prob = (f"{p['desharpen_k'][j]}/{n} = {p['desharpen_k'][j] / n:.3f} "
                            f"[{p['p_desharpen_lo'][j]:.3f}, {p['p_desharpen_hi'][j]:.3f}]") if n else "(reference)"
                    pred = (p.get("predicted_p_desharpen") or [None] * (j + 1))[j]
                    sets = ", ".join(f"{k} {v}" for k, v in (p.get("ensemble_sets") or {}).items()) if j == 0 else ""
                    out.append(f"| {key[2:]} | {lv:g} | {_g(p['measured'][j])} ({_g(p['measured_q10'][j])}-"
                               f"{_g(p['measured_q90'][j])}) | {prob} | {_p(pred) if n else '-'} | {sets} |")
            for ev in rec.metrics.get("evidence", []):
                out.append(f"\n`{ev['claim']}`: {ev['verdict']} ({ev.get('number', '')})")
    return "\n".join(out)


def phase_figure(records: list[Record]):
    """The phase diagram as heat maps, one per parametrization: rows (K, M, u0 = v0, lr), columns (matched loss,
    ratio); colour the measured fraction of seeded starts that de-sharpen, text ``measured / predicted`` and the
    call of :func:`qkov.study.rules.desharpen_call` (``+`` sharpens reliably, ``-`` de-sharpens in more than
    ``desharpen-rare``, ``?`` undecided). A matplotlib Figure."""
    import numpy as np
    from matplotlib.figure import Figure

    pts = list(phase_points(records))
    params = sorted({p.param for p in pts})
    cols = [(lv, r) for lv in sorted({p.level for p in pts}, reverse=True) for r in sorted({p.ratio for p in pts})]
    at = {(p.param, p.K, p.M, p.u0, p.lr, p.ratio, p.level): p for p in pts}
    rows = {param: [c for c in _configs(pts) if c[0] == param] for param in params}
    height = max(len(v) for v in rows.values())
    fig = Figure(figsize=(5.6 * len(params) + 1.0, 0.42 * height + 1.8), layout="constrained")
    axes = fig.subplots(1, len(params), squeeze=False)[0]
    mark = {"supports": "+", "contradicts": "-", "inconclusive": "?", "insufficient": ""}
    im = None
    for ax, param in zip(axes, params):
        grid = np.full((len(rows[param]), len(cols)), np.nan)
        for i, c in enumerate(rows[param]):
            for j, (lv, r) in enumerate(cols):
                p = at.get((*c, r, lv))
                if p is None or not p.n:
                    continue
                grid[i, j] = p.k / p.n  # type: ignore[operator]
                ax.text(j, i, f"{grid[i, j]:.2f}/{_p(p.predicted)}{mark[p.call()]}", ha="center", va="center",
                        fontsize=6, color="black" if grid[i, j] > 0.6 else "white")
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(cols)), [f"r={r:g}\nL={lv:g}" for lv, r in cols], fontsize=6)
        ax.set_yticks(range(len(rows[param])), [f"K={c[1]} M={c[2]} u0={c[3]:g} lr={c[4]:g}" for c in rows[param]],
                      fontsize=6)
        ax.set_title(f"{param}: P(de-sharpen) vs ratio 1, measured/predicted", fontsize=8)
    if im is not None:
        fig.colorbar(im, ax=list(axes), shrink=0.8, label="fraction of 64 seeded starts that de-sharpen")
    return fig


def write_phase_figure(path: Path, root: Path | None = None) -> Path:
    """Draw :func:`phase_figure` from ``root/records/adam-phase.jsonl`` into ``path`` (PNG, 256-colour palette)."""
    from qkov.docsgen import loader, repo_root

    load = loader(repo_root() if root is None else root)
    import io

    from PIL import Image

    from theory.files import atomic_write_bytes

    fig = phase_figure(load(PHASE_SET))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    buf.seek(0)
    small = io.BytesIO()                      # a 256-colour palette: a third of the RGBA file, same picture
    Image.open(buf).convert("RGB").quantize(256).save(small, format="png", optimize=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, small.getvalue())
    return path


def _blocks() -> tuple[Any, ...]:
    from qkov.docsgen import GeneratedBlock

    doc = "docs/synthetic-validation.md"
    return (GeneratedBlock("adam-desharpen", doc, case_table, (CASE_SET,)),
            GeneratedBlock("adam-phase", doc, phase_table, (PHASE_SET,)),
            GeneratedBlock("adam-phase-region", doc, region_text, (PHASE_SET,)),
            GeneratedBlock("adam-calibration", doc, calibration_table, (PHASE_SET,)),
            GeneratedBlock("adam-summary", "README.md", readme_text, (CASE_SET, PHASE_SET)))


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m qkov.docsgen.adam_tables")
    ap.add_argument("--figure", type=Path, required=True, help="PNG to write from records/adam-phase.jsonl")
    print(write_phase_figure(ap.parse_args(argv).figure))


if __name__ == "__main__":
    main()


__all__ = ["PhasePoint", "calibration_table", "case_table", "phase_figure", "phase_points", "phase_table",
           "readme_text", "region_groups", "region_text", "write_phase_figure"]
