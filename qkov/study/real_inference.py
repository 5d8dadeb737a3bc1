r"""The ``real-data`` verdict: one pre-declared primary comparison per dataset, judged from seed-level
intervals with Holm over exactly the tests the verdict reads (a pure function of typed evidence).

**The primary comparison** (declared here, before any run is read): the dataset registry's claim ratio
(:attr:`validation.real.datasets.Dataset.paper_ratio`: HateXplain 30, SVA 100, SQuAD 20; a preset may declare its own, e.g. `powered` 10: ``config.claim_ratio``) against ratio 1,
paired by seed, at the **best-validation checkpoint** of each run (:data:`READING`: each run's own
early-stopped model), on two metrics: the mean relevant attention mass (:data:`ATTENTION_METRIC`) and the
dataset's task metric (its registry ``summary_metric``: accuracy, SQuAD F1 in points).

**The unit is the seed.** For each metric the per-seed differences :math:`d_s` (claim ratio minus ratio 1)
give a t-interval over seeds (:func:`validation.metrics.stats.seed_interval`, :data:`LEVEL`), one-sided
t-tests against the margins (:func:`~validation.metrics.stats.one_sided_p`) and the minimum detectable
effect at that ``n`` (:func:`~validation.metrics.stats.min_detectable_effect`, one-sided level
:math:`\alpha/2` = Holm's first step, power :data:`POWER`). Margins: attention :data:`ATTENTION_MARGIN`
(1 point of mass), task :data:`TASK_MARGIN` (1 point).

**The rule** (:func:`judge_real_evidence`):

- ``insufficient``: conflicting runs for one configuration, a comparison missing or with fewer than 2
  seeds, a baseline that did not train (ratio 1's best-validation task metric within the margin of the
  majority-class share; SQuAD F1 below :data:`UNTRAINED_F1`), or attention that never left uniform at
  either ratio (best-validation mass within the margin of the uniform-attention mass at both);
- ``supports``: both one-sided tests of the *supports* family reject after Holm (m = 2) at
  :data:`ALPHA` -- the mass rises by more than its margin (:math:`H_0: \mu \le +0.01`) and the task metric is
  no worse than its margin (:math:`H_0: \mu \le -m`) -- and neither interval straddles both of its margins;
- ``contradicts``: a test of the *contradicts* family rejects after Holm (m = 2): the mass rose by less
  than its margin (:math:`H_0: \mu \ge +0.01`: it fell, or did not move) or the task metric is worse than
  its margin (:math:`H_0: \mu \ge -m`);
- ``inconclusive`` otherwise (in particular whenever the attention interval straddles both its margins).

The two families are complementary (each test of one is the other's with the inequality reversed), so a
comparison cannot both support and contradict. Every other comparison (other ratios and views, matched
training loss) is *exploratory*: reported beside the verdict with its own interval, never read by it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

from validation.metrics.stats import holm, min_detectable_effect, one_sided_p, seed_interval

READING = "best_val"
"""The declared reading point of the primary comparison: each run's best-validation checkpoint."""
ATTENTION_METRIC = "relevant_mass_mean"
ALPHA = 0.05
LEVEL = 0.95
"""Level of the printed two-sided t-intervals (their ends are the one-sided 2.5 % bounds)."""
POWER = 0.8
ATTENTION_MARGIN = 0.01
"""Smallest change of the mean relevant mass that counts (1 point)."""
TASK_MARGIN = {"accuracy": 0.01, "f1": 1.0}
"""'No worse' margin of the task metric: 1 point (accuracy as a fraction, SQuAD F1 in percent)."""
UNTRAINED_F1 = 1.0
"""A SQuAD baseline whose best-validation F1 is below 1 point did not train."""
VERDICTS = ("supports", "contradicts", "inconclusive", "insufficient")


