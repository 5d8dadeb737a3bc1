"""The claims ledger: each claim of the paper and of MODEL.md against what qkov derived.

Statuses: ``derived`` (the claim follows exactly), ``refined`` (true, but the derivation gives a
sharper or more qualified statement; ``"holds": "in part"`` when only part of the claim survives),
``refuted`` (the derivation contradicts it), and
``empirical`` for the real-data claim, which theory cannot settle. The ``derived`` text is
assembled from the derived objects (dimensions, factors, limits), not typed in.
"""

from __future__ import annotations

from typing import Any

import sympy as sp


def _all_pass(checks) -> bool:
    return all(c.passed for c in checks)


def _names(checks) -> list[str]:
    return [c.name for c in checks]


CROSSOVER_EXAMPLES = ((4, 8, 1), (10, 19, 1), (10, 19, 10))
"""(K, M, r) at which the ledger states the leading-order estimate of the CACO/FAFO crossover."""


def _crossover() -> tuple[str, str]:
    r"""The leading-order ratio :math:`(1-p)_{CACO}/(1-p)_{FAFO}` at matched u, and where it equals 1.

    Returns its ``sstr`` and, for each (K, M, r) of :data:`CROSSOVER_EXAMPLES`, the root ``u*`` (``nsolve``)
    with the loss :math:`(K-1)e^{-u^*}` it corresponds to at leading order (the margin/loss relation of
    the ordering module).
    """
    from theory.ordering import _U, _residual_u

    ratio = sp.simplify(_residual_u("CACO") / _residual_u("FAFO"))
    syms = {x.name: x for x in ratio.free_symbols}
    parts = []
    for K, M, rv in CROSSOVER_EXAMPLES:
        e = ratio.subs({syms["K"]: K, syms["M"]: M, syms["r"]: rv})
        try:
            us = float(sp.nsolve(e - 1, _U, 50))
        except (ValueError, ZeroDivisionError, TypeError):
            continue
        parts.append(f"K={K}, M={M}, r={rv}: u* = {us:.1f}, loss ~ {(K - 1) * float(sp.exp(-us)):.0e}")
    return sp.sstr(ratio), "; ".join(parts) or "not found"


def _adam_claim(derivations: dict) -> dict[str, Any]:
    """``adam-ratio``: the expectation for Adam's sign-descent limit against the derived laws."""
    laws = {p: d.adam for p, d in derivations.items()}
    checks = [c for d in derivations.values() for c in d.checks if "-adam-" in c.name or "-sign-" in c.name]
    # The expectation holds as stated only if every parametrization has linear u, v and a finite v/u ~ ratio.
    as_expected = all(L.u_degree == 1 and L.v_degree == 1 for L in laws.values())
    ok = _all_pass(checks)
    per = "; ".join(f"{p}: u ~ t^{L.u_degree}, v ~ t^{L.v_degree}, v/u -> {sp.sstr(L.v_over_u)}, "
                    f"log(1-p) ~ -{sp.sstr(L.v_of_u_leading.subs(sp.Symbol('u', real=True), sp.Symbol('log(1/L)')))}"
                    for p, L in laws.items())
    return {
        "id": "adam-ratio", "source": "issue 16 (expectation for Adam)",
        "claim": ("Under sign descent (Adam beta1=beta2=0, eps->0) u and v grow linearly in t, v/u tends to a constant "
                  "proportional to the ratio, 1-p at matched loss falls like a power of L whose exponent grows with "
                  "the ratio, and factorization stops rescaling the rate."),
        "status": ("unverified" if not ok else "derived" if as_expected else "refined"),
        "derived": ("Adam(0,0) is exactly reduced on the symmetric set for every eps (each entry moves by "
                    "-eta g/(|g|+eps); the remainder is null for the loss). eps->0: every reduced coordinate moves "
                    "at a constant rate eta*||D||_1/n (each entry at +-eta, whatever K, M), so a collapsed circuit's "
                    "observable grows like t and a factorized one's like t^2 (class-indexed OV basis, rank-1 QK). "
                    f"{per}. So the expectation holds exactly for CACO only (v/u -> r, 1-p ~ C L^r); FAFO has "
                    "exponent r^2/2; FACO falls faster than any power of L, CAFO slower. Factorization still "
                    "rescales, by du/dt = 2 eta_OV * 2 sqrt(u) instead of GD's 2u. Which regime: an entry is in the "
                    "sign regime while |g_e| >> eps; QK entries carry the factor (1-p) and leave it first. "
                    "eps->oo (all |g_e| << eps): eps*dx/dt is the gradient flow, i.e. GD at rates eta/eps with the same "
                    "ratio, so the GD laws (1-p ~ 1/r at matched loss) take over in the late phase."),
        "evidence": [c.name for c in checks], "section": "asymptotics",
    }


