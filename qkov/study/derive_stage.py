"""The theory stage of ``qkov reproduce``: one derive run (docs/architecture.md)."""

from __future__ import annotations

from qkov.study.context import DEFAULT_CONTEXT, RunContext

from pathlib import Path

from qkov.core.config import PARAMETRIZATIONS


def study_runs(quick: bool, data_dir: Path | None) -> list[tuple[str, dict]]:
    """One derivation of all four parametrizations (thorough full-matrix checks in ``--full``)."""
    return [("derive", {"params": list(PARAMETRIZATIONS), "formats": ["md", "html", "tex"], "thorough": not quick})]


def execute(kind: str, config: dict, run_dir: Path, ctx: RunContext = DEFAULT_CONTEXT) -> None:
    """Write the derive run (derivation.json, reports, metrics, claims) into ``run_dir``."""
    from qkov.study.derive_command import DeriveConfig, write_derivation
    from qkov.core.config import parse_config

    if kind != "derive":
        raise ValueError(f"qkov.study.derive_stage: unknown run kind {kind!r}")
    write_derivation(run_dir, parse_config(DeriveConfig, **config))


STATUS_VERDICT = {"derived": "supports", "refined": "supports", "refuted": "contradicts", "unverified": "inconclusive"}
"""Derivation status -> verdict: a refined claim holds in the sharper form the ledger states (its text says how;
``mixed`` when the ledger marks that only part of it holds);
a claim whose symbolic checks did not pass is inconclusive; ``empirical`` claims get no derive evidence."""


def derivation_evidence(payload: dict) -> list:
    """Evidence of the derive run, one per ledger entry that the derivation can settle.

    ``sharpness-order``: the derived asymptotic order is judged on the paper's pairs
    (:func:`qkov.study.claims.judge_order` on the rank, sharpest = 1); a claim that holds in part is ``mixed``,
    its numbers naming the part that holds.
    """
    from qkov.study.claims import CLAIMS, Evidence, judge_order, order_pairs_text

    out = []
    for e in payload.get("ledger", []):
        cid, status = e.get("id"), e.get("status")
        if cid not in CLAIMS or "derive" not in CLAIMS[cid].stages or status not in STATUS_VERDICT:
            continue
        verdict = STATUS_VERDICT[status]
        if status == "refined" and e.get("holds") == "in part":
            verdict = "mixed"
        first = str(e.get("derived", "")).split(". ")[0].strip()
        first = first if len(first) <= 160 else first[:157] + "..."
        numbers = f"{status}" + (" (holds in part)" if e.get("holds") == "in part" else "") + (f": {first}" if first else "")
        if cid == "sharpness-order" and e.get("order") and status in ("derived", "refined"):
            # What the derivation settles is the asymptotic order; judged on the paper's pairs only. The
            # finite-loss order is a separate statement, judged by the simulate stage.
            rank = {p: float(i + 1) for i, p in enumerate(e["order"])}
            verdict, holds, compared = judge_order(rank, 0.0)
            numbers = (f"asymptotic order (u -> oo) {' > '.join(e['order'])}: {holds}/{compared} of the paper's "
                       f"pairs hold ({order_pairs_text(rank, 0.0)}); the finite-loss order differs (simulate stage)")
        statements = e.get("statements") or []
        text = " ".join(f"[{s.get('status', '')}] {s.get('text', '')}" for s in statements) or str(e.get("derived", ""))
        out.append(Evidence(cid, "derive", verdict, numbers, "", text))
    return out