@dataclass(frozen=True)
class Comparison:
    """Per-seed paired differences ``diffs[s] = metric(claim ratio, seed s) - metric(ratio 1, seed s)`` of one
    ``metric`` at one ``reading`` point (``best_val``, ``fixed_epoch``, ``matched_loss@L``), with the
    ``margin`` that counts as a relevant change."""

    metric: str
    reading: str
    ratio: float
    diffs: tuple[float, ...]
    margin: float

    @property
    def n(self) -> int:
        return len(self.diffs)

    def interval(self) -> dict[str, float]:
        """The two-sided :data:`LEVEL` t-interval over seeds (``n``, ``mean``, ``sd``, ``lo``, ``hi``)."""
        return seed_interval(self.diffs, LEVEL)

    def mde(self, alpha: float = ALPHA / 2) -> float:
        """Minimum detectable effect at this ``n`` and spread (one-sided ``alpha``, power :data:`POWER`)."""
        iv = self.interval()
        return min_detectable_effect(iv["sd"], self.n, alpha, POWER)

    def straddles_both_margins(self) -> bool:
        iv = self.interval()
        return iv["lo"] < -self.margin and iv["hi"] > self.margin

    def describe(self, scale: float = 1.0) -> str:
        """``"+0.150 [95% t +0.050, +0.250], n=3, MDE 0.13"``."""
        iv = self.interval()
        if self.n < 2:
            return f"{iv['mean'] * scale:+.3g}, n={self.n} (no interval)" if self.n else "n=0"
        return (f"{iv['mean'] * scale:+.3g} [{LEVEL:.0%} t {iv['lo'] * scale:+.3g}, {iv['hi'] * scale:+.3g}], "
                f"n={self.n}, MDE {self.mde() * scale:.2g}")


@dataclass(frozen=True)
class RealEvidence:
    """What the verdict of one dataset (one configuration group) reads.

    ``attention``/``task``: the primary comparisons (``None`` when a side is missing); ``untrained``: why the
    comparison cannot discriminate ("" when it can: the baseline trained and the attention left uniform);
    ``exploratory``: comparisons reported beside, never judged; ``conflicts``: runs of one configuration,
    ratio and seed whose results differ."""

    dataset: str
    group: str
    claim_ratio: float
    attention: Comparison | None
    task: Comparison | None
    untrained: str = ""
    exploratory: tuple[Comparison, ...] = ()
    conflicts: tuple[str, ...] = ()


@dataclass(frozen=True)
class RealVerdict:
    """The verdict of one :class:`RealEvidence`: ``verdict`` (one of :data:`VERDICTS`), ``line`` (the numbers
    it rests on: the comparison read, n, the intervals, the MDEs, the Holm p), ``tests`` (the Holm family
    that decided, each ``{"test", "p", "p_holm"}``)."""

    dataset: str
    group: str
    verdict: str
    line: str
    tests: tuple[dict, ...] = field(default_factory=tuple)


def _family(tests: list[tuple[str, float]]) -> list[dict]:
    adj = holm([p for _, p in tests])
    return [{"test": name, "p": p, "p_holm": a} for (name, p), a in zip(tests, adj)]


def judge_real_evidence(ev: RealEvidence, alpha: float = ALPHA) -> RealVerdict:
    """The verdict of one dataset's primary comparison (module docstring); pure."""
    head = f"{ev.dataset} ({ev.group})"
    r = f"{ev.claim_ratio:g}"
    if ev.conflicts:
        return RealVerdict(ev.dataset, ev.group, "insufficient",
                           f"{head}: conflicting runs for one configuration ({'; '.join(ev.conflicts)}) -> insufficient")
    a, t = ev.attention, ev.task
    if a is None or t is None or a.n < 2 or t.n < 2:
        which = ("attention" if a is None or a.n < 2 else "task metric")
        short = a if which == "attention" else t
        n = 0 if short is None else short.n
        return RealVerdict(ev.dataset, ev.group, "insufficient",
                           f"{head}: ratio {r} vs 1 at {READING}: {which} comparison has {n} paired seed(s) "
                           f"(needs 2) -> insufficient")
    reading = f"ratio {r} vs 1 at {a.reading}"
    desc = f"{a.metric} {a.describe()}; {t.metric} {t.describe()}"
    if ev.untrained:
        return RealVerdict(ev.dataset, ev.group, "insufficient",
                           f"{head}: {reading}: {ev.untrained}; {desc} -> insufficient")
    sup = _family([(f"{a.metric} rises by > {a.margin:g}", one_sided_p(a.diffs, a.margin, "greater")),
                   (f"{t.metric} no worse than -{t.margin:g}", one_sided_p(t.diffs, -t.margin, "greater"))])
    con = _family([(f"{a.metric} rises by < {a.margin:g}", one_sided_p(a.diffs, a.margin, "less")),
                   (f"{t.metric} worse than -{t.margin:g}", one_sided_p(t.diffs, -t.margin, "less"))])
    wide = [c.metric for c in (a, t) if c.straddles_both_margins()]
    if all(x["p_holm"] < alpha for x in sup) and not wide:
        verdict, decided = "supports", sup
    elif any(x["p_holm"] < alpha for x in con):
        verdict, decided = "contradicts", con
    else:
        verdict, decided = "inconclusive", sup
    ps = ", ".join(f"{x['test']} p_Holm={x['p_holm']:.2g}" for x in decided)
    extra = f"; interval straddles both margins: {', '.join(wide)}" if wide and verdict == "inconclusive" else ""
    beside = "".join(f"; exploratory: {c.metric} at {c.reading} {c.describe()}" for c in ev.exploratory)
    line = f"{head}: {reading}: {desc}; Holm over these 2 tests ({ps}){extra} -> {verdict}{beside}"
    return RealVerdict(ev.dataset, ev.group, verdict, line, tuple(decided))


