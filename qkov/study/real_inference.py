r"""The ``real-data`` verdict: one pre-declared primary comparison per dataset, judged from seed-level
intervals at **one stated level** (a pure function of typed evidence).

**The primary comparison** (declared here, before any run is read): the dataset registry's claim ratio
(:attr:`validation.real.datasets.Dataset.paper_ratio`: HateXplain 30, SVA 100, SQuAD 20; a preset may declare its own, e.g. `powered` 10: ``config.claim_ratio``) against ratio 1,
paired by seed, at the **best-validation checkpoint** of each run (:data:`READING`: each run's own
early-stopped model), on two metrics: the mean relevant attention mass (:data:`ATTENTION_METRIC`) and the
dataset's task metric (its registry ``summary_metric``: accuracy, SQuAD F1 in points).

**One level** (issue 45; the numbers live in :data:`theory.claims.THRESHOLDS`, ``real-*``): every test is
one-sided at :data:`ALPHA` = 2.5 %, every printed interval is the two-sided :data:`LEVEL` = 95 % t-interval over
seeds (whose ends are exactly the one-sided 2.5 % bounds), and every minimum detectable effect is the true mean
at which that one-sided 2.5 % test **against the null it is actually tested against** (the margin, not 0) has
power :data:`POWER`. So a leg rejects iff its interval clears its null: no verdict is printed beside an
interval that contradicts it. (Before issue 45 the tests ran at one-sided 5 % beside 95 % intervals and the
MDE was computed against 0: "supports" could sit beside an interval whose lower end was below the margin.)

**The unit is the seed.** For each metric the per-seed differences :math:`d_s` (claim ratio minus ratio 1)
give a t-interval over seeds (:func:`validation.metrics.stats.seed_interval`), one-sided t-tests against the
nulls (:func:`~validation.metrics.stats.one_sided_p`) and the MDE at that ``n``
(:func:`~validation.metrics.stats.min_detectable_effect`). Margins: attention :data:`ATTENTION_MARGIN`
(1 point of mass), task :data:`TASK_MARGIN` (1 point).

**The rule** (:func:`judge_real_evidence`):

- ``insufficient``: conflicting runs for one configuration, a comparison missing or with fewer than 2
  seeds, a baseline that did not train (ratio 1's best-validation task metric within the margin of the
  majority-class share; SQuAD F1 below :data:`UNTRAINED_F1`), or attention that never left uniform at
  either ratio (best-validation mass within the margin of the uniform-attention mass at both);
- ``supports``: **both** legs reject at one-sided :data:`ALPHA` -- the mass rises by more than its margin
  (:math:`H_0: \mu \le +0.01`) and the task metric is no worse than its margin (:math:`H_0: \mu \le -m`, the
  non-inferiority test: the 95 % interval's lower end above :math:`-m`). A conjunction is an
  intersection-union test (Berger 1982): its error is at most :data:`ALPHA` with no adjustment, so each leg's
  interval is the one that decides;
- ``contradicts``: a reversed leg rejects after Holm over the 2 (a union needs the adjustment): the mass rose
  by less than its margin (:math:`H_0: \mu \ge +0.01`: it fell, or did not move) or the task metric is worse
  than its margin (:math:`H_0: \mu \ge -m`);
- ``inconclusive`` otherwise (in particular whenever an interval straddles both its margins).

A comparison cannot both support and contradict (a leg's interval cannot lie both above and below its null).
Every other comparison (other ratios and views, matched training loss, the fixed epoch) is *exploratory*:
reported beside the verdict with its own interval, never read by it. The groups of one report are each their
own question (a dataset, a model, a recipe): the claim's overall verdict (``combine_outcomes``) says
``supports`` only when every judged group supports, an intersection-union again; reading one group out of
several as a finding is a selection, so :func:`family_verdicts` also gives each group's verdict after Holm over
the groups (the family across the real-data claims).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from theory.claims import THRESHOLDS
from validation.metrics.stats import holm, min_detectable_effect, one_sided_p, seed_interval

READING = "best_val"
"""The declared reading point of the primary comparison: each run's best-validation checkpoint."""
ATTENTION_METRIC = "relevant_mass_mean"
ALPHA = THRESHOLDS["real-alpha"].bound
"""One-sided level of every real-data test (2.5 %)."""
LEVEL = 1.0 - 2.0 * ALPHA
"""Level of the printed two-sided t-intervals (95 %: their ends are the one-sided :data:`ALPHA` bounds)."""
POWER = THRESHOLDS["real-power"].bound
ATTENTION_MARGIN = THRESHOLDS["real-attention-margin"].bound
"""Smallest change of the mean relevant mass that counts (1 point)."""
TASK_MARGIN = {"accuracy": THRESHOLDS["real-task-margin-accuracy"].bound, "f1": THRESHOLDS["real-task-margin-f1"].bound}
"""'No worse' margin of the task metric: 1 point (accuracy as a fraction, SQuAD F1 in percent)."""
UNTRAINED_F1 = THRESHOLDS["real-untrained-f1"].bound
"""A SQuAD baseline whose best-validation F1 is below 1 point did not train."""
VERDICTS = ("supports", "contradicts", "inconclusive", "insufficient")
ALTERNATIVES = ("greater", "less")


