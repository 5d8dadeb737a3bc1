"""The claims ledger: the theory's derivation joined with each stage's ``claims.json``.

Row per claim id (the ids of ``docs/architecture.md``). Columns: the paper's claim,
what the derivation found (``derived`` / ``refined`` / ``refuted``), and one verdict
per empirical stage (simulation, synthetic training, real data), each ``supports`` /
``contradicts`` / ``mixed`` / ``n/a`` / empty (not tested), and an overall verdict.

Verdicts of several runs of one stage on one claim combine as: all ``supports`` ->
``supports``; all ``contradicts`` -> ``contradicts``; otherwise ``mixed``
(``n/a`` runs are ignored; only ``n/a`` -> ``n/a``).

**Overall verdict rule** (:func:`overall_verdict`), with ``E`` the stages' combined
verdicts other than ``n/a``/untested and ``T`` the derivation status:

1. any ``mixed`` in ``E``, or both ``supports`` and ``contradicts`` in ``E`` -> **mixed**;
2. ``T = refuted``: -> **refuted** unless ``E`` holds a ``supports`` (then **mixed**);
3. ``E`` only ``contradicts`` -> **contradicted**;
4. ``E`` only ``supports`` -> **supported** (**supported as refined** when ``T = refined``);
5. ``E`` empty: ``T = derived`` -> **derived only**, ``T = refined`` -> **refined only**,
   no derivation -> **untested**.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from qkov.report.collect import StudyResults

CLAIMS: dict[str, str] = {
    "symmetric-subspace": "from symmetric initialisation the full flow stays on a low-dimensional set",
    "reduced-odes": "the exact reduced ODEs of each parametrization",
    "rescaling": "factorizing a circuit rescales its learning rate, depending on the state",
    "fixed-lines": "effective QK and OV parameters move along fixed lines, relative speed eta_QK/eta_OV",
    "first-integrals": "v as a function of u along trajectories; what does not depend on the loss",
    "growth-rates": "u = O(log t), v = O(log^2 t), constants set by eta_QK/eta_OV",
    "sharpness-ratio": "larger eta_QK/eta_OV concentrates attention at comparable loss",
    "sharpness-order": "CACO, FACO concentrate; FAFO predicts well with weak attention",
    "paper-equations": "the paper's reduced equations are the gradient flow of the model",
    "real-data": "raising eta_QK/eta_OV raises attention-interpretability metrics without hurting accuracy",
}
"""Claim ids shared by every layer (docs/architecture.md), in the ledger's order."""

EMPIRICAL_STAGES: tuple[tuple[str, str], ...] = (
    ("simulate", "simulation"), ("synthetic", "synthetic training"), ("real", "real data"),
)
VERDICTS = ("supports", "contradicts", "mixed", "n/a")


@dataclasses.dataclass(frozen=True)
class StageVerdict:
    """One stage's combined verdict on one claim, with the evidence of each run."""

    verdict: str  # supports | contradicts | mixed | n/a | "" (not tested)
    evidence: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class LedgerRow:
    """One claim: the paper's wording, the derivation's finding, each stage, the verdict."""

    id: str
    claim: str
    status: str  # derived | refined | refuted | "" (no derivation)
    derived: str
    section: str
    stages: dict[str, StageVerdict]
    verdict: str


def combine_verdicts(verdicts: Iterable[str]) -> str:
    """Combine several runs' verdicts on one claim (see module docstring); ``""`` if none."""
    vs = [v for v in verdicts if v]
    if not vs:
        return ""
    real = [v for v in vs if v != "n/a"]
    if not real:
        return "n/a"
    if all(v == "supports" for v in real):
        return "supports"
    if all(v == "contradicts" for v in real):
        return "contradicts"
    return "mixed"


def overall_verdict(status: str, stage_verdicts: Iterable[str]) -> str:
    """The ledger's verdict from the derivation ``status`` and the stages' verdicts (module docstring)."""
    e = {v for v in stage_verdicts if v in ("supports", "contradicts", "mixed")}
    if "mixed" in e or {"supports", "contradicts"} <= e:
        return "mixed"
    if status == "refuted":
        return "mixed" if "supports" in e else "refuted"
    if e == {"contradicts"}:
        return "contradicted"
    if e == {"supports"}:
        return "supported as refined" if status == "refined" else "supported"
    return {"derived": "derived only", "refined": "refined only"}.get(status, "untested")


def _claim_entries(claims: dict[str, Any], cid: str) -> tuple[str, str] | None:
    entry = claims.get(cid)
    if entry is None:
        return None
    if isinstance(entry, str):
        return entry, ""
    if isinstance(entry, dict):
        v = str(entry.get("verdict", ""))
        return (v if v in VERDICTS else "mixed" if v else ""), str(entry.get("evidence", ""))
    return None


def build_ledger(results: StudyResults) -> list[LedgerRow]:
    """Join the derivation's ledger with every run's ``claims.json`` by claim id."""
    derivation = results.derivation or {}
    theory = {str(e.get("id")): e for e in derivation.get("ledger", []) if isinstance(e, dict)}
    ids = list(theory)
    for r in results.runs:
        ids += [c for c in r.claims if c not in ids]
    ids = list(CLAIMS) + [c for c in ids if c not in CLAIMS]
    rows = []
    for cid in ids:
        t = theory.get(cid, {})
        stages = {}
        for stage, _ in EMPIRICAL_STAGES:
            found = [e for e in (_claim_entries(r.claims, cid) for r in results.stage(stage)) if e]
            stages[stage] = StageVerdict(combine_verdicts(v for v, _ in found),
                                         tuple(dict.fromkeys(ev for _, ev in found if ev)))
        status = str(t.get("status", ""))
        rows.append(LedgerRow(cid, str(t.get("claim") or CLAIMS.get(cid, cid)), status, str(t.get("derived", "")),
                              str(t.get("section", "")), stages,
                              overall_verdict(status, (s.verdict for s in stages.values()))))
    return rows