def judge_real(evidence: Iterable[RealEvidence], alpha: float = ALPHA) -> list[RealVerdict]:
    """:func:`judge_real_evidence` of each dataset's evidence, in order: the ``real-data`` claim's rule
    (one verdict and one Evidence line per dataset/configuration; combining them is the claims module's)."""
    return [judge_real_evidence(e, alpha) for e in evidence]


def untrained_reason(task_metric: str, baseline_task: float | None, majority: float | None,
                     mass: dict[float, float], uniform_mass: dict[float, float],
                     uniform_cost: dict[float, float] | None = None) -> str:
    """Why a comparison cannot discriminate, or ``""``: the ratio-1 baseline's best-validation task metric
    ``baseline_task`` at the majority class (within the margin of the majority share ``majority``; SQuAD F1
    below :data:`UNTRAINED_F1`), or an attention that never left uniform: at every ratio of ``mass``
    (``{ratio: best-val mean}``; ``uniform_mass`` likewise) the mass is within :data:`ATTENTION_MARGIN` of the
    uniform attention's *and* forcing uniform attention costs less than the task margin (``uniform_cost``,
    ``{ratio: fixed-epoch task metric minus the uniform-attention model's}``; missing = not checked). The
    second clause keeps a deep decoder whose rollout mass sits near uniform while uniform attention costs it
    most of its F1 from being called untrained."""
    margin = TASK_MARGIN.get(task_metric, 0.01)
    if baseline_task is not None and math.isfinite(baseline_task):
        if task_metric == "f1" and baseline_task < UNTRAINED_F1:
            return f"the ratio-1 baseline did not train (F1 {baseline_task:.3g} < {UNTRAINED_F1:g})"
        if majority is not None and task_metric != "f1" and baseline_task <= majority + margin:
            return (f"the ratio-1 baseline did not train ({task_metric} {baseline_task:.3g} = the majority class's "
                    f"{majority:.3g} within {margin:g})")
    cost = uniform_cost or {}
    if mass and all(r in uniform_mass for r in mass) and all(
            abs(mass[r] - uniform_mass[r]) < ATTENTION_MARGIN and abs(cost.get(r, 0.0)) < margin for r in mass):
        return ("the attention never left uniform (best-val mass within "
                f"{ATTENTION_MARGIN:g} of the uniform attention's at ratios {', '.join(f'{r:g}' for r in sorted(mass))})")
    return ""


def factorial_effects(cells: dict[tuple[float, float], dict[int, dict[str, float]]], metric: str, margin: float,
                      low: float = 1.0, high: float = 30.0) -> dict[str, Comparison]:
    r"""The paired-by-seed effects of a 2 x 2 design on ``metric``: ``cells[(a, b)][seed][metric]`` with factor
    A (the QK factor) and B (e.g. the embedding's factor) each at ``low`` / ``high``.

    ``"A|B=low"`` = :math:`y_{hl} - y_{ll}`, ``"A|B=high"`` = :math:`y_{hh} - y_{lh}`, ``"B|A=low"`` =
    :math:`y_{lh} - y_{ll}`, ``"B|A=high"`` = :math:`y_{hh} - y_{hl}`, ``"interaction"`` =
    :math:`y_{hh} - y_{hl} - y_{lh} + y_{ll}`; each over the seeds present in every cell it reads. A
    missing cell leaves its effects out."""
    terms = {"A|B=low": {(high, low): 1, (low, low): -1}, "A|B=high": {(high, high): 1, (low, high): -1},
             "B|A=low": {(low, high): 1, (low, low): -1}, "B|A=high": {(high, high): 1, (high, low): -1},
             "interaction": {(high, high): 1, (high, low): -1, (low, high): -1, (low, low): 1}}
    out: dict[str, Comparison] = {}
    for name, weights in terms.items():
        if not all(c in cells for c in weights):
            continue
        seeds = sorted(set.intersection(*(set(s for s, v in cells[c].items() if metric in v) for c in weights)))
        diffs = tuple(sum(w * cells[c][s][metric] for c, w in weights.items()) for s in seeds)
        out[name] = Comparison(metric, name, high, diffs, margin)
    return out