@dataclass(frozen=True)
class Comparison:
    """Per-seed paired differences ``diffs[s] = metric(claim ratio, seed s) - metric(ratio 1, seed s)`` of one
    ``metric`` at one ``reading`` point (``best_val``, ``fixed_epoch``, ``matched_loss@L``), with the
    ``margin`` that counts as a relevant change, and the test it is read by: ``H0: mu <= null`` against
    ``alternative="greater"`` or ``H0: mu >= null`` against ``"less"`` (``null`` ``None``: ``+margin``)."""

    metric: str
    reading: str
    ratio: float
    diffs: tuple[float, ...]
    margin: float
    null: float | None = None
    alternative: str = "greater"

    def __post_init__(self) -> None:
        if self.alternative not in ALTERNATIVES:
            raise ValueError(f"alternative: {self.alternative!r}: must be one of {', '.join(ALTERNATIVES)}")

    @property
    def n(self) -> int:
        return len(self.diffs)

    @property
    def h0(self) -> float:
        """The null's boundary of this comparison's test (``null``, else ``+margin``)."""
        return self.margin if self.null is None else self.null

    def tested(self, null: float, alternative: str) -> "Comparison":
        """The same differences read by another one-sided test (``H0: mu <= null`` for ``"greater"``)."""
        return replace(self, null=null, alternative=alternative)

    def interval(self) -> dict[str, float]:
        """The two-sided :data:`LEVEL` t-interval over seeds (``n``, ``mean``, ``sd``, ``lo``, ``hi``)."""
        return seed_interval(self.diffs, LEVEL)

    def p(self, reverse: bool = False) -> float:
        """One-sided p of this comparison's test at its null (``reverse``: the opposite alternative)."""
        alt = self.alternative if not reverse else ("less" if self.alternative == "greater" else "greater")
        return one_sided_p(self.diffs, self.h0, alt)

    def mde(self, alpha: float = ALPHA) -> float:
        r"""The minimum detectable effect **against the null tested**: the true mean at which the one-sided
        ``alpha`` test of ``H0: mu <= null`` (``"greater"``; ``>=`` for ``"less"``) rejects with probability
        :data:`POWER` at this ``n`` and spread, :math:`	ext{null} \pm \delta` with :math:`\delta` the
        noncentral-t distance (:func:`~validation.metrics.stats.min_detectable_effect`)."""
        delta = min_detectable_effect(self.interval()["sd"], self.n, alpha, POWER)
        return self.h0 + delta if self.alternative == "greater" else self.h0 - delta

    def straddles_both_margins(self) -> bool:
        iv = self.interval()
        return iv["lo"] < -self.margin and iv["hi"] > self.margin

    def describe(self, scale: float = 1.0) -> str:
        """``"+0.150 [95% t +0.050, +0.250], n=3, MDE +0.21 against +0.01"``: the mean, the interval, n and the
        MDE against the null of this comparison's test (one-sided :data:`ALPHA`, power :data:`POWER`; below the null
        for a ``"less"`` test)."""
        iv = self.interval()
        if self.n < 2:
            return f"{iv['mean'] * scale:+.3g}, n={self.n} (no interval)" if self.n else "n=0"
        return (f"{iv['mean'] * scale:+.3g} [{LEVEL:.0%} t {iv['lo'] * scale:+.3g}, {iv['hi'] * scale:+.3g}], "
                f"n={self.n}, MDE {self.mde() * scale:+.2g} against {self.h0 * scale:+.3g}")


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
    interaction: str = ""
    """A 2 x 2 rule's reading of the interaction (:data:`INTERACTION_READINGS`); "" elsewhere."""


