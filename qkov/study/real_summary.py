r"""Turn completed real-data runs into tables, paired tests (Holm), bootstrap intervals, DTAP heatmaps
and ``claims.json``.

Groups are (dataset, optimizer, model). For each group and ratio the tables give mean :math:`\pm`
sample std over seeds of every metric in five **views**: the fixed-epoch model (``fixed_epoch``),
the best-validation checkpoint (``best_val``: lowest validation loss), the first checkpoint whose
training loss (on a fixed probe of the training split) falls below each **matched-loss level**
(``matched_loss``), and the two baselines (``baseline.uniform``: the trained model with zeroed QK
circuits, i.e. uniform attention; ``baseline.step0``: the untrained model). AC/ACMC are also given
as gains over uniform.

Matched-loss levels (:func:`loss_levels`): each run is read from its **peak**, the checkpoint of highest
training loss (step 0 for most runs; later when a warm-up first raises the loss). With
:math:`L_\mathrm{lo}` the largest over runs of the smallest training loss a run reaches after its peak
and :math:`L_\mathrm{hi}` the smallest peak loss, the levels
:math:`L_\mathrm{lo}(L_\mathrm{hi}/L_\mathrm{lo})^{k/N}`, :math:`k = 0..N-1` (:data:`N_LEVELS`), are
crossed from above after its peak by every run of the group (every ratio and seed); none when
:math:`L_\mathrm{lo}\ge L_\mathrm{hi}`. (Before 2026-12-03 :math:`L_\mathrm{hi}` was the smallest step-0
loss, so one seed whose untrained loss happened to be low, and rose in warm-up, left no level at all.)

Statistics: paired over seeds with ratio 1, mean difference, paired t-test and Wilcoxon p
(``scipy.stats``); the t-test p-values of **all** groups, views, ratios and metrics are corrected
together by Holm's step-down method (:func:`holm`) in one table. The task-metric difference gets a
95 % bootstrap interval (:func:`bootstrap_diff`: test items and seeds resampled with replacement,
:data:`N_BOOT` resamples, percentile interval). The verdict rule is :func:`judge_group` /
:func:`combine_outcomes`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import numpy as np
from qkov.core.runstore import RunWriter, load_run
from qkov.study.claims import Evidence, write_evidence
from validation.metrics.dtap import plot_dtap
from validation.metrics.stats import BOOT_SEED, N_BOOT, bootstrap_diff, holm, paired  # noqa: F401 (re-exported)
from validation.real.config import PAPER_RATIO
from validation.real.datasets import DATASETS as DATASET_REGISTRY

MIN_EFFECT = 0.01
"""Smallest change of the mean relevant mass (1 percentage point) that counts as a change."""
MARGIN = {"accuracy": 0.01, "f1": 1.0}
"""'No worse' margin of the task metric: 1 point (accuracy as a fraction, SQuAD F1 in percent)."""
ALPHA = 0.05
N_LEVELS = 3
PAPER = {k: d.paper_result for k, d in DATASET_REGISTRY.items()}
"""What the paper reports per dataset (declared in :mod:`validation.real.datasets`)."""
CLASS_METRICS = ("accuracy", "macro_f1", "relevant_mass_mean", "attention_confidence", "acmc", "token_f1",
                 "auprc", "comprehensiveness_aopc", "sufficiency_aopc")
SQUAD_METRICS = ("f1", "exact_match", "relevant_mass_mean", "attention_confidence", "acmc",
                 "layer_average.relevant_mass_mean", "max_over_layers.relevant_mass_mean", "token_f1", "auprc",
                 "answer_prob_geomean", "f1_shuffled_contexts", "faithfulness_check.spearman_rollout_vs_grad_input")
PAIRED = ("relevant_mass_mean", "attention_confidence", "acmc")
VIEWS = ("fixed_epoch", "best_val")


def _generates(dataset: str) -> bool:
    """Whether ``dataset``'s task is generation (SQuAD's decoder), from the registry; unknown names classify."""
    entry = DATASET_REGISTRY.get(dataset)
    return entry is not None and entry.task == "generation"


def task_metric(dataset: str) -> str:
    """The accuracy-like metric of ``dataset`` (its registry entry's ``summary_metric``; SQuAD: F1 in percent)."""
    entry = DATASET_REGISTRY.get(dataset)
    return entry.summary_metric if entry is not None else "accuracy"


def metric_names(dataset: str) -> tuple[str, ...]:
    return SQUAD_METRICS if _generates(dataset) else CLASS_METRICS


def flat(m: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Numeric entries of a metrics dict, nested dicts as ``outer.inner`` (views and lists skipped)."""
    out: dict[str, float] = {}
    for k, v in m.items():
        if k in ("baseline", "best_val", "checkpoints", "gain_over_uniform") and not prefix:
            continue
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out[prefix + k] = float(v)
        elif isinstance(v, dict):
            out.update(flat(v, prefix + k + "."))
    return out


def load_runs(run_dirs: Iterable[Path]) -> list[dict[str, Any]]:
    """Config, metrics and per-item arrays of every *complete* real-data run among ``run_dirs``, each read
    through :func:`qkov.core.runstore.load_run` (only the files its ``COMPLETE`` lists)."""
    out = []
    for d in map(Path, run_dirs):
        try:
            run = load_run(d)
        except (ValueError, OSError):
            continue
        cfg = run.config
        if "metrics.json" not in run.json or not isinstance(cfg, dict) or "dataset" not in cfg or "ratio" not in cfg:
            continue
        out.append({"dir": d, "config": cfg, "metrics": run.metrics, "arrays": run.arrays.get("instances.npz", {})})
    return out


def item_scores(run: dict[str, Any], view: str) -> np.ndarray | None:
    """Per-test-item task score of a run (correct 0/1, or SQuAD F1) in ``view``, if stored."""
    a = run["arrays"]
    key = {"fixed_epoch": "", "best_val": "best_val_"}[view]
    if key + "f1" in a:
        return np.asarray(a[key + "f1"], float)
    if key + "pred" in a and "labels" in a:
        return (np.asarray(a[key + "pred"]) == np.asarray(a["labels"])).astype(float)
    return None


# --- statistics ------------------------------------------------------------------------------------------

# paired, holm, bootstrap_diff: validation.metrics.stats (pure, tested against scipy); imported above.


# --- views -----------------------------------------------------------------------------------------------

def peak_index(curve: list[float]) -> int:
    """Index of a run's peak: its first checkpoint of highest training loss (0 for a loss that starts
    highest)."""
    return int(np.argmax(curve))


def loss_levels(curves: list[list[float]], n: int = N_LEVELS) -> list[float]:
    """Matched-loss levels crossed from above by every run after its peak (module docstring);
    ``curves[r]`` = the training loss at each checkpoint of run ``r`` (step 0 first)."""
    if not curves or any(len(c) < 2 for c in curves):
        return []
    peaks = [peak_index(c) for c in curves]
    if any(i == len(c) - 1 for i, c in zip(peaks, curves)):
        return []                                   # a run still at its highest loss at the end
    lo = max(min(c[i + 1:]) for i, c in zip(peaks, curves))
    hi = min(c[i] for i, c in zip(peaks, curves))
    if not (lo < hi) or lo <= 0:
        return []
    return [float(lo * (hi / lo) ** (k / n)) for k in range(n)]


def at_level(checkpoints: list[dict[str, Any]], level: float) -> dict[str, Any] | None:
    """The test metrics (plus step, epoch, loss) of the first checkpoint after the run's peak
    (:func:`peak_index`) with training loss <= ``level``."""
    if not checkpoints:
        return None
    peak = peak_index([c["train_loss"] for c in checkpoints])
    for c in checkpoints[peak + 1:]:
        if c["train_loss"] <= level:
            return {**c["test"], "step": c["step"], "epoch": c["epoch"], "train_loss": c["train_loss"]}
    return None


def _rows(by_ratio: dict[float, dict[int, dict[str, float]]], names: Iterable[str]) -> list[dict[str, Any]]:
    rows = []
    for ratio in sorted(by_ratio):
        seeds = by_ratio[ratio]
        row: dict[str, Any] = {"ratio": ratio, "n_seeds": len(seeds), "seeds": sorted(seeds)}
        for k in names:
            v = np.array([seeds[s][k] for s in sorted(seeds) if k in seeds[s]], dtype=float)
            v = v[np.isfinite(v)]
            if v.size:
                row[k] = {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if v.size > 1 else 0.0}
        rows.append(row)
    return rows


def _with_gains(m: dict[str, float], uniform: dict[str, float]) -> dict[str, float]:
    out = dict(m)
    for k in ("attention_confidence", "acmc", "relevant_mass_mean"):
        if k in m and k in uniform:
            out[f"{k}_gain_over_uniform"] = m[k] - uniform[k]
    return out


def _paired_view(by_ratio: dict[float, dict[int, dict[str, float]]], keys: Iterable[str]) -> dict[str, Any]:
    base = by_ratio.get(1.0)
    out: dict[str, Any] = {}
    if not base:
        return out
    for ratio in sorted(by_ratio):
        if ratio == 1.0:
            continue
        res = {}
        for k in keys:
            common = [s for s in sorted(set(base) & set(by_ratio[ratio])) if k in base[s] and k in by_ratio[ratio][s]
                      and np.isfinite(base[s][k]) and np.isfinite(by_ratio[ratio][s][k])]
            res[k] = paired(np.array([base[s][k] for s in common]), np.array([by_ratio[ratio][s][k] for s in common]))
        out[f"{ratio:g}"] = res
    return out


def summarise_groups(runs: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: C901 - known complexity debt (docs/architecture.md)
    """Per ``"<dataset>/<optimizer>/<model>"`` group: rows of every view, paired tests, bootstrap, DTAP."""
    grouped: dict[str, dict[float, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    for r in runs:
        c = r["config"]
        grouped[f"{c['dataset']}/{c['optimizer']}/{c.get('model', 'small')}"][float(c["ratio"])][int(c["seed"])] = r
    out: dict[str, Any] = {}
    for name, by_ratio in sorted(grouped.items()):
        dataset = name.split("/")[0]
        tm = task_metric(dataset)
        names = metric_names(dataset)
        gain_names = names + tuple(f"{k}_gain_over_uniform" for k in ("attention_confidence", "acmc",
                                                                        "relevant_mass_mean"))
        views: dict[str, dict[float, dict[int, dict[str, float]]]] = {v: defaultdict(dict) for v in
                                                                      ("fixed_epoch", "best_val", "uniform", "step0")}
        for ratio, seeds in by_ratio.items():
            for s, run in seeds.items():
                m = run["metrics"]
                uni = flat(m.get("baseline", {}).get("uniform") or {})
                views["fixed_epoch"][ratio][s] = _with_gains(flat(m), uni)
                if m.get("best_val"):
                    views["best_val"][ratio][s] = _with_gains(flat(m["best_val"]), uni)
                if uni:
                    views["uniform"][ratio][s] = uni
                if m.get("baseline", {}).get("step0"):
                    views["step0"][ratio][s] = flat(m["baseline"]["step0"])
        # matched loss
        all_runs = [run for seeds in by_ratio.values() for run in seeds.values()]
        curves = [[c["train_loss"] for c in run["metrics"].get("checkpoints", [])] for run in all_runs]
        levels = loss_levels(curves)
        matched = []
        for lev in levels:
            byr: dict[float, dict[int, dict[str, float]]] = defaultdict(dict)
            for ratio, seeds in by_ratio.items():
                for s, run in seeds.items():
                    hit = at_level(run["metrics"].get("checkpoints", []), lev)
                    if hit is not None:
                        uni = flat(run["metrics"].get("baseline", {}).get("uniform") or {})
                        byr[ratio][s] = _with_gains({k: v for k, v in hit.items() if not isinstance(v, list)}, uni)
            matched.append({"level": lev, "rows": _rows(byr, gain_names + ("step", "epoch", "train_loss")),
                            "paired": _paired_view(byr, PAIRED + ("answer_prob_geomean" if _generates(dataset) else tm,)),
                            "_by_ratio": byr})
        # bootstrap of the task metric difference from per-item scores
        boot: dict[str, Any] = {}
        for view in VIEWS:
            boot[view] = {}
            base = by_ratio.get(1.0, {})
            for ratio in sorted(by_ratio):
                if ratio == 1.0 or not base:
                    continue
                common = sorted(set(base) & set(by_ratio[ratio]))
                b = [item_scores(base[s], view) for s in common]
                o = [item_scores(by_ratio[ratio][s], view) for s in common]
                if common and all(x is not None for x in b + o) and len({x.size for x in b + o}) == 1:
                    boot[view][f"{ratio:g}"] = bootstrap_diff(np.array(b), np.array(o))
        dtap = {}
        for ratio in sorted(by_ratio):
            hs = [np.array(run["metrics"]["dtap"]) for run in by_ratio[ratio].values() if "dtap" in run["metrics"]]
            if hs:
                edges = next(iter(by_ratio[ratio].values()))["metrics"]["dtap_edges"]
                dtap[f"{ratio:g}"] = {"edges": edges, "mean_percent": np.mean(hs, axis=0).tolist()}
        claim_ratio = PAPER_RATIO.get(dataset) if PAPER_RATIO.get(dataset) in by_ratio else max(by_ratio)
        out[name] = {
            "dataset": dataset, "claim_ratio": claim_ratio, "task_metric": tm,
            "rows": _rows(views["fixed_epoch"], gain_names),
            "best_val": {"rows": _rows(views["best_val"], gain_names + ("epoch", "val_loss"))},
            "baseline": {"uniform": {"rows": _rows(views["uniform"], names)},
                         "step0": {"rows": _rows(views["step0"], names)}},
            "matched_loss": {"levels": levels, "by_level": [{k: v for k, v in x.items() if k != "_by_ratio"}
                                                            for x in matched]},
            "paired": {"fixed_epoch": _paired_view(views["fixed_epoch"], PAIRED + (tm,)),
                       "best_val": _paired_view(views["best_val"], PAIRED + (tm,)),
                       **{f"matched_loss@{x['level']:.4g}": x["paired"] for x in matched}},
            "bootstrap": boot, "dtap": dtap, "paper": PAPER.get(dataset, ""),
        }
    return out


def holm_table(groups: dict[str, Any]) -> list[dict[str, Any]]:
    """Every paired t-test of every group, view, ratio and metric, with Holm-adjusted p (one family);
    the adjusted p is also written back into ``groups[...]["paired"]`` as ``p_holm``."""
    rows, refs = [], []
    for name, g in groups.items():
        for view, by_ratio in g["paired"].items():
            for ratio, mets in by_ratio.items():
                for k, v in mets.items():
                    rows.append({"group": name, "view": view, "ratio": ratio, "metric": k, "n": v["n"],
                                 "mean_diff": v["mean_diff"], "t_p": v["t_p"], "wilcoxon_p": v["wilcoxon_p"]})
                    refs.append(v)
    for row, ref, ph in zip(rows, refs, holm([r["t_p"] for r in rows])):
        row["p_holm"] = ref["p_holm"] = ph
    return rows


# --- the verdict -----------------------------------------------------------------------------------------

def judge_group(g: dict[str, Any]) -> tuple[str, str]:
    """``(outcome, note)`` of one group at its claim ratio (the paper's, else the largest).

    Evidence: the mass difference with ratio 1 (paired over seeds, Holm-adjusted p from
    :func:`holm_table`) (a) at the best-validation checkpoint and (b) at the lowest matched-loss level;
    the 95 % bootstrap interval of the task-metric difference at the best-validation checkpoint
    against :data:`MARGIN`.

    - ``insufficient``: fewer than 2 paired seeds, no matched-loss level, no interval, or an attention
      that never left uniform (:func:`_never_left_uniform`: at both ratio 1 and the claim ratio the
      best-val mass is within :data:`MIN_EFFECT` of the uniform baseline's *and* forcing uniform
      attention changes the fixed-epoch task metric by less than the margin: nothing was learned that
      the claim is about);
    - ``supports``: (a) and (b) both rise by >= :data:`MIN_EFFECT` with p_holm < :data:`ALPHA` and the
      interval's lower end is > -margin ("no worse");
    - ``contradicts``: (a) or (b) falls by >= MIN_EFFECT with p_holm < ALPHA, or the interval's upper
      end is < -margin (clearly worse);
    - ``inconclusive`` otherwise.
    """
    r = f"{g['claim_ratio']:g}"
    tm = g["task_metric"]
    margin = MARGIN[tm]
    a = g["paired"].get("best_val", {}).get(r, {}).get("relevant_mass_mean")
    levels = g["matched_loss"]["levels"]
    b = g["paired"].get(f"matched_loss@{levels[0]:.4g}", {}).get(r, {}).get("relevant_mass_mean") if levels else None
    ci = g["bootstrap"].get("best_val", {}).get(r)
    if a is None or b is None or ci is None or a["n"] < 2 or b["n"] < 2:
        why = ("no best-validation pair" if a is None or a["n"] < 2 else
               "no matched-loss level reached by every run" if b is None or b["n"] < 2 else "no per-item scores")
        return "insufficient", f"ratio {r} vs 1: {why} -> insufficient"
    if _never_left_uniform(g, (1.0, g["claim_ratio"])):
        return "insufficient", (f"ratio {r} vs 1: the attention never left uniform (best-val mass within "
                                f"{MIN_EFFECT} of the uniform baseline's, and uniform attention costs less than {margin:g} {tm}, "
                                f"at both ratios) -> insufficient")

    def up(x):
        return x["mean_diff"] >= MIN_EFFECT and x.get("p_holm", math.nan) < ALPHA

    def down(x):
        return x["mean_diff"] <= -MIN_EFFECT and x.get("p_holm", math.nan) < ALPHA

    no_worse, worse = ci["lo"] > -margin, ci["hi"] < -margin
    if up(a) and up(b) and no_worse:
        outcome = "supports"
    elif down(a) or down(b) or worse:
        outcome = "contradicts"
    else:
        outcome = "inconclusive"
    note = (f"ratio {r} vs 1: mass at best-val {a['mean_diff']:+.3f} (Holm p={a.get('p_holm', math.nan):.2g}, "
            f"n={a['n']}), at matched loss {levels[0]:.3g} {b['mean_diff']:+.3f} (Holm p={b.get('p_holm', math.nan):.2g}); "
            f"{tm} diff {ci['diff']:+.3g} [95% CI {ci['lo']:+.3g}, {ci['hi']:+.3g}], margin {margin:g} -> {outcome}")
    return outcome, note


def _never_left_uniform(g: dict[str, Any], ratios: tuple[float, ...]) -> bool:
    """True when, at every ratio in ``ratios``, the attention is indistinguishable from uniform in both
    ways we can see: the best-val relevant mass is within :data:`MIN_EFFECT` of the uniform baseline's,
    and setting every QK circuit to zero (the uniform baseline, on the fixed-epoch weights) moves the
    fixed-epoch task metric by less than the margin (:data:`MARGIN`). The second clause keeps a model
    whose attention matters (a deep decoder whose rollout mass on the answer sits near uniform while
    uniform attention costs it most of its F1) from being called untrained. False when a number is
    missing."""
    tm = g.get("task_metric", "accuracy")

    def by_ratio(rows, key):
        return {row["ratio"]: row.get(key) for row in rows}

    best = by_ratio(g.get("best_val", {}).get("rows", []), "relevant_mass_mean")
    uni_rows = g.get("baseline", {}).get("uniform", {}).get("rows", [])
    uni, uni_task = by_ratio(uni_rows, "relevant_mass_mean"), by_ratio(uni_rows, tm)
    task = by_ratio(g.get("rows", []), tm)
    if not all(isinstance(x.get(r), dict) for r in ratios for x in (best, uni, uni_task, task)):
        return False
    return all(abs(best[r]["mean"] - uni[r]["mean"]) < MIN_EFFECT
               and abs(task[r]["mean"] - uni_task[r]["mean"]) < MARGIN[tm] for r in ratios)


def combine_outcomes(outcomes: Iterable[str]) -> str:
    """Overall verdict: ``insufficient`` without any judged group; ``supports``/``contradicts`` when every
    judged group says so; ``inconclusive`` when every group is inconclusive or insufficient; else ``mixed``."""
    o = list(outcomes)
    judged = {x for x in o if x != "insufficient"}
    if not judged:
        return "insufficient"
    if judged == {"supports"}:
        return "supports"
    if judged == {"contradicts"}:
        return "contradicts"
    if judged == {"inconclusive"}:
        return "inconclusive"
    return "mixed"


def judge(groups: dict[str, Any]) -> dict[str, Any]:
    """The ``real-data`` claim entry ``{"verdict", "evidence", "groups"}`` (needs :func:`holm_table` first)."""
    if not groups:
        return {"verdict": "insufficient", "evidence": "no completed real-data runs", "groups": {}}
    judged = {name: judge_group(g) for name, g in groups.items()}
    return {"verdict": combine_outcomes(o for o, _ in judged.values()),
            "evidence": "; ".join(f"{name}: {note}" for name, (_, note) in judged.items()),
            "groups": {name: o for name, (o, _) in judged.items()}}


def claim_evidence(claim: dict[str, Any], groups: dict[str, Any]) -> Evidence:
    """The ``real-data`` claim as a registry :class:`~qkov.study.claims.Evidence` (what the report reads)."""
    first = next((n for n, o in claim.get("groups", {}).items() if o != "insufficient"), next(iter(groups), ""))
    ratio = next((r for r in sorted(groups.get(first, {}).get("dtap", {}), key=float, reverse=True)), None)
    figure = f"dtap_{first.replace('/', '_')}_r{ratio}" if first and ratio is not None else ""
    return Evidence("real-data", "real", claim["verdict"], claim["evidence"] or "no completed real-data runs", figure,
                    "Per group: the paper's ratio against 1 at the best-validation checkpoint and at matched training "
                    "loss, paired over seeds, Holm-corrected; 'no worse' by the bootstrap interval's lower end against "
                    "a 1-point margin; attention that never left uniform, or too few seeds, is insufficient.")


# --- rendering -------------------------------------------------------------------------------------------

def _fmt(cell: Any, scale: float = 1.0) -> str:
    if not isinstance(cell, dict):
        return "-"
    return f"{cell['mean'] * scale:.3g} ± {cell['std'] * scale:.2g}"


TABLE_COLS = {"class": ("accuracy", "relevant_mass_mean", "attention_confidence",
                        "attention_confidence_gain_over_uniform", "acmc", "acmc_gain_over_uniform", "token_f1",
                        "auprc", "comprehensiveness_aopc", "sufficiency_aopc"),
              "generation": ("f1", "exact_match", "relevant_mass_mean", "layer_average.relevant_mass_mean",
                        "max_over_layers.relevant_mass_mean", "attention_confidence",
                        "attention_confidence_gain_over_uniform", "acmc", "acmc_gain_over_uniform", "token_f1",
                        "auprc", "answer_prob_geomean", "f1_shuffled_contexts",
                        "faithfulness_check.spearman_rollout_vs_grad_input")}


def markdown_tables(groups: dict[str, Any], tests: list[dict[str, Any]] | None = None,
                    claim: dict[str, Any] | None = None) -> str:
    """Per group one table (every view x ratio, baselines included), the Holm table and the verdicts."""
    lines = []
    for name, g in groups.items():
        cols = TABLE_COLS["generation" if _generates(g["dataset"]) else "class"]
        lines += [f"### {name} (claim ratio {g['claim_ratio']:g}; paper: {g['paper']})", "",
                  "| view | ratio | seeds | " + " | ".join(cols) + " |",
                  "| --- | --- | --- | " + " | ".join("---" for _ in cols) + " |"]
        views = [("fixed epoch", g["rows"]), ("best val", g["best_val"]["rows"])]
        views += [(f"matched loss {x['level']:.3g}", x["rows"]) for x in g["matched_loss"]["by_level"]]
        views += [("uniform attention", g["baseline"]["uniform"]["rows"]),
                  ("untrained (step 0)", g["baseline"]["step0"]["rows"])]
        for label, rows in views:
            for row in rows:
                lines.append(f"| {label} | {row['ratio']:g} | {row['n_seeds']} | "
                             + " | ".join(_fmt(row.get(k)) for k in cols) + " |")
        boots = [(v, r, c) for v, by in g["bootstrap"].items() for r, c in by.items()]
        if boots:
            lines += ["", f"{g['task_metric']} difference with ratio 1, 95 % bootstrap interval (seeds and items "
                      "resampled):", ""]
            lines += [f"- {v}, ratio {r}: {c['diff']:+.3g} [{c['lo']:+.3g}, {c['hi']:+.3g}] "
                      f"({c['n_seeds']} seeds x {c['n_items']} items)" for v, r, c in boots]
        lines.append("")
    if tests:
        lines += ["### Paired tests with ratio 1 (all groups, views, ratios and metrics; Holm-corrected together)", "",
                  "| group | view | ratio | metric | n | mean diff | t-test p | Holm p | Wilcoxon p |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {t['group']} | {t['view']} | {t['ratio']} | {t['metric']} | {t['n']} | {t['mean_diff']:+.4g} | "
                  f"{t['t_p']:.3g} | {t['p_holm']:.3g} | {t['wilcoxon_p']:.3g} |" for t in tests]
        lines.append("")
    if claim:
        lines += [f"**real-data verdict: {claim['verdict']}** — {claim['evidence']}", ""]
    return "\n".join(lines)


def summarise(run_dirs: Iterable[Path], out_dir: Path, *, kind: str = "validate-real-summary",
              config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``tables.json``, ``tables.md``, ``tests.json``, ``claims.json`` and one DTAP heatmap per group
    and ratio; return ``{"groups", "tests", "claims", "n_runs"}``."""
    runs = load_runs(run_dirs)
    groups = summarise_groups(runs)
    tests = holm_table(groups)
    claim = judge(groups)
    evidence = claim_evidence(claim, groups)
    with RunWriter(out_dir, kind=kind, config=config or {"runs": sorted(str(r["dir"].name) for r in runs)}) as w:
        w.write_json("tables.json", groups)
        w.write_json("tests.json", tests)
        w.write_text("tables.md", markdown_tables(groups, tests, claim))
        from qkov.study.rules import real_data_evidence   # one line per group (qkov.study.rules)

        write_evidence(w, real_data_evidence(groups))
        for name, g in groups.items():
            for ratio, h in g["dtap"].items():
                fig = plot_dtap(np.array(h["mean_percent"]), h["edges"],
                                title=f"{name}, eta_QK/eta_OV = {ratio} (mean over seeds)")
                w.write_figure(f"dtap_{name.replace('/', '_')}_r{ratio}", fig)
    return {"groups": groups, "tests": tests, "claims": {"real-data": claim}, "evidence": evidence,
            "n_runs": len(runs)}