DECOUPLING_TESTS = (("A|B=low", "attention", "greater"), ("B|A=low", "attention", "less"), ("B|A=low", "task", "greater"))
"""The decoupling statement's *supports* family, declared before any run is read: (1) the QK factor alone (at
the slow embedding) raises the mass by more than its margin; (2) the embedding's factor alone (at the slow QK)
raises the mass by *less* than its margin; (3) the embedding's factor alone raises the task metric by more than
its margin (the arm that predicts better)."""


def judge_decoupling(mass: dict[str, Comparison], task: dict[str, Comparison], dataset: str = "",
                     alpha: float = ALPHA) -> RealVerdict:
    r"""The verdict on "sharpening is not a by-product of better prediction" from a QK-factor x embedding-factor
    2 x 2 design (:func:`factorial_effects` of the mass, ``mass``, and of the task metric, ``task``; paired by
    seed at best validation).

    - ``insufficient``: an effect of :data:`DECOUPLING_TESTS` missing or with fewer than 2 seeds, or the
      embedding arm shown *not* to predict better (test (3) reversed rejects: then the design has no
      "better prediction" to separate sharpening from);
    - ``contradicts``: test (1) or (2) reversed rejects after Holm (m = 2): the QK factor alone raises the mass
      by less than the margin, or the embedding's factor alone raises it by more (sharpening follows prediction);
    - ``supports``: the three tests of :data:`DECOUPLING_TESTS` reject after Holm (m = 3);
    - ``inconclusive`` otherwise.
    """
    head = f"decoupling{f' ({dataset})' if dataset else ''}"
    src = {"attention": mass, "task": task}
    found = [(name, src[side].get(name), side, alt) for name, side, alt in DECOUPLING_TESTS]
    short = [f"{side} {name}" for name, c, side, _ in found if c is None or c.n < 2]
    comps = [(name, c, side, alt) for name, c, side, alt in found if c is not None]
    if short:
        return RealVerdict(dataset, "decoupling", "insufficient",
                           f"{head}: {', '.join(short)} missing or with fewer than 2 paired seeds -> insufficient")
    labels = {("A|B=low", "attention"): "QK alone raises the mass", ("B|A=low", "attention"): "embedding alone raises the mass",
              ("B|A=low", "task"): "embedding alone raises the task metric"}
    desc = "; ".join(f"{labels[(name, side)]}: {c.metric} {c.describe()}" for name, c, side, _ in comps)

    def p(c: Comparison, alt: str) -> float:
        return one_sided_p(c.diffs, c.margin, alt)

    def flip(alt: str) -> str:
        return "less" if alt == "greater" else "greater"

    sup = _family([(f"{labels[(n, sd)]} {'>' if alt == 'greater' else '<'} {c.margin:g}", p(c, alt))
                   for n, c, sd, alt in comps])
    con = _family([(f"{labels[(n, sd)]} {'<' if alt == 'greater' else '>'} {c.margin:g}", p(c, flip(alt)))
                   for n, c, sd, alt in comps[:2]])
    _, c3, _, alt3 = comps[2]
    no_better = p(c3, flip(alt3)) < alpha
    if any(x["p_holm"] < alpha for x in con):
        verdict, decided = "contradicts", con
    elif all(x["p_holm"] < alpha for x in sup):
        verdict, decided = "supports", sup
    elif no_better:
        verdict, decided = "insufficient", sup
    else:
        verdict, decided = "inconclusive", sup
    ps = ", ".join(f"{x['test']} p_Holm={x['p_holm']:.2g}" for x in decided)
    why = "; the embedding arm did not predict better" if verdict == "insufficient" else ""
    return RealVerdict(dataset, "decoupling", verdict, f"{head}: {desc}; Holm over {len(decided)} tests ({ps}){why} -> {verdict}",
                       tuple(decided))


__all__ = ["factorial_effects", "judge_decoupling", "DECOUPLING_TESTS", "Comparison", "RealEvidence", "RealVerdict", "judge_real", "judge_real_evidence", "untrained_reason",
           "READING", "ATTENTION_METRIC", "ATTENTION_MARGIN", "TASK_MARGIN", "ALPHA", "LEVEL", "POWER"]