def _family(tests: list[tuple[str, float]]) -> list[dict]:
    """Holm over ``tests`` (``(name, p)``): each ``{"test", "p", "p_holm"}``."""
    adj = holm([p for _, p in tests])
    return [{"test": name, "p": p, "p_holm": a} for (name, p), a in zip(tests, adj)]


def _conjunction(tests: list[tuple[str, float]]) -> list[dict]:
    """An intersection-union family: each leg at its own p (``p_holm`` = ``p``: no adjustment; Berger 1982)."""
    return [{"test": name, "p": p, "p_holm": p} for name, p in tests]


def _ps(decided: Sequence[dict], adjusted: bool) -> str:
    key, label = ("p_holm", "p_Holm") if adjusted else ("p", "p")
    return ", ".join(f"{x['test']} {label}={x[key]:.2g}" for x in decided)


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
    a = a.tested(+a.margin, "greater")
    t = t.tested(-t.margin, "greater")
    reading = f"ratio {r} vs 1 at {a.reading}"
    desc = f"{a.metric} {a.describe()}; {t.metric} {t.describe()}"
    if ev.untrained:
        return RealVerdict(ev.dataset, ev.group, "insufficient",
                           f"{head}: {reading}: {ev.untrained}; {desc} -> insufficient")
    sup = _conjunction([(f"{a.metric} rises by > {a.margin:g}", a.p()),
                        (f"{t.metric} no worse than -{t.margin:g}", t.p())])
    con = _family([(f"{a.metric} rises by < {a.margin:g}", a.p(reverse=True)),
                   (f"{t.metric} worse than -{t.margin:g}", t.p(reverse=True))])
    wide = [c.metric for c in (a, t) if c.straddles_both_margins()]
    level = f"one-sided {alpha:g}"
    if all(x["p"] < alpha for x in sup):
        verdict, how = "supports", f"both legs at {level} (intersection-union: {_ps(sup, False)})"
        decided = sup
    elif any(x["p_holm"] < alpha for x in con):
        verdict, how = "contradicts", f"Holm over the 2 reversed legs at {level} ({_ps(con, True)})"
        decided = con
    else:
        verdict, how = "inconclusive", (f"both legs needed at {level} ({_ps(sup, False)}); neither reversed leg "
                                        f"rejects after Holm ({_ps(con, True)})")
        decided = sup
    extra = f"; interval straddles both margins: {', '.join(wide)}" if wide and verdict == "inconclusive" else ""
    beside = "".join(f"; exploratory: {c.metric} at {c.reading} {c.describe()}" for c in ev.exploratory)
    line = f"{head}: {reading}: {desc}; {how}{extra} -> {verdict}{beside}"
    return RealVerdict(ev.dataset, ev.group, verdict, line, tuple(decided))


def judge_real(evidence: Iterable[RealEvidence], alpha: float = ALPHA) -> list[RealVerdict]:
    """:func:`judge_real_evidence` of each dataset's evidence, in order: the ``real-data`` claim's rule
    (one verdict and one Evidence line per dataset/configuration; combining them is the claims module's)."""
    return [judge_real_evidence(e, alpha) for e in evidence]


def family_verdicts(evidence: Sequence[RealEvidence], alpha: float = ALPHA) -> dict[str, str]:
    r"""Each group's verdict in **one family across the groups** of a report: the group's ``supports`` p-value
    (its intersection-union p, the larger of its two legs' p) and its ``contradicts`` p-value (its Holm-adjusted
    smallest reversed leg) each Holm-adjusted over the ``k`` judged groups; ``supports`` / ``contradicts`` where
    the adjusted p is below ``alpha``, else ``inconclusive``; the per-group ``insufficient`` stay. ``{group:
    verdict}``. What a reader may quote when picking one group out of several as a finding."""
    own = {e.group: judge_real_evidence(e, alpha) for e in evidence}
    judged = [g for g, v in own.items() if v.verdict != "insufficient"]
    p_sup, p_con = {}, {}
    for e in evidence:
        if e.group not in judged or e.attention is None or e.task is None:
            continue
        a, t = e.attention.tested(+e.attention.margin, "greater"), e.task.tested(-e.task.margin, "greater")
        p_sup[e.group] = max(a.p(), t.p())
        p_con[e.group] = min(1.0, 2.0 * min(a.p(reverse=True), t.p(reverse=True)))
    names = sorted(p_sup)
    hs = dict(zip(names, holm([p_sup[g] for g in names])))
    hc = dict(zip(names, holm([p_con[g] for g in names])))
    out = {}
    for g, v in own.items():
        if g not in hs:
            out[g] = v.verdict
        elif hs[g] < alpha:
            out[g] = "supports"
        elif hc[g] < alpha:
            out[g] = "contradicts"
        else:
            out[g] = "inconclusive"
    return out


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


