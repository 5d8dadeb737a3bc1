"""Every claim's verdict rule, as pure functions from typed evidence to a verdict (the one rules module).

A stage measures and builds a typed evidence object (:mod:`qkov.study.evidence_types`); :func:`judge` looks up
the rule of ``(claim, stage)`` in :data:`RULES` (one entry per claim and stage of :data:`theory.claims.CLAIMS`,
a registry rather than branches on names) and returns an :class:`Outcome`: the verdict, the one number behind
it, its scope and its caveat. Every threshold comes from :data:`theory.claims.THRESHOLDS` (each with its reason);
no stage or report module compares a number with a bound of its own.

Verdicts of one piece of evidence: ``supports``, ``supports in part`` (a stated, narrower scope),
``contradicts`` (*any* comparison against the claim: the failing part is named, never folded into "mixed"),
``inconclusive`` (discriminating, undecided), ``insufficient`` (cannot discriminate: zero comparisons, ties,
levels never reached, an untrained model). A claim's outcome (:func:`claim_outcome`): ``holds``,
``holds in part``, ``contradicted`` (any contradicting evidence), ``inconclusive``, ``insufficient``,
``untested``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterable, Mapping, TypeGuard

from qkov.study import evidence_types as et
from theory.claims import CLAIMS, SHARPNESS_ORDER_PAIRS, THRESHOLDS

SUPPORTS, PARTIAL, CONTRADICTS = "supports", "supports in part", "contradicts"
INCONCLUSIVE, INSUFFICIENT, LEGACY_MIXED = "inconclusive", "insufficient", "mixed"
AGAINST = (CONTRADICTS, LEGACY_MIXED)
"""Evidence verdicts that count against a claim (``mixed``: older files)."""
OUTCOMES = ("holds", "holds in part", "contradicted", "inconclusive", "insufficient", "untested")
"""A claim's outcomes, in the headline's order."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a rule returns: ``verdict``, the one ``number`` behind it (as shown), its ``scope`` (optimizer,
    sizes, loss range) and ``caveat`` (what it rests on that a reader could dispute); ``detail``: what failed or
    what was left out, named."""

    verdict: str
    number: str = ""
    scope: str = ""
    caveat: str = ""
    detail: str = ""


def _finite(x: object) -> TypeGuard[float]:
    """A finite int or float (not a bool); narrows ``x`` to a number for the checker."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# -- small helpers (pure) ------------------------------------------------------------------------------------
def judge_fraction(hits: int, total: int) -> str:
    """``insufficient`` for 0 comparisons, ``supports`` when every comparison is a hit, else ``contradicts``
    (any comparison against the claim is a contradiction, named by the caller)."""
    if total <= 0:
        return INSUFFICIENT
    return SUPPORTS if hits == total else CONTRADICTS


def judge_bound(value: float | None, bound: float) -> str:
    """``supports`` iff a finite ``value`` is below ``bound``; ``insufficient`` for None/NaN/inf."""
    if not _finite(value):
        return INSUFFICIENT
    return SUPPORTS if value < bound else CONTRADICTS


def judge_threshold(name: str, value: float | None) -> str:
    """The verdict of ``value`` against :data:`THRESHOLDS` ``[name]`` (its comparison, its reason)."""
    return THRESHOLDS[name].judge(value)


def distinct_within(values: Iterable[float], resolution: float) -> bool:
    """True iff every pair of ``values`` differs by more than ``resolution`` (no ties)."""
    xs = sorted(float(x) for x in values)
    return all(b - a > resolution for a, b in zip(xs, xs[1:]))


def attention_moved(delta: float | None, resolution: float | None = None) -> bool:
    """``|delta| > resolution`` (default ``attention-resolution``); False for a missing or non-finite number."""
    res = THRESHOLDS["attention-resolution"].bound if resolution is None else resolution
    return _finite(delta) and abs(delta) > res


def beyond_chance(p_true: float | None, chance: float, margin: float | None = None) -> bool:
    """Held-out p_true above ``chance`` (1 / number of outputs) by more than ``chance-margin``."""
    mar = THRESHOLDS["chance-margin"].bound if margin is None else margin
    return _finite(p_true) and p_true > chance + mar


def left_start(moved: float | None, p_true: float | None, chance: float) -> tuple[bool, str]:
    """Whether a trained run left its start in what the sharpness claims are about: its attention moved by more
    than ``attention-resolution`` and its prediction is beyond chance (``chance-margin``). ``(ok, why)``."""
    res = THRESHOLDS["attention-resolution"].bound
    if not attention_moved(moved):
        return False, (f"attention moved by {abs(moved):.2g} <= resolution {res:g}" if _finite(moved)
                       else "attention change not measured")
    if not beyond_chance(p_true, chance):
        return False, (f"p_true {p_true:.3f} not beyond chance {chance:.3f} + {THRESHOLDS['chance-margin'].bound:g}"
                       if _finite(p_true) else "p_true not measured")
    return True, ""


