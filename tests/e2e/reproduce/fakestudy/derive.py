"""Fake theory stage: one run writing ``derivation.json`` with a ledger and sympy displays."""

from __future__ import annotations

from pathlib import Path

from .common import behaviour, write_run

CLAIM_STATUS = {"symmetric-subspace": "derived", "reduced-odes": "derived", "rescaling": "refined",
                "growth-rates": "derived", "sharpness-ratio": "derived", "paper-equations": "refuted",
                "real-data": "derived"}


def study_runs(quick, data_dir):
    return [("derive", {"quick": bool(quick), "behaviour": behaviour()})]


def derivation() -> dict:
    import sympy as sp

    u, v, eta = sp.symbols("u v eta_QK", positive=True)
    t = sp.symbols("t", positive=True)
    exprs = [("Attention on the distinct token", sp.exp(u) / (sp.exp(u) + 19)),
             ("Growth of u", sp.Eq(sp.Function("u")(t), sp.log(t) * eta))]
    displays = [{"title": title, "latex": sp.latex(e), "mathml": sp.mathml(e, printer="presentation")}
                for title, e in exprs]
    ledger = [{"id": cid, "claim": f"paper says {cid}", "source": "Thm 1", "status": st,
               "derived": f"{cid} derived in sympy", "evidence": "symbolic identity", "section": "3.1"}
              for cid, st in CLAIM_STATUS.items()]
    return {"ledger": ledger, "displays": displays, "summary": "Fake derivation for tests."}


def execute(kind: str, config: dict, run_dir: Path, ctx: object = None) -> None:
    from qkov.study.derive_stage import derivation_evidence

    d = derivation()
    write_run(kind, config, run_dir, metrics={"n_equations": 2}, extra={"derivation.json": d},
              claims=[e.to_json() for e in derivation_evidence(d)])
