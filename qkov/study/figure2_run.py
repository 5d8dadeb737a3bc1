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
from qkov.study import evidence_types as et
from qkov.study.claims import Evidence, write_evidence
from qkov.study.rules import evidence as judged
from theory.parametrization import PARAMETRIZATIONS
from validation.synthetic.experiment import torch_threads
from validation.synthetic.figure2 import Figure2Config, attention_split_figure, figure2_summary, train_figure2
from validation.synthetic.paper_fast import dtap_panels_figure

KIND = "figure2"
STAGE = "synthetic"


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


def preset_label(summary: dict[str, Any]) -> str:
    """What the run's settings are beside the paper's Figure 2 (:class:`Figure2Config`'s defaults: equal rates
    (QK 0.01, OV 0.01) vs faster QK (QK 0.2, OV 0.01)): ``"paper preset"`` only at the paper's four rates;
    ``"paper preset at 10x the paper's rates"`` when every rate is one common multiple of the paper's; else
    ``"paper preset data and model, not the paper's rates"``."""
    paper = Figure2Config()
    ours = [(float(s["lr_qk"]), float(s["lr_ov"])) for s in summary["settings"][:2]]
    ref = [tuple(map(float, x)) for x in (paper.equal_rates, paper.faster_qk_rates)]
    factors = {round(a / b, 9) for o, r in zip(ours, ref) for a, b in zip(o, r)}
    if factors == {1.0}:
        return "paper preset"
    if len(factors) == 1:
        return f"paper preset at {factors.pop():g}x the paper's rates"
    return "paper preset data and model, not the paper's rates"


def figure2_evidence(summary: dict[str, Any]) -> et.Figure2:
    """The typed evidence of one parametrization's two settings (equal rates, faster QK): seed means of the final
    and starting distinct attention, its seed range, p_true and the query's share (query position + its id's
    copies in context)."""
    from validation.synthetic.paper_preset import VOCAB

    def setting(name: str, s: dict[str, Any]) -> et.Figure2Setting:
        d = s["final"]["distinct"]
        return et.Figure2Setting(name, d["mean"], s["start"]["distinct"], d["min"], d["max"],
                                 s["final"]["p_true"]["mean"],
                                 s["final"]["query"]["mean"] + s["final"]["query_copies"]["mean"])

    eq, fq = summary["settings"][0], summary["settings"][1]
    scope = (f"{summary['param']}, {preset_label(summary)}, SGD, {len(summary['seeds'])} seeds, {summary['steps'][-1]} steps, "
             f"equal rates (QK {eq['lr_qk']:g}, OV {eq['lr_ov']:g}) vs faster QK (QK {fq['lr_qk']:g}, "
             f"OV {fq['lr_ov']:g})")
    return et.Figure2(summary["param"], setting("equal rates", eq), setting("faster QK", fq), 1.0 / VOCAB, scope)


def evidence(summary: dict[str, Any]) -> list[Evidence]:
    """``sharpness-ratio`` from one parametrization's two settings (equal rates, faster QK), judged by
    :func:`qkov.study.rules.figure2_rule` (insufficient when a setting predicts at chance, when the distinct
    attention stayed uniform in both settings, or when the difference is within the seed spread; else supports
    if faster QK raises distinct attention, contradicts if it lowers it)."""
    ev = figure2_evidence(summary)
    eq, fq = ev.equal, ev.faster
    spread = max(eq.distinct_max - eq.distinct_min, fq.distinct_max - fq.distinct_min)
    numbers = (f"{ev.scope}: held-out distinct attention equal rates {_num(eq.distinct)} -> faster QK "
               f"{_num(fq.distinct)} (difference {fq.distinct - eq.distinct:+.3f}, seed spread {spread:.3f}; uniform "
               f"{eq.distinct_start:.3f}); query + query-id copies {eq.query_share:.3f} -> {fq.query_share:.3f}; "
               f"p_true {_num(eq.p_true)} -> {_num(fq.p_true)}")
    return [judged("sharpness-ratio", STAGE, ev, numbers, "attention_split",
                   "Figure 2 (paper preset, class-specific query token): does faster QK learning raise held-out "
                   "attention on the distinct tokens? Distinct tokens are the class's tokens (ids >= 10); the query "
                   "id (a common-token id) also identifies the class. Insufficient when a setting predicts at chance, "
                   "the attention stayed uniform, or the difference is within the seed spread.")]


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
