r"""The paper's Figure 2 as one run per parametrization: settings x seeds of :func:`paper_fast.train_paper`.

:class:`Figure2Config` says what to train (the paper's defaults: 5 seeds 1234-1238, equal rates
(0.01, 0.01) against faster QK (0.2, 0.01), 10^5 SGD steps). :func:`train_figure2` trains in segments of
``segment`` steps (each resumes the previous one exactly, :func:`paper_fast.train_paper` with ``resume``)
and, given a ``checkpoint`` path, saves the state after each segment and continues from it when called
again with the same configuration, so a long run that is killed keeps its progress. A checkpoint holds tensors
and plain values only, read with ``weights_only=True`` and checked against the configuration before use
(:func:`read_checkpoint`): a planted, foreign or damaged file is not used and never executed.
:func:`figure2_summary` reduces the result to plain JSON (seed means and spreads of the held-out attention
split, true-token probability and test loss); :func:`attention_split_figure` and
:func:`paper_fast.dtap_panels_figure` draw it.
"""

from __future__ import annotations

import io
import json
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


CHECKPOINT_FORMAT = 1
"""The layout of a Figure 2 checkpoint (:func:`checkpoint_bytes`); a file of another format is not used."""


class CheckpointIgnoredWarning(UserWarning):
    """A Figure 2 checkpoint that is not used (unreadable, another configuration, wrong contents): the run starts
    from step 0 and overwrites it."""


def _tensors(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    import torch

    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}


def checkpoint_bytes(cfg: Figure2Config, res: PaperRunResult) -> bytes:
    """``res`` (the run of ``cfg`` so far) as one ``torch.save`` of tensors and plain values only, so that
    ``torch.load(..., weights_only=True)`` reads it back and nothing in it can run code (issue 44: it was a
    pickle of the result)."""
    import torch

    payload = {"format": CHECKPOINT_FORMAT, "config": json.dumps(cfg.to_json_dict(), sort_keys=True),
               "param": str(res.param), "settings": [[float(a), float(b)] for a, b in res.settings],
               "seeds": [int(s) for s in res.seeds], "steps": [int(s) for s in res.steps],
               "wall_s": float(res.wall_s), "split": _tensors(res.split), "final": _tensors(res.final),
               "dtap": None if res.dtap is None else torch.from_numpy(np.ascontiguousarray(res.dtap)),
               "state": {"w": {k: v.detach().cpu() for k, v in res.state["w"].items()},
                         "gens": [g.cpu() for g in res.state["gens"]], "step": int(res.state["step"])}}
    buf = io.BytesIO()
    torch.save(payload, buf)
    return buf.getvalue()


def _shape_problem(name: str, x: Any, shape: tuple[int, ...], float_: bool = True) -> str | None:
    import torch

    if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape:
        return f"{name}: not a tensor of shape {shape}"
    if float_ and not (x.is_floating_point() and bool(torch.isfinite(x).all())):
        return f"{name}: not finite floats"
    return None