def run_left_start(state: et.RunState) -> tuple[bool, str]:
    """:func:`left_start` of a typed :class:`~qkov.study.evidence_types.RunState`."""
    return left_start(state.moved, state.p_true, state.chance)


def _tie_resolution(name: str) -> float:
    return THRESHOLDS[name].bound if name else 0.0


def judge_order(residual: Mapping[str, float], resolution: float) -> tuple[str, int, int]:
    """``(verdict, holds, compared)`` of the paper's pairs (:data:`SHARPNESS_ORDER_PAIRS`) on residuals 1-p
    (smaller = sharper); a pair within ``resolution`` (relative) or with a missing value is not compared."""
    holds = compared = 0
    for a, b in SHARPNESS_ORDER_PAIRS:
        x, y = residual.get(a), residual.get(b)
        if not (_finite(x) and _finite(y)) or min(x, y) <= 0:
            continue
        if abs(x / y - 1) <= resolution:
            continue
        compared += 1
        holds += x < y
    return judge_fraction(holds, compared), holds, compared


def order_pairs_text(residual: Mapping[str, float], resolution: float) -> str:
    """Which of the paper's pairs hold, which fail and which tie (``sharper < weaker`` in 1-p)."""
    parts: dict[str, list[str]] = {"holds": [], "fails": [], "tie": []}
    for a, b in SHARPNESS_ORDER_PAIRS:
        x, y = residual.get(a), residual.get(b)
        if not (_finite(x) and _finite(y)) or min(x, y) <= 0:
            continue
        key = "tie" if abs(x / y - 1) <= resolution else "holds" if x < y else "fails"
        parts[key].append(f"{a} sharper than {b}")
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in parts.items() if v)


# -- the rules -------------------------------------------------------------------------------------------------
STATUS_VERDICT = {"derived": SUPPORTS, "refined": SUPPORTS, "refuted": CONTRADICTS, "unverified": INCONCLUSIVE}
"""Derivation status -> verdict; a refined claim that holds only in part supports it in part."""


def derivation_rule(ev: et.DerivationEntry) -> Outcome:
    """Derive stage: the ledger's status (:data:`STATUS_VERDICT`); ``holds == "in part"`` -> ``supports in part``;
    an unknown status (``empirical``: nothing to derive) -> ``insufficient``."""
    verdict = STATUS_VERDICT.get(ev.status, INSUFFICIENT)
    if verdict == SUPPORTS and ev.holds == "in part":
        return Outcome(PARTIAL, ev.status, "symbolic", "holds in part: " + ev.summary if ev.summary else "holds in part")
    return Outcome(verdict, ev.status, "symbolic")


def derived_order_rule(ev: et.DerivationEntry) -> Outcome:
    """``sharpness-order`` (derive): the derived asymptotic order on the paper's pairs; support is in part
    (it is the limit u -> oo, not the finite-loss order the claim is about). No order: :func:`derivation_rule`."""
    if not ev.order or ev.status not in ("derived", "refined"):
        return derivation_rule(ev)
    rank = {p: float(i + 1) for i, p in enumerate(ev.order)}
    verdict, holds, compared = judge_order(rank, 0.0)
    out = Outcome(verdict, f"{holds}/{compared} pairs", "asymptotic (u -> oo)", "", order_pairs_text(rank, 0.0))
    return dataclasses.replace(out, verdict=PARTIAL, caveat="the limit u -> oo, not a finite loss") \
        if verdict == SUPPORTS else out


def bound_rule(ev: et.Bound) -> Outcome:
    """One number against its threshold: nothing measured (``n == 0``) or a non-finite number -> insufficient;
    else :meth:`theory.claims.Threshold.judge` (supports below the bound, contradicts above)."""
    th = THRESHOLDS[ev.threshold]
    verdict = INSUFFICIENT if ev.n <= 0 else th.judge(ev.value)
    num = f"{ev.what + ' ' if ev.what else ''}{ev.value:.2g}" if _finite(ev.value) else "not measured"
    return Outcome(verdict, f"{num} (bound {th.bound:g})", ev.scope, ev.caveat)


