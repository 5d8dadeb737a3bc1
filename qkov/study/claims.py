"""Evidence and its combination, app side of the claims table :mod:`theory.claims` (ids, wording, stages, rules).

A stage does not write verdict strings of its own making: it returns :class:`Evidence` objects
``Evidence(claim, stage, verdict, numbers, figure, text)`` (``claim`` an id of :data:`CLAIMS`,
``stage`` one of the claim's :attr:`Claim.stages`, ``verdict`` one of :data:`VERDICTS`) and writes
them with :func:`write_evidence` into the run's ``claims.json`` (through the run's ``RunWriter``, so
the file is listed in ``COMPLETE``); the report reads them back with :func:`read_evidence`.

Verdicts
--------
``supports`` / ``contradicts``
    the evidence could have come out either way and came out for / against the claim;
``mixed``
    discriminating evidence that points both ways (e.g. some parametrizations for, some against);
``inconclusive``
    discriminating evidence without a decision (an effect inside its noise, p >= 0.05);
``insufficient``
    evidence that *cannot* discriminate: 0 comparisons, values tied within the stated resolution,
    loss levels not reached, a model that did not leave its start. It never counts for or against.

The combining rule (:func:`combine`)
------------------------------------
One rule, used for the runs of one stage and again for the stages of one claim: drop
``insufficient``; if nothing is left the result is ``insufficient`` (or ``""`` — untested — when
there was no evidence at all); if every remaining verdict is the same, that verdict; otherwise
``mixed``. It is commutative, associative and idempotent, so the order in which runs finish and how
they are grouped into stages do not change a claim's verdict (tested with Hypothesis).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable, Mapping

# The claims table lives in the lowest layer: ids, wording, stages, rules, thresholds.
from theory.claims import CLAIMS, SHARPNESS_ORDER_PAIRS, STAGES, THRESHOLDS, Claim

VERDICTS: tuple[str, ...] = ("supports", "contradicts", "mixed", "inconclusive", "insufficient")
"""Every verdict a piece of evidence (or a combination) may carry."""
UNTESTED = ""
"""The combination of no evidence at all."""

CLAIMS_FILE = "claims.json"


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What one run says about one claim.

    ``numbers``: one line of the numbers the verdict rests on; ``figure``: stem of a figure of the
    same run that shows it ("" if none); ``text``: the longer explanation.
    """

    claim: str
    stage: str
    verdict: str
    numbers: str
    figure: str = ""
    text: str = ""

    def __post_init__(self) -> None:
        for name in ("claim", "stage", "verdict", "numbers", "figure", "text"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"evidence {name}: {getattr(self, name)!r:.60}: must be a string")
        if self.claim not in CLAIMS:
            raise ValueError(f"evidence claim: {self.claim!r:.60}: not one of {', '.join(CLAIMS)}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"evidence verdict: {self.verdict!r:.60}: not one of {', '.join(VERDICTS)}")
        if self.stage not in CLAIMS[self.claim].stages:
            raise ValueError(f"evidence stage: {self.stage!r:.60}: claim {self.claim} is tested by "
                             f"{', '.join(CLAIMS[self.claim].stages)} only")

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, obj: Any) -> "Evidence":
        """Validate one JSON object (exactly the six fields); raises ``ValueError``."""
        fields = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(obj, Mapping) or set(obj) - set(fields) or not {"claim", "stage", "verdict"} <= set(obj):
            raise ValueError(f"evidence entry {str(obj)[:60]!r}: expected an object with fields {', '.join(fields)}")
        return cls(**{k: obj.get(k, "") for k in fields})


def combine(verdicts: Iterable[str]) -> str:
    """The one combining rule (module docstring): ``insufficient`` ignored, agreement kept, else ``mixed``."""
    vs = list(verdicts)
    for v in vs:
        if v not in VERDICTS:
            raise ValueError(f"verdict: {v!r}: not one of {', '.join(VERDICTS)}")
    if not vs:
        return UNTESTED
    kept = {v for v in vs if v != "insufficient"}
    if not kept:
        return "insufficient"
    return kept.pop() if len(kept) == 1 else "mixed"


def claim_verdict(evidence: Iterable[Evidence], claim: str) -> tuple[str, dict[str, str]]:
    """``(overall, {stage: combined})`` of one claim: :func:`combine` per stage, then over the stages."""
    by_stage: dict[str, list[str]] = {}
    for e in evidence:
        if e.claim == claim:
            by_stage.setdefault(e.stage, []).append(e.verdict)
    per_stage = {s: combine(vs) for s, vs in by_stage.items()}
    return combine(per_stage.values()), per_stage


# -- helpers for stage code: verdicts that refuse vacuous evidence ---------------------------------
def judge_fraction(hits: int, total: int) -> str:
    """Verdict of ``hits`` of ``total`` comparisons in favour: ``insufficient`` for 0 comparisons,
    ``supports`` for all, ``contradicts`` for none, else ``mixed``."""
    if total <= 0:
        return "insufficient"
    return "supports" if hits == total else "contradicts" if hits == 0 else "mixed"


def judge_bound(value: float, bound: float) -> str:
    """``supports`` iff a finite ``value`` is below ``bound``; ``insufficient`` for NaN/inf."""
    if value is None or not math.isfinite(value):
        return "insufficient"
    return "supports" if value < bound else "contradicts"


