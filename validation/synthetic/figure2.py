r"""The paper's Figure 2 as one run per parametrization: settings x seeds of :func:`paper_fast.train_paper`.

:class:`Figure2Config` says what to train (the paper's defaults: 5 seeds 1234-1238, equal rates
(0.01, 0.01) against faster QK (0.2, 0.01), 10^5 SGD steps). :func:`train_figure2` trains in segments of
``segment`` steps (each resumes the previous one exactly, :func:`paper_fast.train_paper` with ``resume``)
and, given a ``checkpoint`` path, saves the state after each segment and continues from it when called
again with the same configuration, so a long run that is killed keeps its progress.
:func:`figure2_summary` reduces the result to plain JSON (seed means and spreads of the held-out attention
split, true-token probability and test loss); :func:`attention_split_figure` and
:func:`paper_fast.dtap_panels_figure` draw it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from theory.parametrization import BASELINE, ParamName, Parametrization
from annotated_types import MinLen

from theory.files import atomic_write_bytes
from theory.spec import Ge, Le, PositiveFinite, Spec
from simulation.plots import OKABE_ITO
from validation.synthetic.paper_fast import PaperRunResult, train_paper

PAPER_SEEDS = (1234, 1235, 1236, 1237, 1238)
SPLIT_PARTS = ("distinct", "query", "query_copies", "commons")
SPLIT_LABELS = {"distinct": "distinct tokens", "query": "query position", "query_copies": "query-id copies in context",
                "commons": "other commons"}
SPLIT_COLORS = {"distinct": OKABE_ITO[0], "query": OKABE_ITO[1], "query_copies": OKABE_ITO[4], "commons": "#BBBBBB"}
"""Okabe-Ito blue, vermillion and orange, and grey for the uninformative commons."""


@dataclass(frozen=True, kw_only=True)
class Figure2Config(Spec):
    """One parametrization of Figure 2: equal rates against faster QK, ``len(seeds)`` seeds each."""

    param: ParamName = BASELINE
    equal_rates: tuple[PositiveFinite, PositiveFinite] = (0.01, 0.01)
    """(lr_QK, lr_OV) of the equal-rates setting."""
    faster_qk_rates: tuple[PositiveFinite, PositiveFinite] = (0.2, 0.01)
    """(lr_QK, lr_OV) of the faster-QK setting."""
    seeds: Annotated[tuple[Annotated[int, Ge(0)], ...], MinLen(1)] = PAPER_SEEDS
    steps: Annotated[int, Ge(1), Le(10_000_000)] = 100_000
    log_every: Annotated[int, Ge(1)] = 5000
    test_size: Annotated[int, Ge(1), Le(100_000)] = 2000
    batch_size: Annotated[int, Ge(1), Le(10_000)] = 32
    segment: Annotated[int, Ge(1)] = 10_000
    """Steps per segment (a checkpoint after each); a multiple of ``chunk`` keeps the data stream of one go."""
    chunk: Annotated[int, Ge(1)] = 500

    @property
    def settings(self) -> list[tuple[float, float]]:
        (a, b), (c, d) = self.equal_rates, self.faster_qk_rates
        return [(a, b), (c, d)]


def _merge(a: PaperRunResult, b: PaperRunResult) -> PaperRunResult:
    """``b`` continues ``a``: its first log (the step ``a`` ended at) is ``a``'s last, so it is dropped."""
    b.steps = a.steps + b.steps[1:]
    b.split = {k: np.concatenate([a.split[k], b.split[k][:, 1:]], axis=1) for k in b.split}
    b.wall_s += a.wall_s
    return b


def train_figure2(cfg: Figure2Config, checkpoint: Path | None = None, threads: int | None = None) -> PaperRunResult:
    """Train ``cfg`` in segments; with ``checkpoint``, save after each and resume a saved one (same ``cfg``)."""
    import torch

    done: PaperRunResult | None = None
    if checkpoint is not None and checkpoint.is_file():
        try:
            saved = torch.load(checkpoint, weights_only=False)
            if saved.get("config") == cfg.to_json_dict():
                done = saved["result"]
        except Exception:  # noqa: BLE001 - an unreadable checkpoint is ignored: the run starts afresh
            done = None
    while done is None or done.state["step"] < cfg.steps:
        first = 0 if done is None else done.state["step"]
        n = min(cfg.segment, cfg.steps - first)
        res = train_paper(Parametrization(cfg.param), cfg.settings, list(cfg.seeds), n, batch_size=cfg.batch_size,
                          log_every=cfg.log_every, test_size=cfg.test_size, chunk=cfg.chunk, threads=threads,
                          resume=None if done is None else done.state)
        done = res if done is None else _merge(done, res)
        if checkpoint is not None and done.state["step"] < cfg.steps:
            buf = io.BytesIO()
            torch.save({"config": cfg.to_json_dict(), "result": done}, buf)
            atomic_write_bytes(checkpoint, buf.getvalue())
    if checkpoint is not None:
        checkpoint.unlink(missing_ok=True)
    return done