def reduced_rule(ev: et.ReducedAgreement) -> Outcome:
    """``reduced-odes`` (simulate): every dt/(dt/2) error ratio strictly inside the O(dt) window and the RK4 error
    below ``rk4-agreement``; either failing contradicts (named); no ratios -> insufficient."""
    if not ev.error_ratios or not _finite(ev.rk4_error):
        return Outcome(INSUFFICIENT, "not measured", ev.scope)
    lo, hi = THRESHOLDS["odt-ratio-low"].bound, THRESHOLDS["odt-ratio-high"].bound
    fails = []
    if not all(lo < x < hi for x in ev.error_ratios):
        fails.append(f"error ratio {min(ev.error_ratios):.2f}-{max(ev.error_ratios):.2f} outside ({lo:g}, {hi:g})")
    if not THRESHOLDS["rk4-agreement"].holds(ev.rk4_error):
        fails.append(f"RK4 {ev.rk4_error:.1e} >= {THRESHOLDS['rk4-agreement'].bound:g}")
    num = f"dt/(dt/2) {min(ev.error_ratios):.2f}-{max(ev.error_ratios):.2f}, RK4 {ev.rk4_error:.1e}"
    return Outcome(CONTRADICTS if fails else SUPPORTS, num, ev.scope, "", "; ".join(fails))


def growth_rule(ev: et.Growth) -> Outcome:
    """``growth-rates`` (simulate): at every cell the local exponents of u and v in log log t are at most the
    laws' (1 and 2) plus ``growth-exponent-margin``; any failing cell contradicts (named); no finite cell ->
    insufficient. The claim imposes no window on u/log t (its constants are "set by the ratio"), nor anything on
    qkov's sharper laws: cells where those have not converged by the last time are named in the caveat. The
    finding reported with it: v grows like log log t (exponent far below 2), so the paper's O(log^2 t) bound holds
    but is loose."""
    m = THRESHOLDS["growth-exponent-margin"].bound
    cells = [c for c in ev.cells if _finite(c.u_exponent) and _finite(c.v_exponent)]
    if not cells:
        return Outcome(INSUFFICIENT, "no cell integrated", ev.scope)
    fails = []
    for c in cells:
        if c.u_exponent > 1 + m:  # type: ignore[operator]
            fails.append(f"{c.param} r={c.ratio:g}: u grows like (log t)^{c.u_exponent:.2f}")
        if c.v_exponent > 2 + m:  # type: ignore[operator]
            fails.append(f"{c.param} r={c.ratio:g}: v grows like (log t)^{c.v_exponent:.2f}")
    kv = [float(c.v_exponent) for c in cells]  # type: ignore[arg-type]
    vl = [float(c.v_over_loglog_t) for c in cells if _finite(c.v_over_loglog_t)]
    num = (f"d log v/d log log t {min(kv):.2f}-{max(kv):.2f} (log^2 t: 2)"
           + (f", v/log log t {min(vl):.2f}-{max(vl):.2f}" if vl else ""))
    notes = []
    if max(kv) < 1:
        notes.append("v grows like log log t, not log^2 t: the paper's O(log^2 t) holds but is loose")
    slow = [f"{c.param} r={c.ratio:g}" for c in cells if not c.laws_errors_shrink]
    if slow:
        notes.append("qkov's sharper laws not yet converged by the last time at " + ", ".join(slow))
    return Outcome(CONTRADICTS if fails else SUPPORTS, num, ev.scope, "; ".join(notes), "; ".join(fails))


def ratio_trend_rule(ev: et.RatioTrend) -> Outcome:
    """``sharpness-ratio`` (simulate, synthetic): consecutive ratios of every series; for ``"residual"`` 1-p must
    fall (ties: relative difference within ``residual-resolution``), for ``"attention"`` p must rise (ties:
    absolute difference within ``attention-resolution``); missing values are not comparisons. Every decided
    step in the claim's direction -> supports; any against -> contradicts (each named); none decided ->
    insufficient."""
    residual = ev.quantity == "residual"
    res = THRESHOLDS["residual-resolution" if residual else "attention-resolution"].bound
    hits = compared = ties = 0
    against = []
    for s in ev.series:
        for (ra, a), (rb, b) in zip(zip(s.ratios, s.values), list(zip(s.ratios, s.values))[1:]):
            if not (_finite(a) and _finite(b)):
                continue
            diff = (b / a - 1) if residual and a else (b - a)
            if abs(diff) <= res:
                ties += 1
                continue
            compared += 1
            good = diff < 0 if residual else diff > 0
            hits += good
            if not good:
                against.append(f"{s.label}: r={ra:g} {a:.3g} -> r={rb:g} {b:.3g}")
    verdict = judge_fraction(hits, compared)
    what = "1-p falls" if residual else "attention rises"
    return Outcome(verdict, f"{what} in {hits}/{compared} steps ({ties} ties)", ev.scope,
                   "", ("against: " + "; ".join(against)) if against else "")


