r"""Turn completed real-data runs into tables, paired comparisons, DTAP heatmaps and ``claims.json``.

For each (dataset, optimizer) and ratio: mean :math:`\pm` sample std over seeds of every
metric. Paired comparison with ratio 1 on the same seeds: mean difference
:math:`\bar d = \frac1n\sum_s (x_{r,s} - x_{1,s})`, paired t-test and Wilcoxon signed-rank
p-values (``scipy.stats``; with :math:`n = 3` seeds the smallest possible two-sided Wilcoxon
p is 0.25, so the t-test is the informative one). The ``real-data`` claim is judged a priori
at :data:`CLAIM_RATIO` (= 10): a group *supports* when the relevant attention mass rises
(:math:`\bar d \ge` :data:`MIN_EFFECT` = 0.01, t-test :math:`p < 0.05`) and the task metric drops by no more than
:data:`TOLERANCE` (1 point of accuracy, or of F1 for SQuAD); it *contradicts* when the mass
falls significantly or the task metric drops beyond the tolerance; otherwise it is inconclusive
(see :func:`judge`).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import numpy as np
from scipy import stats

from qkov.core.runstore import RunWriter, is_complete
from qkov.study.claims import Evidence, combine, write_evidence
from validation.metrics.dtap import plot_dtap

CLAIM_RATIO = 10.0
MIN_EFFECT = 0.01
"""Smallest change of the mean relevant mass (1 percentage point) that counts as a change."""
TOLERANCE = 0.01  # as a fraction (accuracy); SQuAD EM/F1 are in percent -> 1 point
PAPER = {
    "squad": {"attention_confidence": "about 12% -> 43% (official code: 6-layer GPT-2-tokenizer decoder, "
                                      "SQuAD v2.0, QK multiplier 20)"},
}
CLASS_METRICS = ("accuracy", "macro_f1", "relevant_mass_mean", "attention_confidence", "acmc",
                 "comprehensiveness_aopc", "sufficiency_aopc", "token_f1", "iou_f1", "auprc")
SQUAD_METRICS = ("exact_match", "f1", "relevant_mass_mean", "attention_confidence", "acmc", "sentence_mass_mean",
                 "sentence_attention_confidence", "token_f1", "iou_f1", "auprc")
PAIRED = ("relevant_mass_mean", "attention_confidence", "acmc")


def task_metric(dataset: str) -> str:
    """The accuracy-like metric of ``dataset`` (SQuAD: F1 in percent)."""
    return "f1" if dataset == "squad" else "accuracy"


def metric_names(dataset: str) -> tuple[str, ...]:
    return SQUAD_METRICS if dataset == "squad" else CLASS_METRICS


def load_runs(run_dirs: Iterable[Path]) -> list[dict[str, Any]]:
    """Config, metrics and DTAP histogram of every *complete* real-data run among ``run_dirs``."""
    out = []
    for d in map(Path, run_dirs):
        if not (d / "metrics.json").is_file() or not is_complete(d):
            continue
        cfg = json.loads((d / "config.json").read_text())
        if "dataset" not in cfg or "ratio" not in cfg:
            continue
        m = json.loads((d / "metrics.json").read_text())
        if "sentence_variant" in m:
            m["sentence_mass_mean"] = m["sentence_variant"]["relevant_mass_mean"]
            m["sentence_attention_confidence"] = m["sentence_variant"]["attention_confidence"]
        out.append({"dir": d, "config": cfg, "metrics": m})
    return out


def _paired(x1: np.ndarray, xr: np.ndarray) -> dict[str, Any]:
    d = xr - x1
    res: dict[str, Any] = {"n": int(d.size), "mean_diff": float(d.mean()) if d.size else math.nan}
    if d.size >= 2 and np.any(d != d[0]):
        res["t_p"] = float(stats.ttest_rel(xr, x1).pvalue)
    else:
        res["t_p"] = math.nan if not np.all(d == 0) else 1.0
    try:
        res["wilcoxon_p"] = float(stats.wilcoxon(xr, x1).pvalue) if d.size >= 1 and np.any(d != 0) else 1.0
    except ValueError:
        res["wilcoxon_p"] = math.nan
    return res


def summarise_groups(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"<dataset>/<optimizer>": {"rows": [...], "paired": {...}, "dtap": {...}}}``."""
    groups: dict[str, dict[float, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    for r in runs:
        c = r["config"]
        groups[f"{c['dataset']}/{c['optimizer']}"][float(c["ratio"])][int(c["seed"])] = r["metrics"]
    out: dict[str, Any] = {}
    for name, by_ratio in sorted(groups.items()):
        dataset = name.split("/")[0]
        names = metric_names(dataset)
        rows = []
        for ratio in sorted(by_ratio):
            seeds = by_ratio[ratio]
            row: dict[str, Any] = {"ratio": ratio, "n_seeds": len(seeds), "seeds": sorted(seeds)}
            for k in names:
                v = np.array([seeds[s][k] for s in sorted(seeds) if k in seeds[s]], dtype=float)
                if v.size:
                    row[k] = {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if v.size > 1 else 0.0}
            rows.append(row)
        paired: dict[str, Any] = {}
        base = by_ratio.get(1.0)
        if base:
            for ratio in sorted(by_ratio):
                if ratio == 1.0:
                    continue
                common = sorted(set(base) & set(by_ratio[ratio]))
                paired[f"{ratio:g}"] = {
                    k: _paired(np.array([base[s][k] for s in common], float),
                               np.array([by_ratio[ratio][s][k] for s in common], float))
                    for k in PAIRED + (task_metric(dataset),)}
        dtap = {}
        for ratio in sorted(by_ratio):
            hs = [np.array(m["dtap"]) for m in by_ratio[ratio].values()]
            edges = next(iter(by_ratio[ratio].values()))["dtap_edges"]
            dtap[f"{ratio:g}"] = {"edges": edges, "mean_percent": np.mean(hs, axis=0).tolist()}
        out[name] = {"dataset": dataset, "rows": rows, "paired": paired, "dtap": dtap}
    return out


def judge_group(g: dict[str, Any]) -> tuple[str, str] | None:
    """``(outcome, note)`` of one dataset/optimizer group at :data:`CLAIM_RATIO`, or ``None``.

    outcome: ``insufficient`` (fewer than 2 paired seeds, or no t-test p: nothing can be significant),
    ``supports`` (mass up by at least :data:`MIN_EFFECT` with t-test p < 0.05, task
    metric within tolerance), ``contradicts`` (mass down by at least :data:`MIN_EFFECT` with
    p < 0.05, or the task metric drops beyond tolerance),
    else ``inconclusive``.
    """
    p = g["paired"].get(f"{CLAIM_RATIO:g}")
    if not p:
        return None
    tm = task_metric(g["dataset"])
    tol = TOLERANCE * (100 if g["dataset"] == "squad" else 1)
    mass = p["relevant_mass_mean"]
    significant = mass["t_p"] < 0.05
    hurt = p[tm]["mean_diff"] < -tol
    if mass["n"] < 2 or not math.isfinite(mass["t_p"]):
        outcome = "insufficient"
    elif significant and mass["mean_diff"] >= MIN_EFFECT and not hurt:
        outcome = "supports"
    elif hurt or (significant and mass["mean_diff"] <= -MIN_EFFECT):
        outcome = "contradicts"
    else:
        outcome = "inconclusive"
    note = (f"mass {mass['mean_diff']:+.3f} (t-test p={mass['t_p']:.2g}, n={mass['n']}), "
            f"{tm} {p[tm]['mean_diff']:+.3g} -> {outcome}")
    return outcome, note


def judge(groups: dict[str, Any]) -> Evidence:
    """The ``real-data`` evidence: each group's outcome (:func:`judge_group`), combined by
    :func:`qkov.study.claims.combine` (``insufficient`` groups do not count); ``insufficient`` without runs
    at ratios 1 and :data:`CLAIM_RATIO`."""
    judged = {name: j for name, g in groups.items() if (j := judge_group(g)) is not None}
    if not judged:
        return Evidence("real-data", "real", "insufficient", f"no completed runs at ratios 1 and {CLAIM_RATIO:g}",
                        "", "Run qkov validate real (or reproduce with data) to test this claim.")
    verdict = combine(o for o, _ in judged.values())
    first = next((n for n in judged if judged[n][0] != "insufficient"), next(iter(judged)))
    return Evidence("real-data", "real", verdict,
                    f"ratio {CLAIM_RATIO:g} vs 1, paired over seeds: " + "; ".join(
                        f"{name}: {note}" for name, (_, note) in judged.items()),
                    f"dtap_{first.replace('/', '_')}_r{CLAIM_RATIO:g}",
                    f"A group supports when the relevant attention mass rises by >= {MIN_EFFECT:g} (t-test p < 0.05) "
                    f"and the task metric drops by no more than {TOLERANCE:g} (1 point); it contradicts when the mass "
                    "falls significantly or the task metric drops beyond that; fewer than 2 paired seeds is insufficient.")


def _fmt(cell: Any, pct: bool) -> str:
    if not isinstance(cell, dict):
        return "-"
    f = 100.0 if pct else 1.0
    return f"{cell['mean'] * f:.3g} ± {cell['std'] * f:.2g}"


def markdown_tables(groups: dict[str, Any]) -> str:
    """Tables (mean ± std over seeds) and the paired comparisons, as Markdown."""
    lines = []
    for name, g in groups.items():
        names = metric_names(g["dataset"])
        lines += [f"### {name}", "", "| ratio | seeds | " + " | ".join(names) + " |",
                  "| --- | --- | " + " | ".join("---" for _ in names) + " |"]
        for row in g["rows"]:
            lines.append(f"| {row['ratio']:g} | {row['n_seeds']} | "
                         + " | ".join(_fmt(row.get(k), False) for k in names) + " |")
        lines += ["", "Paired with ratio 1 (mean difference; paired t-test p; Wilcoxon p; n seeds):", "",
                  "| ratio | metric | mean diff | t-test p | Wilcoxon p | n |", "| --- | --- | --- | --- | --- | --- |"]
        for ratio, mets in g["paired"].items():
            for k, v in mets.items():
                lines.append(f"| {ratio} | {k} | {v['mean_diff']:+.4g} | {v['t_p']:.3g} | {v['wilcoxon_p']:.3g} | {v['n']} |")
        if g["dataset"] in PAPER:
            lines += ["", "Paper's headline: " + "; ".join(f"{k}: {v}" for k, v in PAPER[g["dataset"]].items())]
        lines.append("")
    return "\n".join(lines)


def summarise(run_dirs: Iterable[Path], out_dir: Path, *, kind: str = "validate-real-summary",
              config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``tables.json``, ``tables.md``, ``claims.json`` and one DTAP heatmap per group and ratio."""
    runs = load_runs(run_dirs)
    groups = summarise_groups(runs)
    claim = judge(groups)
    with RunWriter(out_dir, kind=kind, config=config or {"runs": sorted(str(r["dir"].name) for r in runs)}) as w:
        w.write_json("tables.json", groups)
        w.write_text("tables.md", markdown_tables(groups))
        write_evidence(w, [claim])
        for name, g in groups.items():
            for ratio, h in g["dtap"].items():
                fig = plot_dtap(np.array(h["mean_percent"]), h["edges"],
                                title=f"{name}, eta_QK/eta_OV = {ratio} (mean over seeds)")
                w.write_figure(f"dtap_{name.replace('/', '_')}_r{ratio}", fig)
    return {"groups": groups, "claims": {"real-data": claim.to_json()}, "evidence": claim, "n_runs": len(runs)}
