"""Study runs of kind ``figure2``: the paper's Figure 2 for one parametrization, and its evidence.

One run per parametrization (:class:`validation.synthetic.figure2.Figure2Config`): equal rates against
faster QK, several seeds each, SGD on the paper preset. The run writes ``metrics.json`` (seed means and
spreads of the held-out attention split, p_true, test loss), ``figure2.npz``, the DTAP panels
(``figure2_dtap``), the attention split (``attention_split``) and ``claims.json``: :func:`evidence` on
``sharpness-ratio`` — does faster QK raise held-out attention on the distinct tokens?
"""

from __future__ import annotations

import pathlib
from typing import Any

from qkov.core.config import parse_config
from qkov.core.runstore import RunWriter, config_key
from qkov.study.claims import THRESHOLDS, Evidence, attention_moved, beyond_chance, write_evidence
from theory.parametrization import PARAMETRIZATIONS
from validation.synthetic.experiment import torch_threads
from validation.synthetic.figure2 import Figure2Config, attention_split_figure, figure2_summary, train_figure2
from validation.synthetic.paper_fast import dtap_panels_figure

KIND = "figure2"
STAGE = "synthetic"
UNIFORM_RESOLUTION = THRESHOLDS["attention-resolution"].bound
"""Distinct attention within this of its value at the start (1e-6 I: uniform attention) means the QK circuit
did not leave its start; two seed means closer than this are a tie (theory.claims.THRESHOLDS)."""


def study_configs(quick: bool) -> list[Figure2Config]:
    """One config per parametrization. Full: the paper's (5 seeds, 10^5 steps at lr 0.01, faster QK 0.2).
    Quick: the docs' 10x-rate horizon shortened to 10^4 steps, 2 seeds, 500 held-out sequences per seed."""
    if quick:
        base = Figure2Config(equal_rates=(0.1, 0.1), faster_qk_rates=(2.0, 0.1), seeds=(1234, 1235), steps=10_000,
                             log_every=500, test_size=500, segment=10_000)
    else:
        base = Figure2Config()
    return [base.replace(param=p) for p in PARAMETRIZATIONS]


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def evidence(summary: dict[str, Any]) -> list[Evidence]:
    """``sharpness-ratio`` from one parametrization's two settings (equal rates, faster QK).

    ``insufficient`` when the runs did not leave their start: a setting whose held-out p_true is not beyond chance
    (1/VOCAB + the chance margin, :func:`qkov.study.claims.beyond_chance`), or distinct attention within
    :data:`UNIFORM_RESOLUTION` of its start value in both settings (:func:`qkov.study.claims.attention_moved`); or when the difference of the seed means is
    within the seed spread (the larger of the two settings' max - min over seeds, at least the resolution);
    otherwise ``supports`` if faster QK raises distinct attention, ``contradicts`` if it lowers it. The numbers
    also give the query's share (query position + its id's copies in context) and p_true.
    """
    eq, fq = summary["settings"][0], summary["settings"][1]
    d = {k: s["final"]["distinct"] for k, s in (("eq", eq), ("fq", fq))}
    start = eq["start"]["distinct"]
    spread = max(d["eq"]["max"] - d["eq"]["min"], d["fq"]["max"] - d["fq"]["min"])
    diff = d["fq"]["mean"] - d["eq"]["mean"]
    from validation.synthetic.paper_preset import VOCAB

    named = (("equal rates", eq), ("faster QK", fq))
    stuck = [f"{k}: p_true {s['final']['p_true']['mean']:.3f} at chance (1/{VOCAB} + "
             f"{THRESHOLDS['chance-margin'].bound:g})" for k, s in named
             if not beyond_chance(s["final"]["p_true"]["mean"], 1.0 / VOCAB)]
    if not any(attention_moved(s["final"]["distinct"]["mean"] - s["start"]["distinct"]) for _, s in named):
        stuck.append(f"in neither setting did the distinct attention move by more than {UNIFORM_RESOLUTION:g} "
                     "(it stays uniform)")

    def q(s):
        return s["final"]["query"]["mean"] + s["final"]["query_copies"]["mean"]

    n_seeds = len(summary["seeds"])
    numbers = (f"{summary['param']}, paper preset, SGD, {n_seeds} seeds, {summary['steps'][-1]} steps: held-out "
               f"distinct attention equal rates (QK {eq['lr_qk']:g}, OV {eq['lr_ov']:g}) {_num(d['eq']['mean'])} "
               f"-> faster QK (QK {fq['lr_qk']:g}, OV {fq['lr_ov']:g}) {_num(d['fq']['mean'])} (difference "
               f"{diff:+.3f}, seed spread {spread:.3f}; uniform {start:.3f}); query + query-id copies "
               f"{q(eq):.3f} -> {q(fq):.3f}; p_true {_num(eq['final']['p_true']['mean'])} -> "
               f"{_num(fq['final']['p_true']['mean'])}")
    if stuck:
        verdict, why = "insufficient", ("the runs did not leave their start (" + "; ".join(stuck) + "), so the "
                                        "comparison says nothing about the claim.")
    elif abs(diff) <= max(spread, UNIFORM_RESOLUTION):
        verdict, why = "insufficient", "the difference is within the seed spread."
    elif diff > 0:
        verdict, why = "supports", "faster QK learning raises held-out attention on the distinct tokens."
    else:
        where = " (it goes to the query's id instead)" if q(fq) > q(eq) + spread else ""
        verdict, why = "contradicts", f"faster QK learning lowers held-out attention on the distinct tokens{where}."
    return [Evidence("sharpness-ratio", STAGE, verdict, numbers, "attention_split",
                     "Figure 2 (paper preset, class-specific query token): " + why + " Distinct tokens are the "
                     "class's tokens (ids >= 10); the query id (a common-token id) also identifies the class.")]


def checkpoint_path(config: dict) -> pathlib.Path:
    """Where a long run saves its progress between segments (the derivation cache dir, keyed by the config)."""
    from theory.derivation_cache import cache_dir

    return cache_dir() / "figure2" / f"{config_key(KIND, config)}.pt"


def execute(config: dict, run_dir: pathlib.Path) -> dict[str, Any]:
    """Train one ``figure2`` run (resuming a checkpoint of the same config) and write it into ``run_dir``."""
    cfg = parse_config(Figure2Config, **config)
    with torch_threads(1):   # small matrices: one thread is fastest and shares a busy machine
        res = train_figure2(cfg, checkpoint=checkpoint_path(cfg.to_json_dict()) if cfg.steps > cfg.segment else None)
    summary = figure2_summary(cfg, res)
    with RunWriter(run_dir, kind=KIND, config=config, seed=cfg.seeds[0]) as run:
        run.write_json("metrics.json", {"config": cfg.to_json_dict(), **summary})
        run.write_arrays("figure2.npz", steps=res.steps, dtap=res.dtap, **res.split)
        run.write_figure("figure2_dtap", dtap_panels_figure([res]))
        run.write_figure("attention_split", attention_split_figure(summary))
        ev = write_evidence(run, evidence(summary))
    return {"summary": summary, "evidence": ev}