def order_rule(ev: et.Order) -> Outcome:
    """``sharpness-order`` (simulate, synthetic): the paper's pairs on 1-p at one matched loss (ties within the
    named resolution are not compared); fewer than two values -> insufficient; any failing pair contradicts."""
    residual = dict(ev.residual)
    if len(residual) < 2:
        return Outcome(INSUFFICIENT, "fewer than two parametrizations to compare", ev.scope)
    res = _tie_resolution(ev.resolution)
    verdict, holds, compared = judge_order(residual, res)
    pairs = order_pairs_text(residual, res)
    fails = next((p for p in pairs.split("; ") if p.startswith("fails: ")), "")
    return Outcome(verdict, f"{holds}/{compared} of the paper's pairs" + (f" ({fails})" if fails else ""), ev.scope,
                   "", pairs)


def figure2_rule(ev: et.Figure2) -> Outcome:
    """``sharpness-ratio`` (Figure 2): insufficient when a setting predicts at chance (p_true not beyond
    1/VOCAB + ``chance-margin``), when the distinct attention moved by no more than ``attention-resolution``
    in both settings, or when the seed-mean difference is within the seed spread (at least the resolution);
    else supports if faster QK raises distinct attention, contradicts if it lowers it."""
    res = THRESHOLDS["attention-resolution"].bound
    eq, fq = ev.equal, ev.faster
    diff = fq.distinct - eq.distinct
    spread = max(eq.distinct_max - eq.distinct_min, fq.distinct_max - fq.distinct_min)
    num = f"{ev.param} distinct attention {eq.distinct:.3f} -> {fq.distinct:.3f}"
    stuck = [s.name for s in (eq, fq) if not beyond_chance(s.p_true, ev.chance)]
    if stuck:
        return Outcome(INSUFFICIENT, num, ev.scope, "", f"p_true at chance in {', '.join(stuck)}")
    if not any(attention_moved(s.distinct - s.distinct_start) for s in (eq, fq)):
        return Outcome(INSUFFICIENT, num, ev.scope, "", "distinct attention stays uniform in both settings")
    if abs(diff) <= max(spread, res):
        return Outcome(INSUFFICIENT, num, ev.scope, "", f"difference {diff:+.3f} within the seed spread {spread:.3f}")
    if diff > 0:
        return Outcome(SUPPORTS, num, ev.scope)
    to_query = fq.query_share > eq.query_share + spread
    return Outcome(CONTRADICTS, num, ev.scope, "", "faster QK lowers distinct attention"
                   + (" (it goes to the query's id instead)" if to_query else ""))


def slope_pair_verdict(p: et.SlopePair) -> str:
    """One ``adam-ratio`` pair: insufficient with fewer than ``adam-min-points`` usable points, a usable range
    narrower than ``adam-min-decades`` or no law slope; else supports iff |Adam/law - 1| <= ``adam-slope-tolerance``."""
    a, law, rng = p.slope_adam, p.slope_law, p.loss_range
    if (not _finite(a) or not _finite(law) or law == 0 or not rng or rng[1] <= 0
            or p.n_usable < THRESHOLDS["adam-min-points"].bound
            or math.log10(rng[0] / rng[1]) < THRESHOLDS["adam-min-decades"].bound):
        return INSUFFICIENT
    return THRESHOLDS["adam-slope-tolerance"].judge(abs(a / law - 1))


def adam_slopes_rule(ev: et.AdamSlopes) -> Outcome:
    """``adam-ratio`` (synthetic): every judged pair within tolerance -> supports; any outside -> contradicts
    (named); none judged -> insufficient."""
    verdicts = [slope_pair_verdict(p) for p in ev.pairs]
    judged = [(p, v) for p, v in zip(ev.pairs, verdicts) if v != INSUFFICIENT]
    hits = sum(v == SUPPORTS for _, v in judged)
    against = [f"{p.param} r={p.ratio:g}: Adam {p.slope_adam:.2f} vs law {p.slope_law:.2f}"
               for p, v in judged if v == CONTRADICTS]
    return Outcome(judge_fraction(hits, len(judged)), f"{hits}/{len(judged)} pairs within "
                   f"{THRESHOLDS['adam-slope-tolerance'].bound:.0%} of the law", ev.scope, "",
                   ("against: " + "; ".join(against)) if against else "")


def _rel(a: float, b: float) -> float:
    return abs(a / b - 1)


def desharpen_call(p: et.OptimizerPoint) -> str:
    """One ensemble point (a ratio above the reference at one matched loss) against ``desharpen-rare`` ``q``, at the
    ensembles' confidence level: ``contradicts`` when the Wilson interval's lower end is above ``q`` (raising the
    ratio de-sharpens with probability above ``q``), ``supports`` when its upper end is at most ``q`` (de-sharpening
    is rare), ``inconclusive`` when the interval straddles ``q``, ``insufficient`` when no member reached the level."""
    q = THRESHOLDS["desharpen-rare"].bound
    if not p.desharpen_n or not (_finite(p.p_lo) and _finite(p.p_hi)):
        return INSUFFICIENT
    if p.p_lo > q:
        return CONTRADICTS
    return SUPPORTS if p.p_hi <= q else INCONCLUSIVE


