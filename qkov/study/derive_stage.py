"""The theory stage of ``qkov reproduce``: one derive run (docs/architecture.md)."""

from __future__ import annotations

from qkov.study.context import DEFAULT_CONTEXT, RunContext

from pathlib import Path

from qkov.core.config import PARAMETRIZATIONS


def study_runs(quick: bool, data_dir: Path | None) -> list[tuple[str, dict]]:
    """One derivation of all four parametrizations (thorough full-matrix checks in ``--full``)."""
    return [("derive", {"params": list(PARAMETRIZATIONS), "formats": ["md", "html", "tex"], "thorough": not quick})]


def execute(kind: str, config: dict, run_dir: Path, ctx: RunContext = DEFAULT_CONTEXT, *,
            use_cache: bool = True) -> None:
    """Write the derive run (derivation.json, reports, metrics, claims) into ``run_dir``; ``use_cache=False``:
    derive again even if the derivation of this code is cached (``qkov derive --no-cache``)."""
    from qkov.study.derive_command import DeriveConfig, write_derivation
    from qkov.core.config import parse_config

    if kind != "derive":
        raise ValueError(f"qkov.study.derive_stage: unknown run kind {kind!r}")
    write_derivation(run_dir, parse_config(DeriveConfig, **config), use_cache=use_cache)


def derivation_evidence(payload: dict) -> list:
    """Evidence of the derive run, one per ledger entry that the derivation can settle: the typed
    :class:`~qkov.study.evidence_types.DerivationEntry` (status, holds, first sentence, and for ``sharpness-order`` the
    derived asymptotic order) judged by :func:`qkov.study.rules.judge` (a status the rules do not know, e.g.
    ``empirical``, gets no derive evidence)."""
    from qkov.study import evidence_types as et
    from qkov.study.claims import CLAIMS
    from qkov.study.rules import STATUS_VERDICT, evidence as judged, order_pairs_text

    out = []
    for e in payload.get("ledger", []):
        cid, status = e.get("id"), e.get("status")
        if cid not in CLAIMS or "derive" not in CLAIMS[cid].stages or status not in STATUS_VERDICT:
            continue
        first = str(e.get("derived", "")).split(". ")[0].strip()   # whole: the report wraps, it never cuts
        order = tuple(e.get("order") or ()) if cid == "sharpness-order" else ()
        typed = et.DerivationEntry(str(status), str(e.get("holds", "") or ""), first, order)
        numbers = f"{status}" + (" (holds in part)" if e.get("holds") == "in part" else "") + (f": {first}" if first else "")
        if order and status in ("derived", "refined"):
            # What the derivation settles is the asymptotic order; judged on the paper's pairs only. The
            # finite-loss order is a separate statement, judged by the simulate stage.
            rank = {p: float(i + 1) for i, p in enumerate(order)}
            numbers = (f"asymptotic order (u -> oo) {' > '.join(order)} ({order_pairs_text(rank, 0.0)}); the "
                       "finite-loss order differs (simulate stage)")
        statements = e.get("statements") or []
        text = " ".join(f"[{s.get('status', '')}] {s.get('text', '')}" for s in statements) or str(e.get("derived", ""))
        out.append(judged(cid, "derive", typed, numbers, "", text))
    return out