def checkpoint_problem(saved: Any, cfg: Figure2Config) -> str | None:
    """``None`` when ``saved`` (what :func:`checkpoint_bytes` wrote, read back) is a checkpoint of ``cfg``: its
    configuration, format and every shape (``n = 2 * len(seeds)`` models of 50x50 matrices, one generator
    state per seed, ``(n, logs)`` splits), a step within ``[1, cfg.steps]`` at the last log; else one line."""
    import torch

    from validation.synthetic import paper_preset as pp

    if not isinstance(saved, dict) or saved.get("format") != CHECKPOINT_FORMAT:
        return "not a checkpoint of this format"
    if saved.get("config") != json.dumps(cfg.to_json_dict(), sort_keys=True):
        return "written for another configuration"
    n, v = len(cfg.settings) * len(cfg.seeds), pp.VOCAB
    state, steps = saved.get("state"), saved.get("steps")
    if not (isinstance(state, dict) and isinstance(state.get("w"), dict) and isinstance(state.get("gens"), list)):
        return "state: must hold w and gens"
    step = state.get("step")
    if type(step) is not int or not 1 <= step <= cfg.steps:
        return f"state.step: {str(step)[:40]}: must be an integer in [1, {cfg.steps}]"
    if not (isinstance(steps, list) and steps and all(type(s) is int for s in steps) and steps[-1] == step
            and all(a < b for a, b in zip(steps, steps[1:]))):
        return "steps: must be increasing integers ending at state.step"
    names = set(Parametrization(cfg.param).qk.factors + Parametrization(cfg.param).ov.factors)
    if set(state["w"]) != names:
        return f"state.w: must hold {', '.join(sorted(names))}"
    ref = torch.Generator().get_state()
    if len(state["gens"]) != len(cfg.seeds) or any(
            not (isinstance(g, torch.Tensor) and g.dtype == ref.dtype and g.shape == ref.shape) for g in state["gens"]):
        return f"state.gens: must be {len(cfg.seeds)} generator states"
    split, final = saved.get("split"), saved.get("final")
    if not (isinstance(split, dict) and set(split) == {*SPLIT_PARTS, "p_true", "test_loss"}):
        return "split: wrong parts"
    if not (isinstance(final, dict) and set(final) == {"W_KQ", "W_OV"}):
        return "final: must hold W_KQ and W_OV"
    if saved.get("dtap") is not None and (p := _shape_problem("dtap", saved["dtap"], (n, 5, 5))):
        return p
    if not (isinstance(saved.get("wall_s"), float) and saved["wall_s"] >= 0):
        return "wall_s: not a duration"
    checks: list[tuple[str, Any, tuple[int, ...]]] = [(f"state.w.{k}", x, (n, v, v)) for k, x in state["w"].items()]
    checks += [(f"split.{k}", x, (n, len(steps))) for k, x in split.items()]
    checks += [(f"final.{k}", x, (n, v, v)) for k, x in final.items()]
    return next((p for p in (_shape_problem(*c) for c in checks) if p), None)


def read_checkpoint(path: Path, cfg: Figure2Config) -> PaperRunResult | None:
    """The run of ``cfg`` saved at ``path``, or ``None`` (absent: silently; else with a
    :class:`CheckpointIgnoredWarning` naming the file and what is wrong). Read with ``weights_only=True``,
    never through a symbolic link, and checked against ``cfg`` (:func:`checkpoint_problem`) before use."""
    import warnings

    import torch

    from theory.files import read_nofollow

    try:
        raw = read_nofollow(path)
    except FileNotFoundError:
        return None
    try:
        with warnings.catch_warnings():  # torch notes a foreign file's pickle protocol: the one line below says it
            warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
            saved = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
        problem = checkpoint_problem(saved, cfg)
    except Exception as exc:  # noqa: BLE001 - unreadable, foreign (a pickle of objects): not used, never run
        problem = f"not read ({type(exc).__name__})"
    if problem is not None:
        warnings.warn(f"figure2 checkpoint: {path}: {problem}; training starts from step 0",
                      CheckpointIgnoredWarning, stacklevel=2)
        return None
    st = saved["state"]
    res = PaperRunResult(saved["param"], [tuple(s) for s in saved["settings"]], list(saved["seeds"]),
                         list(saved["steps"]), split={k: v.numpy() for k, v in saved["split"].items()},
                         dtap=None if saved["dtap"] is None else saved["dtap"].numpy(), wall_s=saved["wall_s"],
                         final={k: v.numpy() for k, v in saved["final"].items()},
                         state={"w": dict(st["w"]), "gens": list(st["gens"]), "step": st["step"]})
    return res


def train_figure2(cfg: Figure2Config, checkpoint: Path | None = None, threads: int | None = None) -> PaperRunResult:
    """Train ``cfg`` in segments; with ``checkpoint``, save after each and resume a saved one (same ``cfg``,
    checked: :func:`read_checkpoint`)."""
    done: PaperRunResult | None = read_checkpoint(checkpoint, cfg) if checkpoint is not None else None
    while done is None or done.state["step"] < cfg.steps:
        first = 0 if done is None else done.state["step"]
        n = min(cfg.segment, cfg.steps - first)
        res = train_paper(Parametrization(cfg.param), cfg.settings, list(cfg.seeds), n, batch_size=cfg.batch_size,
                          log_every=cfg.log_every, test_size=cfg.test_size, chunk=cfg.chunk, threads=threads,
                          resume=None if done is None else done.state)
        done = res if done is None else _merge(done, res)
        if checkpoint is not None and done.state["step"] < cfg.steps:
            atomic_write_bytes(checkpoint, checkpoint_bytes(cfg, done))
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


__all__ = ["Figure2Config", "PAPER_SEEDS", "train_figure2", "read_checkpoint", "checkpoint_bytes", "checkpoint_problem",
           "CheckpointIgnoredWarning", "figure2_summary", "attention_split_figure"]