def _p_text(run: et.AdamDefaultRun, p: et.OptimizerPoint) -> str:
    k, n = p.desharpen_k or 0, p.desharpen_n or 0
    return (f"{run.param} r={p.ratio:g} L={p.level:.2g}: P(de-sharpen) {k / n:.2f} [{p.p_lo:.2f}, {p.p_hi:.2f}] "
            f"({k}/{n})")


def _ratio_findings(run: et.AdamDefaultRun, at: dict, ratios: list[float], levels: list[float], bad: list[str],
                    hits: list[str], open_: list[str], off: list[str]) -> int:
    """Every ratio above the reference (the lowest) at every matched loss: from an ensemble, :func:`desharpen_call`;
    without one, a run the transverse analysis says stays on the set is deterministic and de-sharpens when its 1-p
    is above the reference's by more than ``residual-resolution``; a single run that leaves (``run.leaves``) is
    decided by rounding and goes to ``off`` (not judged)."""
    res = THRESHOLDS["residual-resolution"].bound
    judged = 0
    for lv in levels:
        if (ratios[0], lv) not in at:
            continue
        ref = at[(ratios[0], lv)]
        for r in ratios[1:]:
            p = at.get((r, lv))
            if p is None:
                continue
            if p.desharpen_n is not None:
                call = desharpen_call(p)
                if call == INSUFFICIENT:
                    continue
                judged += 1
                {CONTRADICTS: bad, SUPPORTS: hits, INCONCLUSIVE: open_}[call].append(_p_text(run, p))
            elif run.leaves:
                off.append(f"{run.param} r={r:g} L={lv:.2g} (one run off the symmetric set, no ensemble)")
            else:
                judged += 1
                if p.measured / ref.measured - 1 > res:
                    bad.append(f"{run.param} L={lv:.2g}: r={r:g} less sharp than r={ratios[0]:g} "
                               f"(1-p {p.measured:.3g} vs {ref.measured:.3g})")
                else:
                    hits.append(f"r={r:g} L={lv:.2g}")
    return judged


def _margin_findings(run: et.AdamDefaultRun, at: dict, ratios: list[float], levels: list[float], weak: list[str],
                     hits: list[str]) -> int:
    """At each matched loss the sharpening from the lowest to the highest ratio (measured 1-p: an ensemble's
    medians) >= ``adam-sharpen-margin`` x gradient flow's; a shortfall goes to ``weak``. Not judged for a single
    run that leaves the set."""
    margin = THRESHOLDS["adam-sharpen-margin"].bound
    judged = 0
    for lv in levels:
        row = [(r, at[(r, lv)]) for r in ratios if (r, lv) in at]
        if len(row) < 2 or not all(_finite(x) and x > 0 for x in (row[0][1].flow, row[-1][1].flow)):
            continue
        (rl, pl), (rh, ph) = row[0], row[-1]
        if run.leaves and ph.desharpen_n is None:
            continue
        judged += 1
        s_opt, s_flow = pl.measured / ph.measured, pl.flow / ph.flow
        if s_opt < margin * s_flow:
            weak.append(f"{run.param} L={lv:.2g}: median sharpening r={rl:g}->{rh:g} x{s_opt:.3g}, not >= {margin:g}"
                        f" x flow's x{s_flow:.3g}")
        else:
            hits.append(f"L={lv:.2g}: x{s_opt:.3g} vs flow x{s_flow:.3g}")
    return judged


