"""One row per claim, the same for the report's first screen and README's "What qkov finds": the paper's number,
qkov's number, the verdict (named by setting when the settings disagree), the scope and the caveat.

Input is each claim's evidence as ``(stage, Evidence)`` pairs (from a study's runs, or from committed records);
nothing is judged here: each verdict is the rules module's (:mod:`qkov.study.rules`), and the claim's outcome is
:func:`qkov.study.rules.combine` / :func:`~qkov.study.rules.outcome_of` of them (or the report ledger's, which adds
the derivation's "holds in part"). Nothing is cut short: every number and scope is shown whole.

A **setting** is what tells one piece of evidence from another: the leading clauses of its scope ("CACO" of
"CACO, paper preset at 10x the paper's rates, SGD, ..."; "gd, population data, symmetric start"), as few as keep
settings with different verdicts apart, and the stage. When a claim's decided evidence disagrees, its verdict
names them: ``contradicted for CACO (synthetic training); holds for FACO, FAFO, CAFO (synthetic training), ...``;
so does a claim some of whose settings could not decide (``insufficient``: named, never counted).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

from qkov.study.claims import CLAIMS, Evidence
from qkov.study.rules import AGAINST, INSUFFICIENT, combine, outcome_of

STAGE_NAMES = {"derive": "derivation", "simulate": "simulation", "synthetic": "synthetic training", "real": "real data"}
VERDICT_WORDS = {"contradicts": "contradicted", "mixed": "contradicted", "supports": "holds",
                 "supports in part": "holds in part", "inconclusive": "inconclusive", "insufficient": "insufficient"}
MAX_NAMED_UNDECIDED = 2
"""Settings that could not decide are named up to this many, else counted."""
ORDER = ("contradicts", "mixed", "supports", "supports in part", "inconclusive", "insufficient")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One claim's row: ``claim`` (id), ``wording``, ``paper`` (the paper's number or statement, "" if none),
    ``qkov`` (the numbers behind the verdict), ``outcome`` (the claim's one word), ``verdict`` (the outcome, by
    setting when the settings disagree), ``scope`` and ``caveat``."""

    claim: str
    wording: str
    paper: str
    qkov: str
    outcome: str
    verdict: str
    scope: str
    caveat: str
    split: bool


def clauses(text: str) -> list[str]:
    """``text`` split at top-level ``", "`` (not inside parentheses or brackets)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and text.startswith(", ", i):
            out.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(ch)
        i += 1
    out.append("".join(cur))
    return [c for c in out if c]


def _settings(items: Sequence[tuple[str, Evidence]]) -> list[tuple[str, int]]:
    """Each item's setting (module docstring) and the number of leading scope clauses it took: the fewest with
    which no item of the same stage and another verdict starts the same way."""
    parts = [clauses(e.scope) for _, e in items]
    out = []
    for i, (p, (s, e)) in enumerate(zip(parts, items)):
        k = 1
        while k < len(p) and any(s2 == s and e2.verdict != e.verdict and q[:k] == p[:k]
                                 for j, (q, (s2, e2)) in enumerate(zip(parts, items)) if j != i):
            k += 1
        out.append(("/".join(p[:k]), k))
    return out


def _unique(xs: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(x for x in xs if x))


def verdict_by_setting(items: Sequence[tuple[str, Evidence]]) -> tuple[str, bool]:
    """``(text, split)``: the verdicts of ``items`` by setting when their decided verdicts differ, or when some
    settings decided and others could not (``"contradicted for CACO (synthetic training); holds for FACO, FAFO,
    CAFO (synthetic training)"``; ``"holds for hatexplain/... (real data); insufficient for squad/... (real
    data)"``: settings that could not decide are named last), else ``""`` and False."""
    decided = {("contradicts" if e.verdict == "mixed" else e.verdict) for _, e in items if e.verdict != INSUFFICIENT}
    undecided = any(e.verdict == INSUFFICIENT for _, e in items)
    if len(decided) < 2 and not (decided and undecided):
        return "", False
    groups: dict[str, dict[str, list[str]]] = {}
    for (lab, _), (stage, e) in zip(_settings(items), items):
        by_stage = groups.setdefault(VERDICT_WORDS.get(e.verdict, e.verdict), {})
        by_stage.setdefault(STAGE_NAMES.get(stage, stage), []).append(lab)
    words = sorted(groups, key=lambda w: min(ORDER.index(v) for v in ORDER if VERDICT_WORDS[v] == w))
    parts = []
    for w in words:
        n = sum(len(_unique(labs)) for labs in groups[w].values())
        if w == "insufficient" and n > MAX_NAMED_UNDECIDED:
            parts.append(f"insufficient for {n} other settings")
            continue
        parts.append(f"{w} for " + " and ".join(f"{', '.join(_unique(labs))} ({stage})" if _unique(labs) else stage
                                                for stage, labs in groups[w].items()))
    return "; ".join(parts), True


def _shown(items: Sequence[tuple[str, Evidence]]) -> list[tuple[str, Evidence]]:
    """The evidence a row shows: every decided piece (contradictions first), else every piece."""
    decided = [x for x in items if x[1].verdict != INSUFFICIENT]
    pool = decided or list(items)
    return sorted(pool, key=lambda x: (x[1].verdict not in AGAINST, ORDER.index(x[1].verdict)
                                       if x[1].verdict in ORDER else len(ORDER)))


def finding(claim: str, items: Sequence[tuple[str, Evidence]], outcome: str | None = None,
            paper: str | None = None) -> Finding:
    """The row of ``claim`` from its evidence ``items`` (``(stage, Evidence)``); ``outcome`` overrides the
    combination of their verdicts (the report passes the ledger's); ``paper`` overrides the registry's paper
    number (:attr:`theory.claims.Claim.paper_number`)."""
    c = CLAIMS.get(claim)
    items = list(items)
    out = outcome if outcome is not None else outcome_of(combine(e.verdict for _, e in items))
    by_setting, split = verdict_by_setting(items)
    shown = _shown(items)
    setting = {id(e): x for x, (_, e) in zip(_settings(items), items)} if split else {}
    numbers, scopes = [], []
    for _, e in shown:
        n, (lab, k) = e.number or e.numbers, setting.get(id(e), ("", 0))
        numbers.append(f"{lab}: {n}" if lab and not n.startswith(lab.split("/")[0]) else n)
        rest = ", ".join(clauses(e.scope)[k:]) if lab else e.scope   # the setting is named in the verdict
        scopes.append(rest or e.scope)                                 # a scope that is all setting stays whole
    return Finding(claim, c.wording if c else "", c.paper_number if (c and paper is None) else (paper or ""),
                   "; ".join(_unique(numbers)), out, by_setting or out, "; ".join(_unique(scopes)),
                   "; ".join(_unique(e.caveat for _, e in shown)), split)


def findings(evidence: Iterable[tuple[str, Evidence]], outcomes: dict[str, str] | None = None) -> list[Finding]:
    """One :class:`Finding` per registered claim (the registry's order) from ``(stage, Evidence)`` pairs; a claim
    without evidence reads ``untested``."""
    by_claim: dict[str, list[tuple[str, Evidence]]] = {}
    for s, e in evidence:
        by_claim.setdefault(e.claim, []).append((s, e))
    return [finding(cid, by_claim.get(cid, []), (outcomes or {}).get(cid)) for cid in CLAIMS]


__all__ = ["Finding", "clauses", "finding", "findings", "verdict_by_setting"]