def distinct_within(values: Iterable[float], resolution: float) -> bool:
    """True iff every pair of ``values`` differs by more than ``resolution`` (no ties)."""
    xs = sorted(float(x) for x in values)
    return all(b - a > resolution for a, b in zip(xs, xs[1:]))


def judge_threshold(name: str, value: float | None) -> str:
    """The verdict of ``value`` against :data:`theory.claims.THRESHOLDS` ``[name]`` (its comparison, its reason)."""
    return THRESHOLDS[name].judge(value)


def attention_moved(delta: float | None, resolution: float | None = None) -> bool:
    """``|delta| > resolution`` (default :data:`THRESHOLDS` ``attention-resolution``): the attention moved from its
    start by more than its resolution; False for a missing number."""
    res = THRESHOLDS["attention-resolution"].bound if resolution is None else resolution
    return delta is not None and math.isfinite(delta) and abs(delta) > res


def beyond_chance(p_true: float | None, chance: float, margin: float | None = None) -> bool:
    """Held-out p_true above ``chance`` (1 / number of outputs) by more than ``chance-margin``."""
    mar = THRESHOLDS["chance-margin"].bound if margin is None else margin
    return p_true is not None and math.isfinite(p_true) and p_true > chance + mar


def left_start(moved: float | None, p_true: float | None, chance: float) -> tuple[bool, str]:
    """Whether a trained model left its start in what the sharpness claims are about: its attention moved by
    more than its resolution (:func:`attention_moved`) *and* its prediction is beyond chance
    (:func:`beyond_chance`). ``moved``: attention at the end minus at the start (distinct-token mass);
    ``p_true``: held-out probability of the true token; ``chance``: 1 / number of outputs.
    Returns ``(ok, why)``; a missing number is not ok.
    """
    if not attention_moved(moved):
        return False, (f"attention moved by {abs(moved):.2g} <= resolution "
                       f"{THRESHOLDS['attention-resolution'].bound:g}" if moved is not None and math.isfinite(moved)
                       else "attention change not measured")
    if not beyond_chance(p_true, chance):
        return False, (f"p_true {p_true:.3f} not beyond chance {chance:.3f} + {THRESHOLDS['chance-margin'].bound:g}"
                       if p_true is not None and math.isfinite(p_true) else "p_true not measured")
    return True, ""


def judge_order(residual: Mapping[str, float], resolution: float) -> tuple[str, int, int]:
    """``(verdict, holds, compared)`` of the paper's pairs (:data:`theory.claims.SHARPNESS_ORDER_PAIRS`) on residuals ``1-p`` (smaller = sharper).

    A pair whose residuals differ by a relative amount <= ``resolution`` is a tie and is not compared; a
    pair with a missing or non-finite value is not compared either; the verdict is :func:`judge_fraction`.
    """
    holds = compared = 0
    for a, b in SHARPNESS_ORDER_PAIRS:
        x, y = residual.get(a), residual.get(b)
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)) or min(x, y) <= 0:
            continue
        if abs(x / y - 1) <= resolution:
            continue
        compared += 1
        holds += x < y
    return judge_fraction(holds, compared), holds, compared


def order_pairs_text(residual: Mapping[str, float], resolution: float) -> str:
    """Which of the paper's pairs hold and which fail (``sharper < weaker`` in 1-p), ties and missing named too:
    what a ``mixed`` order verdict points at."""
    parts: dict[str, list[str]] = {"holds": [], "fails": [], "tie": []}
    for a, b in SHARPNESS_ORDER_PAIRS:
        x, y = residual.get(a), residual.get(b)
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)) or min(x, y) <= 0:
            continue
        key = "tie" if abs(x / y - 1) <= resolution else "holds" if x < y else "fails"
        parts[key].append(f"{a} sharper than {b}")
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in parts.items() if v)


def write_evidence(run: Any, evidence: Iterable[Evidence]) -> list[Evidence]:
    """Write ``claims.json`` (``{"evidence": [...]}``) through ``run`` (a ``RunWriter``)."""
    items = list(evidence)
    for e in items:
        if not isinstance(e, Evidence):
            raise TypeError(f"write_evidence: {e!r:.60} is not an Evidence")
    run.write_json(CLAIMS_FILE, {"evidence": [e.to_json() for e in items]})
    return items


def read_evidence(obj: Any) -> tuple[list[Evidence], list[str]]:
    """The valid :class:`Evidence` of a parsed ``claims.json`` and one line per rejected entry."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("evidence"), list):
        return [], ["claims.json: expected {\"evidence\": [...]}"]
    good, bad = [], []
    for item in obj["evidence"]:
        try:
            good.append(Evidence.from_json(item))
        except (ValueError, TypeError) as exc:
            bad.append(str(exc))
    return good, bad


__all__ = ["CLAIMS", "Claim", "STAGES", "THRESHOLDS", "judge_threshold", "left_start", "attention_moved", "beyond_chance", "Evidence", "VERDICTS", "UNTESTED", "combine", "claim_verdict", "judge_fraction",
           "judge_bound", "distinct_within", "judge_order", "order_pairs_text", "SHARPNESS_ORDER_PAIRS", "write_evidence", "read_evidence", "CLAIMS_FILE"]