def adam_default_rule(ev: et.AdamDefault) -> Outcome:
    """``adam-ratio-default`` (synthetic): does raising eta_QK/eta_OV sharpen attention under the optimizer, at
    every matched loss, more than under gradient flow?

    Per parametrization, every ratio above the lowest at every matched loss (:func:`_ratio_findings`): where runs
    leave the symmetric set, judged on the ensemble's probability of de-sharpening with its Wilson interval against
    ``desharpen-rare`` (:func:`desharpen_call`); where they stay, on the one deterministic run. Plus the median
    sharpening against gradient flow's (:func:`_margin_findings`). Contradicts (named) if any point de-sharpens
    with probability above ``desharpen-rare`` (interval above it) or falls short of the margin; otherwise
    ``inconclusive`` if any interval straddles ``desharpen-rare``; ``supports in part`` when single runs off the set
    were left out; ``insufficient`` if nothing could be judged. How well qkov's predictor foresees the probability
    is another claim (``desharpen-predictor``), never evidence against this one."""
    bad: list[str] = []
    weak: list[str] = []
    hits: list[str] = []
    open_: list[str] = []
    off: list[str] = []
    judged = 0
    for run in ev.runs:
        pts = [p for p in run.points if _finite(p.measured) and p.measured > 0]
        ratios = sorted({p.ratio for p in pts})
        levels = sorted({p.level for p in pts}, reverse=True)          # falling loss
        at = {(p.ratio, p.level): p for p in pts}
        if len(ratios) < 2:
            continue
        judged += _ratio_findings(run, at, ratios, levels, bad, hits, open_, off)
        judged += _margin_findings(run, at, ratios, levels, weak, hits)
    scope = ev.scope
    against = bad + weak
    if against:
        more = (f" (+{len(against) - 1} more of {judged} comparisons against)" if len(against) > 1
                else f" (1 of {judged})")
        return Outcome(CONTRADICTS, against[0] + more, scope, "", "; ".join(against + open_))
    if not judged:
        return Outcome(INSUFFICIENT, "no matched loss reached by two ratios", scope, "",
                       ("not judged: " + "; ".join(off)) if off else "")
    if open_:
        return Outcome(INCONCLUSIVE, open_[0] + (f" (+{len(open_) - 1} more undecided of {judged})" if len(open_) > 1
                                                  else f" (1 of {judged} undecided)"),
                       scope, f"P(de-sharpen) interval straddles {THRESHOLDS['desharpen-rare'].bound:g}",
                       "; ".join(open_))
    if off:
        return Outcome(PARTIAL, f"{judged}/{judged} comparisons hold; {len(off)} single runs off the set not judged",
                       scope, "a single run off the symmetric set is decided by rounding: judged only by an ensemble",
                       "not judged: " + "; ".join(off))
    return Outcome(SUPPORTS, f"{judged}/{judged} comparisons hold", scope)


def stability_rule(ev: et.Stability) -> Outcome:
    """``optimizer-stability`` (synthetic), judged on attention: per pair, the transverse call (leaves / stays)
    against whether the measured 1-p (an ensemble's median where there is one) departs from the reduced map by more
    than ``optimizer-map-tolerance`` at some reached level (a state that "leaves" but whose attention stays on the
    reduced map is a miss). Pairs with no reached level are not judged; any miss contradicts (named)."""
    tol = THRESHOLDS["optimizer-map-tolerance"]
    hits, judged, bad = 0, 0, []
    for pair in ev.pairs:
        pts = [p for p in pair.points if _finite(p.measured) and p.measured > 0]
        red = [p for p in pts if _finite(p.reduced) and p.reduced > 0]
        if not red or pair.predicted_leaves is None:
            continue
        judged += 1
        worst = max(_rel(p.measured, p.reduced) for p in red)  # type: ignore[arg-type]
        departs = not tol.holds(worst)
        if departs == pair.predicted_leaves:
            hits += 1
        else:
            bad.append(f"{pair.param} r={pair.ratio:g}: predicted {'leaves' if pair.predicted_leaves else 'stays'}, "
                       f"attention {'departs' if departs else 'stays on the reduced map'} (worst {worst:.1%})")
    verdict = judge_fraction(hits, judged)
    return Outcome(verdict, f"{hits}/{judged} runs where the call matches the attention", ev.scope, "",
                   "; ".join(bad))


def brier(points: Iterable[et.CalibrationPoint]) -> float | None:
    r"""Brier score of the predicted probabilities over the ensembles' members:
    :math:`\sum_j [k_j (1 - \hat p_j)^2 + (n_j - k_j)\hat p_j^2] / \sum_j n_j` (None without members)."""
    num = den = 0.0
    for p in points:
        if not _finite(p.predicted) or p.n <= 0:
            continue
        num += p.k * (1 - p.predicted) ** 2 + (p.n - p.k) * p.predicted ** 2
        den += p.n
    return num / den if den else None


def calibration_rule(ev: et.Calibration) -> Outcome:
    """``desharpen-predictor`` (synthetic): qkov's predicted probability of de-sharpening against the ensemble's
    frequency. Per point with a prediction and members: a hit iff the predicted probability lies in the ensemble's
    Wilson interval (at the ensembles' confidence level); any miss contradicts (named), none judged ->
    insufficient. The number also gives the Brier score (:func:`brier`) over all members."""
    judged = [p for p in ev.points if _finite(p.predicted) and p.n > 0 and _finite(p.lo) and _finite(p.hi)]
    miss = [f"{p.param} r={p.ratio:g} L={p.level:.2g}: predicted {p.predicted:.2f}, ensemble {p.k}/{p.n} "
            f"[{p.lo:.2f}, {p.hi:.2f}]" for p in judged
            if not p.lo <= p.predicted <= p.hi]  # type: ignore[operator]
    b = brier(judged)
    members = sum(p.n for p in judged)
    number = (f"{len(judged) - len(miss)}/{len(judged)} predicted P(de-sharpen) inside the ensemble's interval"
              + (f"; Brier {b:.3f} over {members} members" if b is not None else ""))
    return Outcome(judge_fraction(len(judged) - len(miss), len(judged)), number, ev.scope, "", "; ".join(miss))


