r"""One object per parametrization holding everything derived about it, plus the global results.

``theory.derive("FACO")`` returns a :class:`Derivation` (sympy expressions and their checks);
:func:`derive_all` adds the results that concern all four (symmetric subspace, general rescaling
identities, paper mapping, ordering) and the claims ledger; :func:`derivation_json` is what
``qkov derive --json`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import sympy as sp

from theory.adam import SignLaws, adam_checks, sign_laws, sign_summary
from theory.asymptotics import AsymptoticLaws, asymptotic_checks, asymptotic_laws
from theory.asymptotics_next import REMAINDERS, next_order_checks, next_order_laws
from theory.checks import Check, method_counts, scoped_counts, tag
from theory.first_integrals import FirstIntegral, first_integral, first_integral_checks
from theory.reduced import ReducedSystem, balanced_initial_state, flow_checks, reduced_system
from theory.rescaling import (conservation_checks, conserved_quantities, effective_system, effective_system_checks,
                              ov_rescaling, qk_rescaling)
from theory.parametrization import PARAMETRIZATIONS, Parametrization

PARAMS = PARAMETRIZATIONS


@dataclass(frozen=True)
class Derivation:
    r"""Everything derived about one parametrization.

    ``system`` is the reduced ODE; ``conserved`` maps names to conserved quantities in the state;
    ``rho_ov``/``rho_qk`` are the implicit learning-rate factors in the effective observables;
    ``effective`` is the exact 2-D :math:`(\dot u, \dot v)`; ``first_integral`` and ``asymptotics``
    as in their modules; ``adam`` the sign-descent laws of Adam's limit flow (:mod:`theory.adam`);
    ``checks`` lists every check that established them. For a parametrization whose kinds have no closed-form
    line results (:attr:`theory.parametrization.Parametrization.line_theory` False: tied, scaled, ...) only the
    reduced flow, its conserved quantities and their checks are derived; the other fields are ``None``.
    """

    param: str
    system: ReducedSystem
    conserved: dict[str, sp.Expr]
    rho_ov: sp.Expr | None
    rho_qk: sp.Expr | None
    effective: tuple[sp.Expr, sp.Expr] | None
    first_integral: FirstIntegral | None
    asymptotics: AsymptoticLaws | None
    adam: SignLaws | None
    checks: tuple[Check, ...] = field(default=())

    @property
    def line_theory(self) -> bool:
        """True when the line results (rescaling, first integral, laws) were derived."""
        return self.first_integral is not None

    @property
    def dimension(self) -> int:
        return self.system.dimension

    def as_json(self) -> dict[str, Any]:
        s = self.system
        reduced = {
            "param": self.param,
            "dimension": self.dimension,
            "state": [x.name for x in s.state],
            "matrices": {"OV": s.ov.matrix_form, "QK": s.qk.matrix_form},
            "rhs": {x.name: sp.sstr(f) for x, f in zip(s.state, s.rhs_display, strict=False)},
            "p": sp.sstr(s.p_expr),
            "observables": {"u": sp.sstr(s.u_expr), "v": sp.sstr(s.v_expr), "loss": sp.sstr(s.loss_expr)},
            "initial_state": {x.name: sp.sstr(val) for x, val in balanced_initial_state(Parametrization(self.param)).items()},
            "conserved": {k: sp.sstr(v) for k, v in self.conserved.items()},
            "line_theory": self.line_theory,
            "checks": [c.as_dict() for c in self.checks],
        }
        laws = self.asymptotics
        if laws is None or self.first_integral is None or self.effective is None:
            return reduced
        return {
            "param": self.param,
            "dimension": self.dimension,
            "state": [x.name for x in s.state],
            "matrices": {"OV": s.ov.matrix_form, "QK": s.qk.matrix_form},
            "rhs": {x.name: sp.sstr(f) for x, f in zip(s.state, s.rhs_display, strict=False)},
            "p": "exp(v)/(M + exp(v) + 1)",
            "observables": {"u": sp.sstr(s.u_expr), "v": sp.sstr(s.v_expr), "loss": "log(1 + (K - 1)*exp(-p*u))"},
            "initial_state": {x.name: sp.sstr(val) for x, val in balanced_initial_state(Parametrization(self.param)).items()},
            "conserved": {k: sp.sstr(v) for k, v in self.conserved.items()},
            "rescaling": {"rho_OV": sp.sstr(self.rho_ov), "rho_QK": sp.sstr(self.rho_qk)},
            "effective_system": {"du/dt": sp.sstr(self.effective[0]), "dv/dt": sp.sstr(self.effective[1])},
            "first_integral": {"H": sp.sstr(self.first_integral.H), "dv/du": sp.sstr(self.first_integral.slope),
                               "R": sp.sstr(self.first_integral.coefficient),
                               "loss_independent": True},
            "asymptotics": {
                "u(t)": sp.sstr(laws.u_of_t), "u(t) expanded": sp.sstr(laws.u_of_t_expanded),
                "v(u)": sp.sstr(laws.v_of_u), "v(u) expanded": sp.sstr(laws.v_of_u_expanded),
                "1-p at matched u": sp.sstr(laws.residual_of_u),
                "v(t) expanded": sp.sstr(laws.v_of_t_expanded),
                "1-p(t) expanded": sp.sstr(laws.residual_of_t_expanded),
            },
            "asymptotics_next_order": {
                "form": "implicit: v solves log(eta_OV t) = log_time_next(u_level(v), v); u = u_level(v); "
                        "1-p = residual_of_v(v)",
                **{name: sp.sstr(getattr(next_order_laws(self.param), name))
                   for name in ("u_of_level", "log_time_next", "residual_of_v")},
                "remainders": dict(REMAINDERS),
            },
            "adam": {"limit_flow": "Adam(beta1=beta2=0): dw_e/dt = -eta g_e/(|g_e| + epsilon), per entry",
                     "sign_descent (epsilon -> 0)": sign_summary(self.param),
                     "late_phase (epsilon -> oo)": "epsilon * dx/dt -> the gradient-flow rhs: GD at eta/epsilon, same ratio"},
            "checks": [c.as_dict() for c in self.checks],
        }


@lru_cache(maxsize=None)
def derive(param: Parametrization) -> Derivation:
    """Derive and check everything about ``param`` (cached per process)."""
    p = Parametrization(param)  # ValueError naming the registered ones
    system = reduced_system(param)
    checks: list[Check] = []
    checks += tag("conservation", conservation_checks(param))
    if not p.line_theory:  # a kind without theory's closed-form line results: its reduced flow only
        checks += tag("effective-system", flow_checks(param))
        return Derivation(param=str(p), system=system, conserved=conserved_quantities(param), rho_ov=None,
                          rho_qk=None, effective=None, first_integral=None, asymptotics=None, adam=None,
                          checks=tuple(checks))
    checks += tag("effective-system", effective_system_checks(param))
    checks += tag("effective-system", flow_checks(param))
    checks += tag("first-integral", first_integral_checks(param))
    checks += tag("growth", asymptotic_checks(param))
    checks += tag("growth", next_order_checks(param))
    checks += tag("adam", adam_checks(param))
    return Derivation(
        param=param, system=system, conserved=conserved_quantities(param),
        rho_ov=ov_rescaling().in_effective if p.ov.kind.rescales else sp.Integer(1),
        rho_qk=qk_rescaling().in_effective if p.qk.kind.rescales else sp.Integer(1),
        effective=effective_system(param), first_integral=first_integral(param),
        asymptotics=asymptotic_laws(param), adam=sign_laws(param), checks=tuple(checks))


@dataclass(frozen=True)
class GlobalResults:
    """Results that concern all parametrizations at once."""

    symmetric_subspace: tuple[Check, ...]
    full_matrix: tuple[Check, ...]
    rescaling_general: tuple[Check, ...]
    paper_mapping: tuple[Check, ...]
    ordering: Any


@lru_cache(maxsize=2)
def global_results(full_matrix: bool = True) -> GlobalResults:
    """Symmetric-subspace proof, concrete full-matrix cross-checks, general identities, paper map, ordering."""
    from theory.full_matrix_check import full_matrix_checks
    from theory.ordering import sharpness_ordering
    from theory.paper import paper_mapping_checks
    from theory.optimizer_rescaling import sign_rescaling_checks
    from theory.rescaling import matrix_identity_checks, rescaling_checks
    from theory.symmetric_line import line_checks

    return GlobalResults(
        symmetric_subspace=tuple(tag("symmetric-line", line_checks())),
        full_matrix=tuple(tag("full-matrix", full_matrix_checks(quick=not full_matrix))),
        rescaling_general=tuple(tag("rescaling", matrix_identity_checks() + rescaling_checks()
                                    + sign_rescaling_checks())),
        paper_mapping=tuple(tag("paper-mapping", paper_mapping_checks())),
        ordering=sharpness_ordering(),
    )


def _derive_task(task: str):
    return task, (global_results(True) if task == "global-thorough" else global_results(False)
                  if task == "global" else derive(task))


def derive_all(params: tuple[str, ...] = PARAMS, full_matrix: bool = False,
               workers: int | None = None) -> tuple[dict[str, Derivation], GlobalResults]:
    """Derivations of ``params`` and the global results.

    ``full_matrix=True`` runs the concrete full-matrix cross-checks at every size of
    :data:`theory.full_matrix_check.SIZES` (else only the smallest). The independent pieces run in
    ``workers`` processes (default: 4 on machines with >= 4 CPUs, else 1; 1 inside a daemon process).
    """
    import multiprocessing as mp
    import os
    from concurrent.futures import ProcessPoolExecutor

    tasks = ["global-thorough" if full_matrix else "global", *params]
    if workers is None:
        # The pieces share sub-derivations that each worker redoes: a pool pays off from 4 cores on.
        cpus = os.cpu_count() or 1
        workers = 1 if mp.current_process().daemon or cpus < 4 else min(4, cpus)
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as pool:
            results = dict(pool.map(_derive_task, tasks))
    else:
        results = dict(map(_derive_task, tasks))
    glob = results.pop(tasks[0])
    return {p: results[p] for p in params}, glob


def all_checks(derivations: dict[str, Derivation], glob: GlobalResults) -> list[Check]:
    """Every check, global first."""
    out = list(glob.symmetric_subspace) + list(glob.full_matrix) + list(glob.rescaling_general)
    out += list(glob.paper_mapping) + list(glob.ordering.checks)
    for d in derivations.values():
        out += list(d.checks)
    return out


def derivation_json(params: tuple[str, ...] = PARAMS, full_matrix: bool = False,
                    workers: int | None = None) -> dict[str, Any]:
    """The ``qkov derive --json`` payload: per-parametrization results, global results, ledger."""
    from theory.displays import displays
    from theory.ledger import claims_ledger

    derivations, glob = derive_all(params, full_matrix, workers)
    checks = all_checks(derivations, glob)
    lined = {p: d for p, d in derivations.items() if d.line_theory}  # the ledger rests on the line results
    o = glob.ordering
    return {
        "model": "orthogonal synthetic model (MODEL.md); K, M, eta_QK, eta_OV symbolic",
        "parametrizations": {p: d.as_json() for p, d in derivations.items()},
        "symmetric_subspace": {
            "orbit_coordinates": {"OV": ["A", "B", "C", "E"], "QK": ["alpha", "beta", "gamma"]},
            "checks": [c.as_dict() for c in glob.symmetric_subspace + glob.full_matrix],
        },
        "rescaling_general": {
            "form": "dW/dt = -eta (W1 W1^T G + G W2^T W2); d/dt(W1^T W1 - W2 W2^T) = 0",
            "rho_OV": sp.sstr(ov_rescaling().in_effective), "rho_QK": sp.sstr(qk_rescaling().in_effective),
            "rho_QK_balanced": sp.sstr(qk_rescaling().balanced),
            "checks": [c.as_dict() for c in glob.rescaling_general],
        },
        "paper_mapping": {"identification": "m=1, n=M+1, M_out=K, b=1, mu_OV=u, mu_QK=v",
                          "checks": [c.as_dict() for c in glob.paper_mapping]},
        "ordering": {"asymptotic_order_sharpest_first": list(o.order),
                     "pairwise_limits": {f"{a}/{b}": sp.sstr(v) for (a, b), v in o.pairwise.items()},
                     "dlog_residual_dlog_ratio": {k: sp.sstr(v) for k, v in o.ratio_effect.items()},
                     "slow_start": {k: sp.sstr(v) for k, v in o.slow_start.items()},
                     "checks": [c.as_dict() for c in o.checks]},
        "ledger": claims_ledger(lined, glob) if lined else [],
        "displays": displays(derivations, glob),
        "summary": {"checks": len(checks), "passed": sum(c.passed for c in checks),
                    "numeric_fallbacks": sum(c.numeric for c in checks),
                    "at_one_point_or_size": sum(c.scoped for c in checks),
                    "methods": method_counts(checks), "scoped_kinds": scoped_counts(checks)},
    }
