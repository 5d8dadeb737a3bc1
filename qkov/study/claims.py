"""Evidence records, app side of the claims table :mod:`theory.claims` (ids, wording, stages, rules).

A stage computes typed evidence (:mod:`qkov.study.evidence_types`) and hands it to the one rules module,
:mod:`qkov.study.rules`, which returns the verdict, the one number behind it, its scope and caveat; the stage
writes the resulting :class:`Evidence` records with :func:`write_evidence` into the run's ``claims.json``
(through the run's ``RunWriter``, so the file is listed in ``COMPLETE``); the report reads them back with
:func:`read_evidence` and combines them with :func:`qkov.study.rules.claim_outcome`.

Verdicts of one piece of evidence (:data:`VERDICTS`)
----------------------------------------------------
``supports`` / ``contradicts``
    the evidence could have come out either way and came out for / against the claim; ``contradicts`` whenever
    *any* comparison of the evidence went against it (the failing part is named in its numbers);
``supports in part``
    for the claim in a stated, narrower scope (e.g. the derivation proves a limit, not the finite-loss claim);
``inconclusive``
    discriminating evidence without a decision (an effect inside its noise, p >= 0.05);
``insufficient``
    evidence that *cannot* discriminate: 0 comparisons, values tied within the stated resolution,
    loss levels not reached, a model that did not leave its start. It never counts for or against.
``mixed`` is read from older ``claims.json`` files only (it meant "some for, some against") and counts as
``contradicts``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

# The claims table lives in the lowest layer: ids, wording, stages, rules, thresholds.
from theory.claims import CLAIMS, SHARPNESS_ORDER_PAIRS, STAGES, THRESHOLDS, Claim  # noqa: F401 (re-exported)

VERDICTS: tuple[str, ...] = ("supports", "supports in part", "contradicts", "inconclusive", "insufficient", "mixed")
"""Every verdict a piece of evidence (or a stage's combination) may carry; ``mixed``: older files only."""

CLAIMS_FILE = "claims.json"


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What one run says about one claim.

    ``numbers``: one line of the numbers the verdict rests on; ``figure``: stem of a figure of the
    same run that shows it ("" if none); ``text``: the longer explanation; ``number``: the one number behind
    the verdict (set by :mod:`qkov.study.rules`); ``scope``: where it was measured (optimizer, sizes, loss
    range); ``caveat``: what the verdict rests on that a reader could dispute ("" if nothing).
    Files written before these three fields existed read back with them empty.
    """

    claim: str
    stage: str
    verdict: str
    numbers: str
    figure: str = ""
    text: str = ""
    number: str = ""
    scope: str = ""
    caveat: str = ""

    def __post_init__(self) -> None:
        for name in ("claim", "stage", "verdict", "numbers", "figure", "text", "number", "scope", "caveat"):
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
        """Validate one JSON object (at most the record's fields); raises ``ValueError``."""
        fields = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(obj, Mapping) or set(obj) - set(fields) or not {"claim", "stage", "verdict"} <= set(obj):
            raise ValueError(f"evidence entry {str(obj)[:60]!r}: expected an object with fields {', '.join(fields)}")
        return cls(**{k: obj.get(k, "") for k in fields})


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


# The rules used to live here; they are re-exported from the one rules module for older callers.
from qkov.study.rules import (attention_moved, beyond_chance, claim_verdict, combine, distinct_within,  # noqa: E402
                              judge_bound, judge_fraction, judge_order, judge_threshold, left_start, order_pairs_text)

__all__ = ["CLAIMS", "Claim", "STAGES", "THRESHOLDS", "judge_threshold", "left_start", "attention_moved", "beyond_chance",
           "Evidence", "VERDICTS", "combine", "claim_verdict", "judge_fraction", "judge_bound",
           "distinct_within", "judge_order", "order_pairs_text", "SHARPNESS_ORDER_PAIRS", "write_evidence",
           "read_evidence", "CLAIMS_FILE"]