def real_group_rule(ev: et.RealGroup) -> Outcome:
    """``real-data`` (real): one group, by :func:`qkov.study.real_summary.judge_group`, the pre-declared
    comparison of :mod:`qkov.study.real_inference` (claim ratio vs 1 at best validation, relevant mass and the
    task metric, seed-level 95 % t-intervals, each leg one-sided at 2.5 %, Holm over the 2 reversed legs for
    contradicts); its line names the comparison, n, the intervals and the minimum detectable effects, and is the one
    number."""
    from qkov.study.real_summary import judge_group

    verdict, line = judge_group(ev.group)
    if verdict not in (SUPPORTS, CONTRADICTS, INCONCLUSIVE, INSUFFICIENT):
        raise ValueError(f"real-data group {ev.name}: verdict {verdict!r} is not a group verdict")
    return Outcome(verdict, line, ev.scope or ev.name, "", line)


Rule = Callable[[Any], Outcome]

_DERIVE = {"derive": derivation_rule}
RULES: dict[str, dict[str, Rule]] = {
    "symmetric-subspace": {**_DERIVE, "simulate": bound_rule},
    "reduced-odes": {**_DERIVE, "simulate": reduced_rule},
    "rescaling": {**_DERIVE, "synthetic": bound_rule},
    "fixed-lines": {**_DERIVE, "simulate": bound_rule, "synthetic": bound_rule},
    "first-integrals": {**_DERIVE, "simulate": bound_rule},
    "growth-rates": {**_DERIVE, "simulate": growth_rule},
    "sharpness-ratio": {**_DERIVE, "simulate": ratio_trend_rule, "synthetic": ratio_trend_rule},
    "sharpness-order": {"derive": derived_order_rule, "simulate": order_rule, "synthetic": order_rule},
    "paper-equations": {**_DERIVE, "simulate": bound_rule},
    "adam-ratio": {**_DERIVE, "synthetic": adam_slopes_rule},
    "adam-ratio-default": {"synthetic": adam_default_rule},
    "optimizer-stability": {"synthetic": stability_rule},
    "desharpen-predictor": {"synthetic": calibration_rule},
    "real-data": {"real": real_group_rule},
}
"""The registry: claim id -> stage -> rule (every claim and stage of :data:`theory.claims.CLAIMS`)."""

EXTRA_RULES: dict[type, Rule] = {et.Figure2: figure2_rule}
"""Rules chosen by the evidence's type where one (claim, stage) takes two kinds of evidence: Figure 2 is
``sharpness-ratio`` evidence of the synthetic stage with a rule of its own."""


def judge(claim: str, stage: str, evidence: Any) -> Outcome:
    """The rule of ``(claim, stage)`` (:data:`RULES`, or :data:`EXTRA_RULES` by the evidence's type) on ``evidence``."""
    rule = EXTRA_RULES.get(type(evidence)) or RULES[claim][stage]
    return rule(evidence)


def evidence(claim: str, stage: str, typed: Any, numbers: str, figure: str = "", text: str = ""):
    """The :class:`qkov.study.claims.Evidence` record of ``typed`` evidence: :func:`judge` sets the verdict, the
    one number, the scope and the caveat; the number and what failed (the rule's ``detail``) are appended to
    ``numbers`` (when not already in it)."""
    from qkov.study.claims import Evidence

    out = judge(claim, stage, typed)
    line = numbers + (f"; {out.number}" if out.number and out.number not in numbers else "")
    line += f" [{out.detail}]" if out.detail and out.detail not in numbers else ""
    return Evidence(claim, stage, out.verdict, line, figure, text, out.number, out.scope, out.caveat)


