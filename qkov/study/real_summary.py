r"""Turn completed real-data runs into tables, the ``real-data`` verdict per dataset, exploratory paired
tests (Holm), bootstrap intervals, DTAP heatmaps and ``claims.json``.

**Groups** (:func:`group_key`): runs whose configurations agree in every field but ratio, seed and data
directory (dataset, model, recipe, ``--rates``, quick/full, optimizer, layers, sizes, rates, ...), named by
:func:`group_name` (``hatexplain/adamw/paper/full/recipe=paper``); two runs of one group, ratio and seed
are never merged: identical ones count once, different ones are a **conflict** and make the group's
verdict ``insufficient``. For each group and ratio the tables give mean :math:`\pm` sample std over seeds
of every metric in five **views**: the fixed-epoch model (``fixed_epoch``), the best-validation
checkpoint (``best_val``: lowest validation loss), **matched training loss** (``matched_loss``), and the
two baselines (``baseline.uniform``: the trained model with zeroed QK circuits, i.e. uniform attention;
``baseline.step0``: the untrained model). AC/ACMC are also given as gains over uniform.

Matched-loss levels (:func:`loss_levels`): each run is read on its segment from its **peak** (the
checkpoint of highest training loss: step 0 for most runs, later when a warm-up first raises the loss) to
its **best-validation checkpoint** (so never in the overfit regime past it). With :math:`L_\mathrm{lo}` the
largest over runs of the smallest training loss a run reaches on its segment and :math:`L_\mathrm{hi}` the
smallest peak loss, the levels :math:`L_\mathrm{lo}(L_\mathrm{hi}/L_\mathrm{lo})^{k/N}`, :math:`k = 0..N-1`
(:data:`N_LEVELS`), are crossed from above on its segment by every run of the group; none when
:math:`L_\mathrm{lo}\ge L_\mathrm{hi}`. Each run's metrics at a level are **interpolated** linearly in
training loss between the two checkpoints that bracket its first crossing (:func:`at_level`).

**The verdict** reads one pre-declared primary comparison per group (:mod:`qkov.study.real_inference`:
the registry's claim ratio vs 1 at best validation, mass and task metric, seed-level t-intervals, Holm over
those 2 tests); :func:`group_evidence` builds its typed evidence. Everything else here is **exploratory**:
the paired t-test and Wilcoxon p of every group, view, ratio and metric (``scipy.stats``) with Holm over
that whole table (:func:`holm_table`), and the 95 % seed-and-item bootstrap interval of the task-metric
difference (:func:`bootstrap_diff`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
from qkov.core.runstore import RunWriter, load_run
from qkov.study.claims import write_evidence
from qkov.study.real_inference import (ATTENTION_MARGIN, ATTENTION_METRIC, READING, TASK_MARGIN, Comparison,
                                       RealEvidence, RealVerdict, family_verdicts, judge_real, untrained_reason)
from validation.metrics.dtap import plot_dtap
from validation.metrics.stats import BOOT_SEED, N_BOOT, bootstrap_diff, holm, paired  # noqa: F401 (re-exported)
from theory.parametrization import BASELINE
from validation.real.config import claim_ratio
from validation.real.datasets import DATASETS as DATASET_REGISTRY

MIN_EFFECT = ATTENTION_MARGIN
"""Smallest change of the mean relevant mass (1 percentage point) that counts as a change."""
MARGIN = TASK_MARGIN
"""'No worse' margin of the task metric: 1 point (accuracy as a fraction, SQuAD F1 in percent)."""
KEY_IGNORED = ("ratio", "seed", "data_dir")
"""Config fields that do not define a group: the ratio and seed vary inside it; the data directory is where
the same files were read from."""
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


def group_key(config: dict[str, Any]) -> str:
    """The configuration of a run without :data:`KEY_IGNORED` (canonical JSON): runs with equal keys are the
    seeds x ratios of one experiment."""
    return json.dumps({k: v for k, v in config.items() if k not in KEY_IGNORED}, sort_keys=True)


def group_name(config: dict[str, Any]) -> str:
    """A readable group name: ``dataset/optimizer/model/quick|full`` plus every non-default recipe, rate
    factor, parametrization and layer count (``/recipe=paper``, ``/rates=embedding=30``, ``/layers=2``)."""
    parts = [str(config["dataset"]), str(config.get("optimizer", "adamw")), str(config.get("model", "small")),
             "quick" if config.get("quick") else "full"]
    if config.get("recipe", "ratio-only") != "ratio-only":
        parts.append(f"recipe={config['recipe']}")
    if config.get("rates"):
        parts.append("rates=" + ",".join(f"{k}={float(v):g}" for k, v in sorted(config["rates"].items())))
    for k, default in (("param", BASELINE), ("layers", 1), ("preset", "sized")):
        if config.get(k, default) != default:
            parts.append(f"{k}={config[k]}")
    return "/".join(parts)


def group_runs(runs: list[dict[str, Any]]) -> tuple[dict[str, dict[float, dict[int, dict]]], dict[str, list[str]]]:
    """``({name: {ratio: {seed: run}}}, {name: [conflict, ...]})`` grouped by :func:`group_key`. Names that two
    keys share get ``#<8 hex of the key's sha1>``. A second run of one group, ratio and seed is dropped when
    its task metric and mass equal the first's (a copy), else recorded as a conflict (never overwritten)."""
    by_key: dict[str, dict[float, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    conflicts: dict[str, list[str]] = defaultdict(list)
    names: dict[str, str] = {}
    for r in runs:
        c = r["config"]
        key = group_key(c)
        names.setdefault(key, group_name(c))
        ratio, seed = float(c["ratio"]), int(c["seed"])
        slot = by_key[key][ratio]
        if seed in slot:
            first = slot[seed]
            tm = task_metric(c["dataset"])
            same = all(first["metrics"].get(k) == r["metrics"].get(k) for k in (tm, "relevant_mass_mean"))
            if not same:
                conflicts[key].append(f"ratio {ratio:g} seed {seed}: {Path(first['dir']).name} and {Path(r['dir']).name}")
            continue
        slot[seed] = r
    taken = defaultdict(list)
    for key, name in names.items():
        taken[name].append(key)
    final = {key: (name if len(taken[name]) == 1 else f"{name}#{hashlib.sha1(key.encode()).hexdigest()[:8]}")
             for key, name in names.items()}
    return ({final[k]: v for k, v in by_key.items()}, {final[k]: v for k, v in conflicts.items()})


def majority_share(run: dict[str, Any]) -> float | None:
    """The share of the test split's most frequent class (the accuracy of always predicting it), from the
    run's stored labels; ``None`` without labels (SQuAD)."""
    labels = run["arrays"].get("labels")
    if labels is None or np.asarray(labels).size == 0:
        return None
    _, counts = np.unique(np.asarray(labels), return_counts=True)
    return float(counts.max() / counts.sum())


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


def loss_levels(curves: list[list[float]], n: int = N_LEVELS, ends: list[int | None] | None = None) -> list[float]:
    """Matched-loss levels crossed from above by every run on its segment from its peak to ``ends[r]`` (its
    best-validation checkpoint; default: its last) (module docstring); ``curves[r]`` = the training loss at
    each checkpoint of run ``r`` (step 0 first)."""
    if not curves or any(len(c) < 2 for c in curves):
        return []
    given: list[int | None] = ends or [None] * len(curves)
    stops = [len(c) - 1 if e is None else min(int(e), len(c) - 1) for c, e in zip(curves, given)]
    peaks = [peak_index(c[:e + 1]) for c, e in zip(curves, stops)]
    if any(i >= e for i, e in zip(peaks, stops)):
        return []                                   # a run still at its highest loss at its end
    lo = max(min(c[i + 1:e + 1]) for i, c, e in zip(peaks, curves, stops))
    hi = min(c[i] for i, c in zip(peaks, curves))
    if not (lo < hi) or lo <= 0:
        return []
    return [float(lo * (hi / lo) ** (k / n)) for k in range(n)]


def at_level(checkpoints: list[dict[str, Any]], level: float, end: int | None = None) -> dict[str, Any] | None:
    r"""The run's test metrics (plus step, epoch, train_loss = ``level``) where its training loss first
    reaches ``level`` after its peak (:func:`peak_index`) and at or before checkpoint ``end`` (default the
    last), **interpolated** linearly in training loss between the bracketing checkpoints ``j-1`` (above the
    level) and ``j`` (at or below): :math:`m = m_{j-1} + w (m_j - m_{j-1})`,
    :math:`w = (L_{j-1} - \ell)/(L_{j-1} - L_j)`. ``bracket`` holds ``(j-1, j)``; ``None`` when not reached."""
    if not checkpoints:
        return None
    last = len(checkpoints) - 1 if end is None else min(int(end), len(checkpoints) - 1)
    peak = peak_index([c["train_loss"] for c in checkpoints[:last + 1]])
    for j in range(peak + 1, last + 1):
        cj = checkpoints[j]
        if cj["train_loss"] <= level:
            ci = checkpoints[j - 1]
            gap = ci["train_loss"] - cj["train_loss"]
            w = 1.0 if gap <= 0 else min(1.0, max(0.0, (ci["train_loss"] - level) / gap))
            out: dict[str, Any] = {}
            for k, v in cj["test"].items():
                u = ci["test"].get(k)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(u, (int, float)):
                    out[k] = float(u + w * (v - u))
            out.update(step=ci["step"] + w * (cj["step"] - ci["step"]), epoch=ci["epoch"] + w * (cj["epoch"] - ci["epoch"]),
                       train_loss=float(min(level, ci["train_loss"])) if gap > 0 else cj["train_loss"],
                       bracket=[j - 1, j])
            return out
    return None


def best_index(run: dict[str, Any]) -> int | None:
    """The checkpoint index of the run's best-validation weights (``metrics.best_val.checkpoint``)."""
    b = run["metrics"].get("best_val") or {}
    return int(b["checkpoint"]) if isinstance(b.get("checkpoint"), (int, float)) else None


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


def _seed_values(by_ratio: dict[float, dict[int, dict[str, float]]], keys: Iterable[str]) -> dict[str, Any]:
    """``{ratio: {seed: {metric: value}}}`` (string keys, JSON-ready) of ``keys`` only."""
    return {f"{r:g}": {str(s): {k: float(v[k]) for k in keys if k in v and math.isfinite(v[k])}
                       for s, v in sorted(seeds.items())} for r, seeds in sorted(by_ratio.items())}


def summarise_groups(runs: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: C901 - known complexity debt (docs/architecture.md)
    """Per group (:func:`group_runs`): rows of every view, per-seed values of the primary metrics, paired tests,
    bootstrap, DTAP, conflicts."""
    grouped, conflicts = group_runs(runs)
    out: dict[str, Any] = {}
    for name, by_ratio in sorted(grouped.items()):
        dataset = next(iter(next(iter(by_ratio.values())).values()))["config"]["dataset"]
        tm = task_metric(dataset)
        names = metric_names(dataset)
        primary = (ATTENTION_METRIC, tm)
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
        # matched loss: each run on its segment from its peak to its best-validation checkpoint, interpolated
        all_runs = [run for seeds in by_ratio.values() for run in seeds.values()]
        curves = [[c["train_loss"] for c in run["metrics"].get("checkpoints", [])] for run in all_runs]
        levels = loss_levels(curves, ends=[best_index(run) for run in all_runs])
        matched: list[dict[str, Any]] = []
        for lev in levels:
            byr: dict[float, dict[int, dict[str, float]]] = defaultdict(dict)
            for ratio, seeds in by_ratio.items():
                for s, run in seeds.items():
                    hit = at_level(run["metrics"].get("checkpoints", []), lev, best_index(run))
                    if hit is not None:
                        uni = flat(run["metrics"].get("baseline", {}).get("uniform") or {})
                        byr[ratio][s] = _with_gains({k: v for k, v in hit.items() if not isinstance(v, list)}, uni)
            matched.append({"level": lev, "rows": _rows(byr, gain_names + ("step", "epoch", "train_loss")),
                            "paired": _paired_view(byr, PAIRED + ("answer_prob_geomean" if _generates(dataset) else tm,)),
                            "_by_ratio": byr})
        # bootstrap of the task metric difference from per-item scores (exploratory)
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
                scored = [x for x in b + o if x is not None]
                if common and len(scored) == len(b + o) and len({x.size for x in scored}) == 1:
                    boot[view][f"{ratio:g}"] = bootstrap_diff(np.array(b), np.array(o))
        dtap = {}
        for ratio in sorted(by_ratio):
            hs = [np.array(run["metrics"]["dtap"]) for run in by_ratio[ratio].values() if "dtap" in run["metrics"]]
            if hs:
                edges = next(iter(by_ratio[ratio].values()))["metrics"]["dtap_edges"]
                dtap[f"{ratio:g}"] = {"edges": edges, "mean_percent": np.mean(hs, axis=0).tolist()}
        majority = next((x for x in (majority_share(r) for r in by_ratio.get(1.0, {}).values()) if x is not None), None)
        out[name] = {
            "dataset": dataset, "claim_ratio": claim_ratio(dataset, all_runs[0]["config"].get("preset", "sized"), max(by_ratio)), "task_metric": tm,
            "config": json.loads(group_key(all_runs[0]["config"])), "conflicts": conflicts.get(name, []),
            "majority_share": majority,
            "rows": _rows(views["fixed_epoch"], gain_names),
            "best_val": {"rows": _rows(views["best_val"], gain_names + ("epoch", "val_loss"))},
            "baseline": {"uniform": {"rows": _rows(views["uniform"], names)},
                         "step0": {"rows": _rows(views["step0"], names)}},
            "matched_loss": {"levels": levels, "segment": "peak to best validation, interpolated",
                             "by_level": [{k: v for k, v in x.items() if k != "_by_ratio"} for x in matched]},
            "seed_values": {"fixed_epoch": _seed_values(views["fixed_epoch"], primary),
                            "best_val": _seed_values(views["best_val"], primary),
                            **({f"matched_loss@{matched[0]['level']:.4g}": _seed_values(matched[0]["_by_ratio"], primary)}
                               if matched else {})},
            "paired": {"fixed_epoch": _paired_view(views["fixed_epoch"], PAIRED + (tm,)),
                       "best_val": _paired_view(views["best_val"], PAIRED + (tm,)),
                       **{f"matched_loss@{x['level']:.4g}": x["paired"] for x in matched}},
            "bootstrap": boot, "dtap": dtap, "paper": PAPER.get(dataset, ""),
            "embedding_init": sorted({str(r["metrics"]["embedding_init"]) for r in all_runs
                                      if r["metrics"].get("embedding_init")}),
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

def _comparison(g: dict[str, Any], reading: str, metric: str, ratio: float | None = None) -> Comparison | None:
    """The per-seed differences of ``metric`` at ``reading`` between ``ratio`` (default: the group's claim ratio)
    and ratio 1 (seeds present at both), or ``None`` when either ratio is missing there."""
    vals = g.get("seed_values", {}).get(reading, {})
    r = f"{g['claim_ratio'] if ratio is None else ratio:g}"
    base, other = vals.get("1"), vals.get(r)
    if base is None or other is None or r == "1":
        return None
    seeds = sorted(set(base) & set(other), key=int)
    diffs = tuple(other[s][metric] - base[s][metric] for s in seeds if metric in base[s] and metric in other[s])
    if metric == ATTENTION_METRIC:
        return Comparison(metric, reading, float(r), diffs, ATTENTION_MARGIN)
    margin = TASK_MARGIN.get(metric, 0.01)
    return Comparison(metric, reading, float(r), diffs, margin, null=-margin)   # the non-inferiority test


def _means(rows: list[dict[str, Any]], key: str) -> dict[float, float]:
    return {row["ratio"]: row[key]["mean"] for row in rows if isinstance(row.get(key), dict)}


def group_evidence(name: str, g: dict[str, Any]) -> RealEvidence:
    """The typed evidence of one summary group for :func:`qkov.study.real_inference.judge_real`: the primary
    comparison at :data:`~qkov.study.real_inference.READING` (claim ratio vs 1, mass and task metric), whether
    the baseline trained, and the matched-loss mass comparison beside it (exploratory)."""
    tm = g["task_metric"]
    r = g["claim_ratio"]
    att, task = _comparison(g, READING, ATTENTION_METRIC), _comparison(g, READING, tm)
    best_rows = g.get("best_val", {}).get("rows", [])
    uni_rows = g.get("baseline", {}).get("uniform", {}).get("rows", [])
    fixed, uni_task = _means(g.get("rows", []), tm), _means(uni_rows, tm)
    mass = {k: v for k, v in _means(best_rows, ATTENTION_METRIC).items() if k in (1.0, r)}
    why = untrained_reason(tm, _means(best_rows, tm).get(1.0), g.get("majority_share"), mass,
                           _means(uni_rows, ATTENTION_METRIC),
                           {k: fixed[k] - uni_task[k] for k in mass if k in fixed and k in uni_task})
    exploratory = tuple(c for c in (_comparison(g, v, ATTENTION_METRIC) for v in g.get("seed_values", {})
                                    if v.startswith("matched_loss@")) if c is not None and c.n >= 2)
    return RealEvidence(g["dataset"], name, r, att, task, why, exploratory, tuple(g.get("conflicts", ())))


def judge_group(g: dict[str, Any], name: str = "") -> tuple[str, str]:
    """``(outcome, line)`` of one group by the pre-declared rule (:mod:`qkov.study.real_inference`)."""
    v = judge_real([group_evidence(name or g["dataset"], g)])[0]
    return v.verdict, v.line


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


def verdicts(groups: dict[str, Any]) -> list[RealVerdict]:
    """One :class:`~qkov.study.real_inference.RealVerdict` per group (dataset x configuration), in order."""
    return judge_real([group_evidence(name, g) for name, g in groups.items()])


def judge(groups: dict[str, Any]) -> dict[str, Any]:
    """The ``real-data`` claim entry ``{"verdict", "evidence", "groups", "lines"}``: the combined verdict, the
    per-group lines joined, each group's verdict and its line."""
    if not groups:
        return {"verdict": "insufficient", "evidence": "no completed real-data runs", "groups": {}, "lines": {}}
    vs = verdicts(groups)
    family = family_verdicts([group_evidence(name, g) for name, g in groups.items()])
    return {"verdict": combine_outcomes(v.verdict for v in vs), "evidence": "; ".join(v.line for v in vs),
            "groups": {v.group: v.verdict for v in vs}, "lines": {v.group: v.line for v in vs}, "family": family}


EVIDENCE_TEXT = ("Per dataset and configuration one pre-declared comparison: the registry's claim ratio vs 1 at the "
                 "best-validation checkpoint, mean relevant mass and the task metric, paired over seeds; one level: "
                 "every test one-sided 2.5 %, every interval the 95 % t-interval over seeds, every minimum detectable "
                 "effect against the null tested (power 0.8); supports = mass up by more than 0.01 and task no worse "
                 "than its margin, each leg at 2.5 % (intersection-union); "
                 "contradicts = mass up by less than 0.01 or task worse than its margin, after Holm over the 2; a baseline "
                 "that did not train, attention that never left uniform, conflicting runs or fewer than 2 seeds: "
                 "insufficient. Matched-loss readings (interpolated, before best validation) are exploratory.")


def dtap_figure_stem(name: str, g: dict[str, Any]) -> str:
    """Stem of the DTAP heatmap of group ``name`` at its claim ratio ("" when that ratio has none)."""
    ratio = f"{g['claim_ratio']:g}" if f"{g.get('claim_ratio', 0):g}" in g.get("dtap", {}) else None
    return _figure_stem(f"dtap_{name.replace('/', '_')}_r{ratio}") if ratio is not None else ""


def _figure_stem(stem: str) -> str:
    """``stem`` with every character outside ``[A-Za-z0-9._-]`` as ``_`` (group names hold ``=``, ``,``, ``#``)."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._-") else "_" for ch in stem)


def sweep_markdown(groups: dict[str, Any]) -> str:
    """Per group a compact ratio sweep at best validation and, beside it, at the fixed last epoch: per ratio the
    seeds, the task metric, the mass and AC (mean ± sd over seeds), each ratio's paired difference with ratio 1
    (95 % t-interval over seeds, n, MDE; exploratory except at the claim ratio at best validation), and the group's
    ``real-data`` verdict line."""
    lines: list[str] = []
    for name, g in groups.items():
        tm = g["task_metric"]
        lines += [f"**{name}** (claim ratio {g['claim_ratio']:g})", ""]
        for view, label, rows in ((READING, "best validation: the verdict's reading", g.get("best_val", {}).get("rows", [])),
                                  ("fixed_epoch", "fixed last epoch: exploratory", g.get("rows", []))):
            lines += [f"| ratio ({label}) | seeds | {tm} | mass | AC % | mass vs ratio 1 (paired) | "
                      f"{tm} vs ratio 1 (paired) |", "| --- | --- | --- | --- | --- | --- | --- |"]
            for row in rows:
                r = row["ratio"]
                cells = [_fmt(row.get(k), sc) for k, sc in ((tm, 1.0), (ATTENTION_METRIC, 1.0), ("attention_confidence", 100.0))]
                comps = [_comparison(g, view, m, r) if r != 1.0 else None for m in (ATTENTION_METRIC, tm)]
                lines.append(f"| {r:g} | {row['n_seeds']} | " + " | ".join(cells) + " | "
                             + " | ".join(c.describe() if c is not None else "-" for c in comps) + " |")
            lines.append("")
        verdict, line = judge_group(g, name)
        lines += [f"**{verdict}** — {line}", ""]
    return "\n".join(lines)


# --- the 2 x 2 decoupling design -----------------------------------------------------------------------------

def _design_key(config: dict[str, Any]) -> str:
    """A run's group key without ``recipe`` and ``rates``: the runs of one factorial design share it."""
    return json.dumps({k: v for k, v in json.loads(group_key(config)).items() if k not in ("recipe", "rates")},
                      sort_keys=True)


def decoupling_cells(runs: list[dict[str, Any]], factor: str = "embedding", view: str = READING
                     ) -> dict[tuple[float, float], dict[int, dict[str, float]]]:
    """``{(qk factor, factor's factor): {seed: {metric: value at view}}}`` of runs that agree in every config
    field but ratio, seed, data directory, recipe and rates (a ``ValueError`` otherwise); each run's factors
    are the resolved ones in its ``metrics.json`` (``rates``)."""
    base = {_design_key(r["config"]) for r in runs}
    if len(base) > 1:
        raise ValueError(f"decoupling: the runs differ in more than the ratio, seed, recipe and rates ({len(base)} configurations)")
    cells: dict[tuple[float, float], dict[int, dict[str, float]]] = defaultdict(dict)
    for r in runs:
        rates = r["metrics"].get("rates") or {}
        key = (float(rates.get("qk", r["config"]["ratio"])), float(rates.get(factor, 1.0)))
        m = r["metrics"].get("best_val") if view == "best_val" else r["metrics"]
        if m:
            cells[key][int(r["config"]["seed"])] = flat(m)
    return dict(cells)


def decoupling_markdown(run_dirs: Iterable[Path], factor: str = "embedding", low: float = 1.0, high: float = 30.0) -> str:
    """The 2 x 2 tables of a QK-factor x ``factor`` design at best validation: per cell n, mass, accuracy and AC
    (mean ± sd over seeds), then each paired effect (:func:`qkov.study.real_inference.factorial_effects`) with
    its 95 % t-interval over seeds, n and MDE, and the decoupling verdict
    (:func:`qkov.study.real_inference.judge_decoupling`)."""
    return decoupling_markdown_of(load_runs(run_dirs), factor, low, high)


def decoupling_markdown_of(runs: list[dict[str, Any]], factor: str = "embedding", low: float = 1.0,
                           high: float = 30.0) -> str:
    """:func:`decoupling_markdown` of loaded runs (:func:`load_runs`)."""
    from qkov.study.real_inference import factorial_effects, judge_decoupling

    cells = decoupling_cells(runs, factor)
    tm = task_metric(runs[0]["config"]["dataset"]) if runs else "accuracy"
    lines = [f"| QK factor | {factor} factor | seeds | {tm} | mass | AC % |", "| --- | --- | --- | --- | --- | --- |"]
    for (a, b), seeds in sorted(cells.items()):
        lines.append(f"| {a:g} | {b:g} | {','.join(map(str, sorted(seeds)))} | {_cell(seeds, tm)} | "
                     f"{_cell(seeds, ATTENTION_METRIC)} | {_cell(seeds, 'attention_confidence', 100, 1)} |")
    names = effect_names(factor, low, high)
    mass = factorial_effects(cells, ATTENTION_METRIC, ATTENTION_MARGIN, low, high)
    task = factorial_effects(cells, tm, TASK_MARGIN.get(tm, 0.01), low, high)
    lines += ["", *effects_table(mass, task, names, tm, "best validation")]
    fixed = decoupling_cells(runs, factor, "fixed_epoch")
    lines += ["", *effects_table(factorial_effects(fixed, ATTENTION_METRIC, ATTENTION_MARGIN, low, high),
                                 factorial_effects(fixed, tm, TASK_MARGIN.get(tm, 0.01), low, high), names, tm,
                                 "fixed last epoch; exploratory, not read by the verdict")]
    v = judge_decoupling(mass, task, runs[0]["config"]["dataset"] if runs else "")
    lines += ["", f"**Decoupling verdict (exploratory rule): {v.verdict}; interaction on the mass: {v.interaction}** "
              f"(qkov.study.real_inference.judge_decoupling) — {v.line}"]
    return "\n".join(lines)


def _cell(seeds: Mapping[int, Mapping[str, float]], k: str, scale: float = 1.0, digits: int = 3) -> str:
    """``mean ± sd`` over seeds of ``k`` (``-`` when absent)."""
    v = np.array([x[k] for x in seeds.values() if k in x], float) * scale
    return (f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}" if v.size > 1
            else (f"{v[0]:.{digits}f}" if v.size else "-"))


def effect_names(factor: str, low: float, high: float) -> dict[str, str]:
    """Row labels of the five effects of :func:`qkov.study.real_inference.factorial_effects`."""
    return {"A|B=low": f"QK {high:g}x vs {low:g}x at {factor} {low:g}x",
            "A|B=high": f"QK {high:g}x vs {low:g}x at {factor} {high:g}x",
            "B|A=low": f"{factor} {high:g}x vs {low:g}x at QK {low:g}x",
            "B|A=high": f"{factor} {high:g}x vs {low:g}x at QK {high:g}x",
            "interaction": "interaction (difference of differences)"}


def effects_table(mass: dict[str, Comparison], task: dict[str, Comparison], names: dict[str, str], tm: str,
                  view: str) -> list[str]:
    """Markdown rows: each effect's mean, 95 % t-interval over seeds, n and MDE (against +margin) on the mass and
    the task metric at ``view``."""
    out = [f"| effect (paired by seed, {view}) | mass | {tm} |", "| --- | --- | --- |"]
    out += [f"| {label} | {mass[k].describe()} | {task[k].describe()} |" for k, label in names.items()
            if k in mass and k in task]
    return out


def preregistered_markdown(plan: Any, runs: list[dict[str, Any]], wall_s: Mapping[str, float] | None = None) -> str:
    """The confirmatory section of a pre-registered 2 x 2 (:mod:`qkov.study.preregistered`): what completed (seeds,
    runs and, given ``wall_s`` ``{run name: seconds}``, each run's wall time), the cells at best validation over the
    complete seeds, the effects at best validation (the verdict's) and at the fixed last epoch (exploratory), and
    the rule's verdict."""
    from qkov.study.preregistered import complete_seeds, judge_preregistered, plan_cells, plan_effects

    views, problems, ignored = plan_cells(plan, runs)
    best = views["best_val"]
    done = complete_seeds(plan, best)
    n_runs = sum(len(by) for by in best.values())
    lines = [f"**Pre-registered plan `{plan.id}`** (docs/preregistration/{plan.id}.md; code {plan.code_commit[:7]}): "
             f"{len(done)} of {plan.n} seeds complete ({', '.join(map(str, done)) or 'none'}); "
             f"{n_runs} of {4 * plan.n} runs present" + (f"; ignored: {'; '.join(ignored)}" if ignored else ""), ""]
    if wall_s:
        mine = [r for r in runs if r["dir"].name in wall_s and r["config"].get("dataset") == plan.dataset]
        rates = [(int(r["config"]["seed"]), float((r["metrics"].get("rates") or {}).get("qk", r["config"]["ratio"])),
                  float((r["metrics"].get("rates") or {}).get(plan.factor, 1.0)), wall_s[r["dir"].name]) for r in mine]
        lines += [f"Wall time per run (seed, QK x {plan.factor} factor; from each record's provenance): " + "; ".join(f"{s} {a:g}x{b:g} {w / 60:.0f} min" for s, a, b, w in sorted(rates)),
                  ""]
    tm = plan.task_metric
    keep = set(done)
    lines += [f"| QK factor | {plan.factor} factor | seeds | {tm} | mass | AC % |", "| --- | --- | --- | --- | --- | --- |"]
    for (a, b), by in sorted(best.items()):
        seeds = {s: v for s, v in by.items() if s in keep}
        lines.append(f"| {a:g} | {b:g} | {len(seeds)} | {_cell(seeds, tm)} | {_cell(seeds, ATTENTION_METRIC)} | "
                     f"{_cell(seeds, 'attention_confidence', 100, 1)} |")
    names = effect_names(plan.factor, plan.low, plan.high)
    mass, task = plan_effects(plan, best, done)
    fm, ft = plan_effects(plan, views["fixed_epoch"], done)
    lines += ["", *effects_table(mass, task, names, tm, "best validation; the verdict's"), "",
              *effects_table(fm, ft, names, tm, "fixed last epoch; exploratory, not read by the verdict")]
    v = judge_preregistered(plan, best, problems)
    lines += ["", f"**Confirmatory verdict: {v.verdict}; interaction on the mass: {v.interaction or 'not read'}** "
              f"(qkov.study.preregistered.judge_preregistered) — {v.line}"]
    return "\n".join(lines)


def _complete(cells: Mapping[tuple[float, float], Mapping[int, Mapping[str, float]]], low: float, high: float,
              metrics: Iterable[str]) -> list[int]:
    """Seeds (ascending) with every metric of ``metrics`` in all four cells of a ``low``/``high`` 2 x 2."""
    keys = [(a, b) for a in (low, high) for b in (low, high)]
    need = set(metrics)
    seeds = set.intersection(*(set(cells.get(k, {})) for k in keys))
    return sorted(s for s in seeds if all(need <= set(cells[k][s]) for k in keys))


def side_by_side_markdown(plan: Any, exploratory: list[dict[str, Any]], confirmatory: list[dict[str, Any]],
                          exploratory_set: str = "", confirmatory_set: str = "") -> str:
    """The exploratory 2 x 2 (``exploratory`` runs: any seeds, its rule committed after its data) beside the
    pre-registered confirmatory one (``confirmatory`` runs, :mod:`qkov.study.preregistered`), both read by the
    plan's legs, level and interaction margin at best validation: per leg the paired effect with its 95 %
    t-interval, n, MDE and one-sided p; the interaction on the mass with its reading and on the task metric; each
    column's verdict. The confirmatory column decides: until every pre-registered seed is complete the heading
    reads ``interim: k of n seeds`` and the confirmatory verdict is the rule's ``insufficient``."""
    from qkov.study.preregistered import complete_seeds, judge_preregistered, plan_cells, plan_effects
    from qkov.study.real_inference import factorial_effects, interaction_reading, judge_decoupling

    tm = plan.task_metric
    ex_cells = decoupling_cells(exploratory, plan.factor) if exploratory else {}
    ex_done = _complete(ex_cells, plan.low, plan.high, (ATTENTION_METRIC, tm))
    ex_sub = {k: {s: v for s, v in by.items() if s in ex_done} for k, by in ex_cells.items()}
    ex = (factorial_effects(ex_sub, ATTENTION_METRIC, plan.attention_margin, plan.low, plan.high),
          factorial_effects(ex_sub, tm, plan.task_margin, plan.low, plan.high))
    views, problems, _ = plan_cells(plan, confirmatory)
    best = views["best_val"]
    done = complete_seeds(plan, best)
    co = plan_effects(plan, best, done)
    complete = len(done) == plan.n and not problems
    status = f"{len(done)} of {plan.n} seeds" if complete else f"interim: {len(done)} of {plan.n} seeds"
    v_ex = judge_decoupling(*ex, plan.dataset, plan.alpha, plan.legs, plan.interaction_margin)
    v_co = judge_preregistered(plan, best, problems)

    def seeds_txt(seeds: list[int]) -> str:
        if not seeds:
            return "none"
        run = seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2
        return f"{seeds[0]}-{seeds[-1]}" if run else ", ".join(map(str, seeds))

    def leg_cell(leg: Any, effects: tuple[dict[str, Comparison], dict[str, Comparison]]) -> str:
        c = effects[0 if leg.side == "attention" else 1].get(leg.effect)
        if c is None or c.n < 2:
            return "n<2"
        t = leg.of(c)
        return f"{t.describe()}; p={t.p():.2g}"

    def inter_cell(effects: tuple[dict[str, Comparison], dict[str, Comparison]], side: int) -> str:
        c = effects[side].get("interaction")
        if c is None or c.n < 2:
            return "n<2"
        return c.describe() + (f": {interaction_reading(c, plan.interaction_margin, plan.alpha)}" if side == 0 else "")

    src = f" (`records/{exploratory_set}.jsonl`)" if exploratory_set else ""
    csrc = f" (`records/{confirmatory_set}.jsonl`)" if confirmatory_set else ""
    head = (f"**Confirmatory verdict ({status}): {v_co.verdict}; interaction on the mass: {v_co.interaction}**"
            if complete else f"**Confirmatory verdict: none yet ({status}; the interim numbers decide nothing)**")
    lines = [head + f" — plan `{plan.id}` (docs/preregistration/{plan.id}.md, one-sided {plan.alpha:g} per leg, "
             f"95 % t-intervals, best validation). Both columns are read by the plan's rule "
             f"(qkov.study.preregistered); the confirmatory column decides, the exploratory one does not "
             f"(its rule was committed after its data).", "",
             f"| | exploratory: seeds {seeds_txt(ex_done)}{src} | confirmatory ({status}): seeds "
             f"{seeds_txt(done)}{csrc} |", "| --- | --- | --- |"]
    for leg in plan.legs:
        lines.append(f"| {leg.name()} | {leg_cell(leg, ex)} | {leg_cell(leg, co)} |")
    lines += [f"| H4 interaction on the mass (positive / negative / additive within +-{plan.interaction_margin:g}) | "
              f"{inter_cell(ex, 0)} | {inter_cell(co, 0)} |",
              f"| interaction on {tm} (reported, not a leg) | {inter_cell(ex, 1)} | {inter_cell(co, 1)} |",
              f"| verdict; interaction on the mass | {v_ex.verdict}; {v_ex.interaction} (does not decide) | "
              + (f"**{v_co.verdict}; {v_co.interaction}** (decides) |" if complete
                 else f"{v_co.verdict} ({status}: no verdict before all {plan.n} seeds) |")]
    if complete:
        lines += ["", f"What the outcome means (the plan's text): {plan.outcomes.get(f'{v_co.verdict}+{v_co.interaction}', plan.outcomes[v_co.verdict])}"]
    return "\n".join(lines)


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
        conflict = f"; CONFLICTING RUNS: {'; '.join(g['conflicts'])}" if g.get("conflicts") else ""
        lines += [f"### {name} (claim ratio {g['claim_ratio']:g}; paper: {g['paper']}{conflict})", "",
                  "| view | ratio | seeds | " + " | ".join(cols) + " |",
                  "| --- | --- | --- | " + " | ".join("---" for _ in cols) + " |"]
        views = [("fixed epoch", g["rows"]), ("best val", g["best_val"]["rows"])]
        views += [(f"matched loss {x['level']:.3g} (interpolated, before best val)", x["rows"])
                  for x in g["matched_loss"]["by_level"]]
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
        lines += ["### Exploratory: paired tests with ratio 1 (all groups, views, ratios and metrics; Holm over this "
                  "whole table; the verdict does not read it)", "",
                  "| group | view | ratio | metric | n | mean diff | t-test p | Holm p | Wilcoxon p |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {t['group']} | {t['view']} | {t['ratio']} | {t['metric']} | {t['n']} | {t['mean_diff']:+.4g} | "
                  f"{t['t_p']:.3g} | {t['p_holm']:.3g} | {t['wilcoxon_p']:.3g} |" for t in tests]
        lines.append("")
    if claim:
        lines += [f"**real-data verdict: {claim['verdict']}** (one pre-declared comparison per dataset and "
                  "configuration; qkov.study.real_inference)", ""]
        lines += [f"- **{claim['groups'][n]}** — {line}" for n, line in claim.get("lines", {}).items()]
        fam = claim.get("family") or {}
        if len(fam) > 1:
            lines += ["", f"One family across the {len(fam)} groups (each group's supports / contradicts p Holm-adjusted "
                      "over the groups; what a reader may quote when picking one group out: "
                      "qkov.study.real_inference.family_verdicts): "
                      + "; ".join(f"{n} **{v}**" for n, v in fam.items())]
        lines.append("")
    return "\n".join(lines)


def decoupling_sections(runs: list[dict[str, Any]], factor: str = "embedding", low: float = 1.0,
                        high: float = 30.0) -> str:
    """The 2 x 2 section (:func:`decoupling_markdown_of`) of every set of runs that agree in all but ratio, seed,
    recipe and rates and fill the four cells (QK factor x ``factor``'s factor at ``low``/``high``); ``""`` when
    none does."""
    sets: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        sets[_design_key(r["config"])].append(r)
    out = []
    for rs in sets.values():
        cells = decoupling_cells(rs, factor)
        if all((a, b) in cells for a in (low, high) for b in (low, high)):
            out += [f"### 2 x 2 design: QK factor x {factor} factor ({rs[0]['config']['dataset']}, best validation)", "",
                    decoupling_markdown_of(rs, factor, low, high), ""]
    return "\n".join(out)


def summarise(run_dirs: Iterable[Path], out_dir: Path, *, kind: str = "validate-real-summary",
              config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``tables.json``, ``tables.md``, ``tests.json``, ``claims.json`` and one DTAP heatmap per group
    and ratio; return ``{"groups", "tests", "claims", "n_runs"}``."""
    runs = load_runs(run_dirs)
    groups = summarise_groups(runs)
    tests = holm_table(groups)
    claim = judge(groups)
    from qkov.study.rules import real_data_evidence   # one Evidence per group, judged by the rules module

    evidence = real_data_evidence(groups)
    with RunWriter(out_dir, kind=kind, config=config or {"runs": sorted(str(r["dir"].name) for r in runs)}) as w:
        w.write_json("tables.json", groups)
        w.write_json("tests.json", tests)
        w.write_text("tables.md", markdown_tables(groups, tests, claim) + decoupling_sections(runs))
        write_evidence(w, evidence)
        for name, g in groups.items():
            for ratio, h in g["dtap"].items():
                fig = plot_dtap(np.array(h["mean_percent"]), h["edges"],
                                title=f"{name}, eta_QK/eta_OV = {ratio} (mean over seeds)")
                w.write_figure(_figure_stem(f"dtap_{name.replace('/', '_')}_r{ratio}"), fig)
    return {"groups": groups, "tests": tests, "claims": {"real-data": claim}, "evidence": evidence,
            "n_runs": len(runs)}