def factorial_effects(cells: Mapping[tuple[float, float], Mapping[int, Mapping[str, float]]], metric: str, margin: float,
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


@dataclass(frozen=True)
class Leg:
    """One one-sided test of a 2 x 2 rule: the ``effect`` of :func:`factorial_effects` (``"A|B=low"``...) on the
    ``side`` (``"attention"``: the mass, ``"task"``: the task metric), ``H0: mu <= null`` against
    ``alternative="greater"`` (``>=`` against ``"less"``; ``null`` ``None``: ``+`` the comparison's margin).
    ``reversed_means``: what the reversed test rejecting says (``"contradicts"`` or ``"insufficient"``)."""

    id: str
    effect: str
    side: str
    alternative: str
    label: str
    reversed_means: str = "contradicts"
    null: float | None = None

    def __post_init__(self) -> None:
        for name, value, allowed in (("side", self.side, ("attention", "task")),
                                     ("alternative", self.alternative, ALTERNATIVES),
                                     ("reversed_means", self.reversed_means, ("contradicts", "insufficient"))):
            if value not in allowed:
                raise ValueError(f"leg {self.id}: {name}: {value!r}: must be one of {', '.join(allowed)}")

    def of(self, c: Comparison) -> Comparison:
        """``c`` read by this leg's test."""
        return c.tested(c.margin if self.null is None else self.null, self.alternative)

    def name(self, reverse: bool = False) -> str:
        up = (self.alternative == "greater") != reverse
        return f"{self.id} {self.label} {'>' if up else '<'} {'+margin' if self.null is None else f'{self.null:+g}'}"


DECOUPLING_LEGS: tuple[Leg, ...] = (
    Leg("H1", "A|B=low", "attention", "greater", "QK alone raises the mass"),
    Leg("H2", "B|A=low", "task", "greater", "embedding alone raises the task metric", "insufficient"),
    Leg("H3", "B|A=low", "attention", "less", "embedding alone raises the mass"),
)
"""The decoupling statement's legs ("sharpening is not a by-product of better prediction"), declared before any
run is read: H1 the QK factor alone (at the slow embedding) raises the mass by more than its margin; H2 the
embedding's factor alone (at the slow QK) raises the task metric by more than its margin (the arm that predicts
better); H3 it raises the mass by *less* than its margin. ``supports``: all three reject (intersection-union);
``contradicts``: H1 or H3 reversed rejects after Holm over the 2; ``insufficient``: H2 reversed rejects (the
design has no better prediction to separate sharpening from)."""
DECOUPLING_TESTS = tuple((leg.effect, leg.side, leg.alternative) for leg in DECOUPLING_LEGS)
INTERACTION_READINGS = ("positive", "negative", "additive", "undetermined", "insufficient")
"""The interaction contrast on the mass (:math:`y_{hh} - y_{hl} - y_{lh} + y_{ll}`) read against +-margin at the
one level: ``positive`` (the 95 % interval above +margin: H0 mu <= +margin rejected), ``negative`` (below
-margin), ``additive`` (inside (-margin, +margin): both one-sided equivalence tests reject), ``undetermined``
otherwise, ``insufficient`` with fewer than 2 seeds."""


def interaction_reading(c: Comparison | None, margin: float, alpha: float = ALPHA) -> str:
    """The reading of one interaction contrast (:data:`INTERACTION_READINGS`); pure."""
    if c is None or c.n < 2:
        return "insufficient"
    if one_sided_p(c.diffs, +margin, "greater") < alpha:
        return "positive"
    if one_sided_p(c.diffs, -margin, "less") < alpha:
        return "negative"
    if one_sided_p(c.diffs, +margin, "less") < alpha and one_sided_p(c.diffs, -margin, "greater") < alpha:
        return "additive"
    return "undetermined"


def judge_decoupling(mass: dict[str, Comparison], task: dict[str, Comparison], dataset: str = "",
                     alpha: float = ALPHA, legs: Sequence[Leg] = DECOUPLING_LEGS,
                     interaction_margin: float = ATTENTION_MARGIN) -> RealVerdict:
    r"""The verdict on "sharpening is not a by-product of better prediction" from a QK-factor x embedding-factor
    2 x 2 design (:func:`factorial_effects` of the mass, ``mass``, and of the task metric, ``task``; paired by
    seed at best validation), every test one-sided at ``alpha``:

    - ``insufficient``: a leg's effect missing or with fewer than 2 seeds, or (not contradicting) a leg whose
      reversal means ``insufficient`` rejects reversed (H2: the embedding arm shown *not* to predict better);
    - ``contradicts``: a leg whose reversal contradicts (H1, H3) rejects reversed after Holm over those legs;
    - ``supports``: every leg rejects at ``alpha`` (an intersection-union test: no adjustment);
    - ``inconclusive`` otherwise.

    The interaction on the mass is read beside it (:func:`interaction_reading`, ``RealVerdict.interaction``):
    a positive interaction means the two rates' mass effects are not additive, so the simple effects hold at the
    slow level of the other factor and do not decompose the joint effect.
    """
    head = f"decoupling{f' ({dataset})' if dataset else ''}"
    src = {"attention": mass, "task": task}
    found = [(leg, src[leg.side].get(leg.effect)) for leg in legs]
    inter = mass.get("interaction")
    reading = interaction_reading(inter, interaction_margin, alpha)
    short = [f"{leg.id} ({leg.side} {leg.effect})" for leg, c in found if c is None or c.n < 2]
    if short:
        return RealVerdict(dataset, "decoupling", "insufficient",
                           f"{head}: {', '.join(short)} missing or with fewer than 2 paired seeds -> insufficient",
                           interaction=reading)
    comps = [(leg, leg.of(c)) for leg, c in found if c is not None]
    desc = "; ".join(f"{leg.id} {leg.label}: {c.metric} {c.describe()}" for leg, c in comps)
    sup = _conjunction([(leg.name(), c.p()) for leg, c in comps])
    con = _family([(leg.name(reverse=True), c.p(reverse=True)) for leg, c in comps if leg.reversed_means == "contradicts"])
    no = [leg.name(reverse=True) for leg, c in comps if leg.reversed_means == "insufficient" and c.p(reverse=True) < alpha]
    level = f"one-sided {alpha:g}"
    if any(x["p_holm"] < alpha for x in con):
        verdict, decided, how = "contradicts", con, f"Holm over {len(con)} reversed legs at {level} ({_ps(con, True)})"
    elif all(x["p"] < alpha for x in sup):
        verdict, decided, how = "supports", sup, f"all {len(sup)} legs at {level} (intersection-union: {_ps(sup, False)})"
    elif no:
        verdict, decided = "insufficient", sup
        how = f"all {len(sup)} legs needed at {level} ({_ps(sup, False)}); rejected reversed: {', '.join(no)}"
    else:
        verdict, decided, how = "inconclusive", sup, f"all {len(sup)} legs needed at {level} ({_ps(sup, False)})"
    if verdict in ("insufficient", "inconclusive") and con:
        # how close the contradiction came: the reversed legs' Holm p beside the legs the verdict needed
        how += f"; no reversed leg rejects after Holm over {len(con)} ({_ps(con, True)})"
    inter_txt = (f"; interaction on the mass {inter.describe()}: {reading}" if inter is not None and inter.n >= 2
                 else f"; interaction: {reading}")
    return RealVerdict(dataset, "decoupling", verdict, f"{head}: {desc}; {how} -> {verdict}{inter_txt}",
                       tuple(decided), reading)


__all__ = ["factorial_effects", "judge_decoupling", "interaction_reading", "family_verdicts", "Leg", "DECOUPLING_LEGS",
           "DECOUPLING_TESTS", "INTERACTION_READINGS", "Comparison", "RealEvidence", "RealVerdict", "judge_real",
           "judge_real_evidence", "untrained_reason", "READING", "ATTENTION_METRIC", "ATTENTION_MARGIN", "TASK_MARGIN",
           "ALPHA", "LEVEL", "POWER"]