def real_data_evidence(groups: Mapping[str, Any]) -> list:
    """``real-data`` evidence, one record per group of the real-data summary (dataset x configuration; so the
    headline names each contradicting dataset on its own line), each judged by :func:`real_group_rule`; one
    ``insufficient`` record without groups."""
    from qkov.study.claims import Evidence
    from qkov.study.real_summary import EVIDENCE_TEXT, dtap_figure_stem

    if not groups:
        return [Evidence("real-data", "real", INSUFFICIENT, "no completed real-data runs", "", EVIDENCE_TEXT)]
    out = []
    for name, g in groups.items():
        o = judge("real-data", "real", et.RealGroup(str(name), g, str(name)))
        gap = below_paper_level(g)
        if gap and o.verdict != INSUFFICIENT:   # this model's own reading, kept in the line; not the paper's claim
            number = f"{o.verdict} for this model only, not counted ({gap}): {o.number}"
            out.append(Evidence("real-data", "real", INSUFFICIENT, f"{name}: {number}",
                                dtap_figure_stem(str(name), g), EVIDENCE_TEXT, number, o.scope,
                                f"below the paper's level: {gap}"))
            continue
        out.append(Evidence("real-data", "real", o.verdict, f"{name}: {o.number}", dtap_figure_stem(str(name), g),
                            EVIDENCE_TEXT, o.number, o.scope, ""))
    return out


def below_paper_level(g: Mapping[str, Any]) -> str:
    """Why a real-data group's model cannot speak to the claim at the paper's level ("" when it can): fewer
    attention layers than the dataset's paper model (registry defaults), or embeddings that started random where
    its configuration asks for pretrained vectors (GloVe; each run records ``embedding_init``). Its reading is
    then reported as that model's, with the ``real-data`` verdict ``insufficient`` (never for or against the
    paper)."""
    from validation.real.datasets import DATASETS

    raw = g.get("config")
    config: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    reasons = []
    entry = DATASETS.get(str(g.get("dataset")))
    if entry is not None and isinstance(config.get("layers"), int):
        paper = entry.defaults.get(("paper", bool(config.get("quick"))), {}).get("layers", 1)
        if config["layers"] < paper:
            reasons.append(f"{config['layers']} attention layers where the paper's model has {paper}")
    inits = [str(x) for x in g.get("embedding_init") or ()]
    if config.get("glove") and any(x.startswith("random") for x in inits):
        reasons.append("random embeddings where the paper's model starts from GloVe")
    return "; ".join(reasons)


# -- combining -------------------------------------------------------------------------------------------------
def _decided(verdicts: Iterable[str]) -> set[str]:
    return {CONTRADICTS if v == LEGACY_MIXED else v for v in verdicts if v != INSUFFICIENT}


def combine(verdicts: Iterable[str]) -> str:
    """The combination of evidence verdicts (runs of a stage): ``""`` without any, ``insufficient`` when nothing
    discriminates, ``contradicts`` when any evidence contradicts (legacy ``mixed`` counts as contradicting),
    ``supports`` when all decided evidence supports, ``inconclusive`` when all of it is, else ``supports in part``.
    A function of the set of verdicts: order- and grouping-free."""
    from qkov.study.claims import VERDICTS

    vs = list(verdicts)
    for v in vs:
        if v not in VERDICTS:
            raise ValueError(f"verdict: {v!r}: not one of {', '.join(VERDICTS)}")
    if not vs:
        return ""
    kept = _decided(vs)
    if not kept:
        return INSUFFICIENT
    if CONTRADICTS in kept:
        return CONTRADICTS
    if len(kept) == 1:
        return kept.pop()
    return PARTIAL


def outcome_of(verdict: str) -> str:
    """A claim's outcome from the combination of all its evidence (:func:`combine`)."""
    return {SUPPORTS: "holds", PARTIAL: "holds in part", CONTRADICTS: "contradicted", INCONCLUSIVE: "inconclusive",
            INSUFFICIENT: "insufficient", "": "untested"}.get(verdict, "untested")


def claim_verdict(evidence: Iterable[Any], claim: str) -> tuple[str, dict[str, str]]:
    """``(overall, {stage: combined})`` of one claim."""
    by_stage: dict[str, list[str]] = {}
    for e in evidence:
        if e.claim == claim:
            by_stage.setdefault(e.stage, []).append(e.verdict)
    per_stage = {s: combine(vs) for s, vs in by_stage.items()}
    return combine(v for vs in by_stage.values() for v in vs), per_stage


def missing_rules() -> list[str]:
    """``claim/stage`` of every claim stage in :data:`CLAIMS` without a rule (a test keeps it empty)."""
    return [f"{c.id}/{s}" for c in CLAIMS.values() for s in c.stages if s not in RULES.get(c.id, {})]


__all__ = ["Outcome", "RULES", "EXTRA_RULES", "judge", "evidence", "combine", "outcome_of", "claim_verdict", "OUTCOMES",
           "real_data_evidence", "judge_fraction", "judge_bound", "judge_threshold", "judge_order", "order_pairs_text", "left_start",
           "run_left_start", "attention_moved", "beyond_chance", "distinct_within", "missing_rules", "STATUS_VERDICT",
           "AGAINST", "SUPPORTS", "PARTIAL", "CONTRADICTS", "INCONCLUSIVE", "INSUFFICIENT"]
