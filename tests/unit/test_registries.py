"""One registry per kind of thing, defaults declared once (issue 29): the command line and the configs read the
solvers (:data:`simulation.METHODS`), the reduced optimizer maps (:data:`simulation.optimizer_maps.OPTIMIZERS`)
and Adam's defaults (:mod:`simulation.optimizer_defaults`) from their one declaration, and no module restates
Adam's default betas or eps as numbers."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.unit

PACKAGES = ("theory", "simulation", "validation", "qkov")
DECLARED_IN = "simulation/optimizer_defaults.py"

PENDING: dict[str, str] = {}
"""Modules (-> their owner) that still restate the defaults when this test was written: they should read
:mod:`simulation.optimizer_defaults`. Remove an entry when its module does."""


def restatements(path: Path) -> list[int]:
    """Lines of ``path`` whose code (not docstrings) restates Adam's defaults: the number 0.999 (beta2), or a
    parameter/field named ``eps`` (or ``adam_eps``) defaulting to 1e-8."""
    lines = []
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == 0.999 and not isinstance(node.value, bool):
            lines.append(node.lineno)
        elif isinstance(node, ast.arguments):
            args = node.posonlyargs + node.args
            pairs = list(zip(args[len(args) - len(node.defaults):], node.defaults))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
            lines += [d.lineno for a, d in pairs if a.arg.endswith("eps") and _is(d, 1e-8)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            if node.target.id.endswith("eps") and _is(node.value, 1e-8):
                lines.append(node.lineno)
    return sorted(set(lines))


def _is(node: ast.AST, value: float) -> bool:
    return isinstance(node, ast.Constant) and node.value == value


def test_adam_defaults_are_declared_once():
    found = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            rel = str(f.relative_to(ROOT))
            if rel != DECLARED_IN and rel not in PENDING and restatements(f):
                found[rel] = restatements(f)
    assert not found, f"Adam's defaults restated (read simulation.optimizer_defaults instead): {found}"


def test_the_restatement_scan_is_not_vacuous(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""betas 0.999 in a docstring is prose."""\n'
                 "def adam(lr, betas=(0.9, 0.999), *, eps=1e-8, tol=1e-8):\n    return lr\n\n"
                 "class C:\n    eps: float = 1e-8\n    other: float = 1e-8\n")
    assert restatements(f) == [2, 6]
    assert restatements(ROOT / DECLARED_IN) == [11]


def test_simulate_reads_the_solver_and_optimizer_registries():
    from simulation import METHODS
    from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS
    from simulation.optimizer_maps import OPTIMIZERS

    from qkov.cli.simulate import simulate
    from qkov.core.simulate_config import SimulateConfig

    opts = {p.name: p for p in simulate.params}
    assert opts["method"].type.choices == tuple(METHODS)
    assert opts["optimizer"].type.choices == ("flow", *OPTIMIZERS)
    assert (opts["beta1"].default, opts["beta2"].default, opts["eps"].default) == (*ADAM_BETAS, ADAM_EPS)
    fields = SimulateConfig.model_fields
    # The config's Literal types restate the names for the type checker: they must be the registries' names.
    assert typing.get_args(fields["method"].annotation) == tuple(METHODS)
    assert typing.get_args(fields["optimizer"].annotation) == ("flow", *OPTIMIZERS)
    assert (fields["beta1"].default, fields["beta2"].default, fields["eps"].default) == (*ADAM_BETAS, ADAM_EPS)
