"""One solve (issue 43): no module under ``qkov/study`` reaches a solver of :mod:`simulation` other than
:func:`simulation.solve` (not even :func:`simulation.solve_batch`, the grid form the figure helpers use).

Every ``qkov/study/**/*.py`` is parsed with :mod:`ast`; a violation is a name of :data:`SOLVERS` imported from
``simulation`` or one of its modules (``from simulation.reduced import integrate``), or read as an attribute of a
name bound to such an import (``from simulation import reduced; reduced.integrate(...)``,
``import simulation.reduced; simulation.reduced.integrate(...)``). Helpers (figures, closed forms, law tables,
time grids, state constructors) stay importable."""

from __future__ import annotations

import ast

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.unit

STUDY = ROOT / "qkov" / "study"
SOLVERS = frozenset({"integrate", "integrate_many", "integrate_states", "clock_free_states", "reference_states",
                     "simulate_full", "paper_rk4", "paper_adaptive", "simulate_optimizer", "run_orbit_map",
                     "run_orbit_maps", "run_set_map", "integrate_clock_free", "integrate_batch", "fixed_step",
                     "solve_batch"})
"""The solve-like entry points of :mod:`simulation` that :func:`simulation.solve` routes to (the issue's list, and
the clock-free, vectorised DOP853 and fixed-step integrators beneath them). ``simulation.paper_sim.reproduce`` and
the figure helpers are not here: they call :func:`simulation.solve` / :func:`simulation.solve_batch` themselves."""


def _from_simulation(module: str | None) -> bool:
    return module is not None and (module == "simulation" or module.startswith("simulation."))


def solver_uses(source: str, filename: str = "<string>") -> list[str]:
    """``"line: what"`` for every import or attribute read of a name in :data:`SOLVERS` from ``simulation``."""
    tree = ast.parse(source, filename=filename)
    bound: set[str] = set()                       # local names bound to simulation or one of its modules
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _from_simulation(node.module):
            for alias in node.names:
                if alias.name in SOLVERS:
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _from_simulation(alias.name):
                    bound.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SOLVERS:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_study_module_reaches_a_solver_other_than_solve():
    files = sorted(STUDY.rglob("*.py"))
    assert files, f"no modules under {STUDY}"
    bad = {str(f.relative_to(ROOT)): uses for f in files
           if (uses := solver_uses(f.read_text(encoding="utf-8"), str(f)))}
    assert not bad, f"qkov/study must call simulation.solve only: {bad}"


@pytest.mark.parametrize("source", [
    "from simulation.reduced import integrate\n",
    "def f():\n    from simulation.reduced import dense_times, integrate_many as im\n",
    "from simulation.optimizer_maps import simulate_optimizer\n",
    "from simulation import reduced\nreduced.integrate_states(1)\n",
    "import simulation.full_matrix\nsimulation.full_matrix.simulate_full(1)\n",
    "import simulation.paper_sim as ps\nps.paper_rk4(1)\n",
    "from simulation import solve, solve_batch\n",
])
def test_a_planted_solver_is_found(source):
    assert solver_uses(source)


@pytest.mark.parametrize("source", [
    "from simulation import solve\n",
    "from simulation.figures import trajectories_figure\nfrom simulation.closed_forms import law_table\n",
    "from simulation.full_matrix import balanced_state, random_state\n",
    "from validation.synthetic import integrate\n",                 # not simulation's
    "from simulation import plots\nplots.close(1)\n",
])
def test_solve_and_helpers_pass(source):
    assert solver_uses(source) == []