def claims_ledger(derivations: dict, glob) -> list[dict[str, Any]]:
    """One entry per claim id of docs/architecture.md, with the evidence (check names)."""
    dims = {p: d.dimension for p, d in derivations.items()}
    o = glob.ordering
    first = next(iter(derivations.values()))
    laws = {p: d.asymptotics for p, d in derivations.items()}
    growth_checks = [c for d in derivations.values() for c in d.checks
                     if any(k in c.name for k in ("Theta-log-t", "o-log2-t", "tight-rate", "independent-of-ratio"))]
    fi_checks = [c for d in derivations.values() for c in d.checks if "first-integral" in c.name or "loss-independent" in c.name]
    cons_checks = [c for d in derivations.values() for c in d.checks if "conserved" in c.name or "effective" in c.name]
    def status(ok: bool, good: str) -> str:
        return good if ok else "unverified"

    R = sp.sstr(first.first_integral.coefficient)
    slopes = ", ".join(sorted(set(sp.sstr(v) for v in o.ratio_effect.values())))
    crossover_ratio, crossover_estimate = _crossover()
    ledger = [
        {"id": "symmetric-subspace", "source": "MODEL.md 1",
         "claim": "From symmetric initialisation the full-matrix flow stays on a low-dimensional set.",
         "status": status(_all_pass(glob.symmetric_subspace) and _all_pass(glob.full_matrix), "derived"),
         "derived": ("At every S_K x S_M-symmetric point the full gradient is symmetric (symbolic K, M): common and "
                     "query columns of W_OV get zero gradient, OV column sums and the QK column sum are conserved, "
                     "the query's logit tracks the commons'. Cross-checked on full matrices for (K, M) in "
                     f"{[tuple(int(x) for x in c.name.split('-K')[1].replace('-M', ' ').split()) for c in glob.full_matrix if 'collapsed' in c.name]}."),
         "evidence": _names(glob.symmetric_subspace) + _names(glob.full_matrix), "section": "symmetric-subspace"},
        {"id": "reduced-odes", "source": "MODEL.md 1",
         "claim": "Exact reduced ODEs for each parametrization (each circuit's effective parameter a scalar).",
         "status": status(_all_pass(cons_checks), "refined"),
         "derived": (f"Reduced state dimensions {dims}: a factorized QK circuit needs a query scale a and separate "
                     "distinct/common keys b, c; a factorized OV circuit two singular scales s_O, s_V. Conserved "
                     "quantities remove the extra directions, leaving an exact 2-D (u, v) system."),
         "evidence": _names(cons_checks), "section": "reduced"},
        {"id": "rescaling", "source": "paper claim 1; MODEL.md 2",
         "claim": "Factorizing a circuit implicitly rescales its learning rate, depending on the state.",
         "status": status(_all_pass(glob.rescaling_general), "derived"),
         "derived": (f"General: dW/dt = -eta (W1 W1^T G + G W2^T W2) with W1^T W1 - W2 W2^T conserved. On the "
                     f"symmetric set: rho_OV = {sp.sstr(derivations.get('CAFO', first).rho_ov)}, "
                     f"rho_QK = {sp.sstr(derivations.get('FACO', first).rho_qk)}; balanced start: rho_OV = 2u."),
         "evidence": _names(glob.rescaling_general), "section": "rescaling"},
        {"id": "fixed-lines", "source": "paper claim 2",
         "claim": "Effective QK and OV parameters move along fixed lines with relative speed set by eta_QK/eta_OV.",
         "status": status(_all_pass(glob.symmetric_subspace), "refined"),
         "holds": "in part",
         "derived": ("Collapsed circuits move exactly on fixed lines (W_OV along P E_d^T; the query column of W_KQ "
                     "along w = ((M+1)/N on distinct, -K/N on commons and query)). A factorized QK circuit's "
                     "effective column also drifts along the softmax-null direction 1 (its sum a*S changes), so it "
                     "is on the line only modulo that direction. The relative speed dv/du = "
                     f"{sp.sstr(first.first_integral.slope)} is the ratio times a state-dependent factor, "
                     "not a constant."),
         "evidence": [c for c in _names(glob.symmetric_subspace) if "direction" in c], "section": "symmetric-subspace"},
        {"id": "first-integrals", "source": "MODEL.md 3",
         "claim": "v as a function of u along a trajectory; which parts do not depend on the loss.",
         "status": status(_all_pass(fi_checks), "derived"),
         "derived": (f"H(u, v) = G_QK(v) - R G_OV(u) is conserved, R = {R}; for collapsed QK, "
                     "G_QK = e^v + (M+1) v - 1 and v(u) is explicit via Lambert W. dv/du is identical for every "
                     "margin loss phi(p u); only the clock depends on the loss."),
         "evidence": _names(fi_checks), "section": "first-integrals"},
        {"id": "growth-rates", "source": "paper claim 2; MODEL.md 4",
         "claim": "u = O(log t), v = O(log^2 t), with constants set by eta_QK/eta_OV.",
         "status": status(_all_pass(growth_checks), "refined"),
         "derived": ("u(t) ~ log(eta_OV t) (collapsed OV) or -W_{-1}(-1/(2 eta_OV t)) ~ log t + log log t "
                     "(factorized OV): Theta(log t), leading term independent of the ratio. v grows only like "
                     "2 log log t (collapsed OV) or log log t (factorized OV): the O(log^2 t) bound holds but is "
                     "far from tight; the ratio enters v only additively (log r) and the residual 1-p as 1/r. "
                     f"CACO: v(u) ~ {sp.sstr(laws['CACO'].v_of_u) if 'CACO' in laws else ''}."),
         "evidence": _names(growth_checks), "section": "asymptotics"},
        {"id": "sharpness-ratio", "source": "paper claim 3",
         "claim": "Faster QK learning (larger eta_QK/eta_OV) concentrates attention at comparable loss.",
         "status": status(_all_pass([c for c in o.checks if c.name.startswith("ratio-")]), "derived"),
         "derived": (f"Limit u -> oo at matched loss: d log(1-p)/d log r -> {slopes} for every parametrization, "
                     "so the residual 1-p scales as 1/r only as a limit. At finite loss the slope is steeper and "
                     "differs per parametrization (measured by the simulation stage between r = 1 and 100)."),
         "statements": [
             {"status": "derived", "text": f"Asymptotic: d log(1-p)/d log r -> {slopes} as u -> oo at matched loss, "
                                           "all four parametrizations (sympy limit)."},
             {"status": "simulated", "text": "Finite loss: the slope between r = 1 and 100 is steeper than -1 and "
                                             "differs per parametrization; measured by solving the reduced flow "
                                             "(simulate-sharpness evidence)."}],
         "evidence": [c.name for c in o.checks if c.name.startswith("ratio-")], "section": "ordering"},
        {"id": "sharpness-order", "source": "paper claim 3",
         "claim": "Collapsed-OV models (CACO, FACO) concentrate attention; FAFO predicts well with weak attention.",
         "status": status(_all_pass([c for c in o.checks if c.name.startswith("order-")]), "derived"),
         "order": list(o.order),
         "derived": (f"Asymptotic order at matched loss (u -> oo), sharpest first: {' > '.join(o.order)}. "
                     "Collapsed-OV models have 1-p ~ 1/u^2 (FACO with an extra 1/log u), factorized-OV ones "
                     "1-p ~ 1/u (FAFO with 1/log u). The finite-loss order is a separate statement, found by "
                     "solving the reduced flow (simulation), not derived here."),
         "statements": [
             {"status": "derived", "text": f"Asymptotic order (u -> oo, matched loss), sharpest first: "
                                           f"{' > '.join(o.order)} (pairwise limits of residual ratios, sympy)."},
             {"status": "simulated", "text": "Finite-loss order: computed by solving the reduced flow at matched loss "
                                             "(simulate-sharpness evidence, with the loss at which CACO overtakes "
                                             "FAFO as a function of K, M, r)."},
             {"status": "derived", "text": f"Why the orders differ: (1-p)_CACO / (1-p)_FAFO = {crossover_ratio} at "
                                           "leading order, which falls below 1 only once u exceeds a multiple of "
                                           "log u: the convergence is logarithmically slow, so CACO overtakes FAFO "
                                           f"only at very small loss (leading-order estimate {crossover_estimate}). "
                                           "The estimate itself is off by orders of magnitude (the leading laws are "
                                           "still 20-30% off there); the exact crossover follows from the first "
                                           "integrals' level curves without a clock "
                                           "(simulation.figures.level_curve_crossover), and the simulate stage shows "
                                           "it. This does not depend on the initialisation."}],
         "evidence": [c.name for c in o.checks if c.name.startswith("order-")], "section": "ordering"},
        {"id": "paper-equations", "source": "PAPER.md reduced dynamics",
         "claim": "The paper's reduced equations are the gradient flow of the model.",
         "status": status(_all_pass(glob.paper_mapping), "refined"),
         "holds": "in part",
         "derived": ("With m=1, n=M+1, M_out=K, b=1: the attention, the loss and the OV equation are exactly the "
                     "derived CACO flow; the QK equation is slower by the factor (M+1)/(K+M+1): it is the flow of the "
                     "distinct token's logit with the common-token logits frozen (equal in the limit M -> oo). The "
                     "paper does not define b. If b scales the attention scores (scores / b), the gradient flow has "
                     "the paper's 1/b^2 on QK but no 1/b on OV, so the paper's OV equation would not be that flow; "
                     "under another reading of b (e.g. a rescaled OV output or time) the 1/b on OV may be consistent."),
         "evidence": _names(glob.paper_mapping), "section": "paper"},
        _adam_claim(derivations),
        {"id": "real-data", "source": "paper claim 4",
         "claim": "On SQuAD, HateXplain and SVA, raising eta_QK/eta_OV raises interpretability metrics without hurting accuracy.",
         "status": "empirical", "derived": "Not a statement about the synthetic model: tested by qkov validate real.",
         "evidence": [], "section": ""},
    ]
    return ledger