def _f(x: Any) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def figure2_summary(cfg: Figure2Config, res: PaperRunResult) -> dict[str, Any]:
    """Per setting: rates, seed mean / min / max of each attention part, ``p_true`` and test loss at the end and
    at the start (step 0: ``1e-6 I`` gives uniform attention), and the seed-mean curves over the logged steps."""
    n_seeds = len(res.seeds)
    out: dict[str, Any] = {"param": res.param, "seeds": list(res.seeds), "steps": list(res.steps), "wall_s": res.wall_s, "settings": []}
    names = ("equal rates", "faster QK")
    for i, (lq, lo) in enumerate(res.settings):
        rows = slice(i * n_seeds, (i + 1) * n_seeds)
        s: dict[str, Any] = {"name": names[i] if i < len(names) else f"setting {i}", "lr_qk": lq, "lr_ov": lo,
                             "ratio": lq / lo, "final": {}, "start": {}, "curve": {}}
        for k in (*SPLIT_PARTS, "p_true", "test_loss"):
            v = np.asarray(res.split[k][rows], dtype=float)
            s["final"][k] = {"mean": _f(v[:, -1].mean()), "min": _f(v[:, -1].min()), "max": _f(v[:, -1].max()),
                             "per_seed": [_f(x) for x in v[:, -1]]}
            s["start"][k] = _f(v[:, 0].mean())
            s["curve"][k] = [_f(x) for x in v.mean(0)]
        if res.dtap is not None:
            s["dtap_percent"] = np.asarray(res.dtap[rows]).mean(0).round(3).tolist()
        out["settings"].append(s)
    return out


def attention_split_figure(summary: dict[str, Any]):
    """Stacked bars per setting (seed means: distinct / query / query-id copies / other commons), seed range as
    error bars on the distinct part; right: distinct attention and p_true over training, one line per setting."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 3.4))
    ax, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})
    sets = summary["settings"]
    x = np.arange(len(sets))
    bottom = np.zeros(len(sets))
    for part in SPLIT_PARTS:
        h = np.array([s["final"][part]["mean"] for s in sets], dtype=float)
        ax.bar(x, h, bottom=bottom, color=SPLIT_COLORS[part], label=SPLIT_LABELS[part], width=0.6,
               edgecolor="white", lw=0.5)
        for xi, b, hi in zip(x, bottom, h, strict=False):
            if hi >= 0.04:
                ax.text(xi, b + hi / 2, f"{hi:.2f}", ha="center", va="center", fontsize=7)
        if part == "distinct":
            lo = h - np.array([s["final"][part]["min"] for s in sets], dtype=float)
            hi_ = np.array([s["final"][part]["max"] for s in sets], dtype=float) - h
            ax.errorbar(x, h, yerr=[lo, hi_], fmt="none", ecolor="black", capsize=3, lw=0.8)
        bottom += h
    ax.axhline(sets[0]["start"]["distinct"], color="black", ls=":", lw=0.8)
    ax.set_xticks(x, [f"{s['name']}\nQK {s['lr_qk']:g} / OV {s['lr_ov']:g}\np_true {s['final']['p_true']['mean']:.2f}"
                      for s in sets], fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("held-out attention (seed mean)")
    ax.set_title(f"{summary['param']}: where the attention goes\n(dotted: uniform attention on distinct tokens)", fontsize=8)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    steps = np.asarray(summary["steps"], dtype=float)
    for s, c in zip(sets, OKABE_ITO, strict=False):
        ax2.plot(steps, s["curve"]["distinct"], color=c, label=f"{s['name']}: distinct attention")
        ax2.plot(steps, s["curve"]["p_true"], color=c, ls="--", label=f"{s['name']}: p(true token)")
    ax2.set_xlabel("SGD step")
    ax2.set_ylim(0, 1.02)
    ax2.set_title(f"held-out, mean over {len(summary['seeds'])} seeds", fontsize=8)
    ax2.legend(fontsize=6)
    fig.tight_layout()
    return fig


__all__ = ["Figure2Config", "PAPER_SEEDS", "train_figure2", "figure2_summary", "attention_split_figure"]
