"""The layering promise, checked on the source: imports go theory -> simulation -> validation -> qkov.

Static (AST) scan of every module, so an import hidden in a function body counts too. What a fresh process
loads (`import qkov`, a simulation, a training run) is measured in tests/integration/test_import_footprint.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import ROOT

LAYERS = ("theory", "simulation", "validation", "qkov")
"""Data-flow order: a package may import itself and the ones before it, never one after it."""


def imported_packages(path: Path) -> set[tuple[str, int]]:
    """Top-level project packages imported anywhere in ``path`` (module-level or inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {(a.name.split(".")[0], node.lineno) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add((node.module.split(".")[0], node.lineno))
    return {(name, line) for name, line in out if name in LAYERS}


def layering_violations(root: Path = ROOT) -> list[str]:
    bad = []
    for rank, layer in enumerate(LAYERS):
        for f in sorted((root / layer).rglob("*.py")):
            for name, line in imported_packages(f):
                if LAYERS.index(name) > rank:
                    bad.append(f"{f.relative_to(root)}:{line} imports {name} (a later layer than {layer})")
    return bad


def test_no_layer_imports_a_later_one():
    assert layering_violations() == []


def test_the_scan_sees_a_violation(tmp_path):
    """The checker itself can fail: a theory module importing qkov inside a function is reported."""
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
    (tmp_path / "theory" / "bad.py").write_text("def f():\n    from qkov.core import runstore\n")
    (tmp_path / "simulation" / "bad.py").write_text("import validation.metrics\n")
    assert layering_violations(tmp_path) == ["theory/bad.py:2 imports qkov (a later layer than theory)",
                                             "simulation/bad.py:1 imports validation (a later layer than simulation)"]


CLI_MODULES = ("qkov/cli/", "qkov/__main__.py")
"""The command line itself (``qkov/cli/`` and ``python -m qkov``): the only modules that may import ``qkov.cli``."""


def below_the_cli(root: Path = ROOT) -> list[Path]:
    """Every module below the command line: all of theory, simulation, validation and qkov (``qkov/__init__.py``
    included) except :data:`CLI_MODULES`."""
    return [f for layer in LAYERS for f in sorted((root / layer).rglob("*.py"))
            if not f.relative_to(root).as_posix().startswith(CLI_MODULES)]


def _absolute(node: ast.ImportFrom, module: str) -> str:
    """The absolute module of a (possibly relative) ``from ... import``, seen from ``module`` (dotted)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")[:-node.level]
    return ".".join(base + ([node.module] if node.module else []))


def cli_imports(root: Path = ROOT) -> list[str]:
    """``path:line`` of every import of ``qkov.cli`` (module level or in a function, absolute or relative) below
    the CLI."""
    bad = []
    for f in below_the_cli(root):
        rel = f.relative_to(root)
        module = ".".join(rel.with_suffix("").parts)  # a package's __init__ counts as a module inside it
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, module)
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            if any(n == "qkov.cli" or n.startswith("qkov.cli.") for n in names):
                bad.append(f"{rel.as_posix()}:{node.lineno}")
    return bad


def test_nothing_below_the_cli_imports_it():
    assert cli_imports() == []


def test_the_cli_scan_covers_every_module_of_qkov_but_the_cli():
    scanned = {f.relative_to(ROOT).as_posix() for f in below_the_cli()}
    qkov = {f.relative_to(ROOT).as_posix() for f in (ROOT / "qkov").rglob("*.py")}
    assert "qkov/__init__.py" in scanned and "qkov/study/engine.py" in scanned
    assert qkov - scanned == {m for m in qkov if m.startswith(CLI_MODULES)}


def test_the_cli_scan_sees_an_import(tmp_path):
    for sub in ("theory", "simulation", "validation", "qkov/core", "qkov/study", "qkov/report", "qkov/cli"):
        (tmp_path / sub).mkdir(parents=True)
    (tmp_path / "qkov/study/bad.py").write_text("def f():\n    from qkov.cli.derive import DeriveConfig\n")
    (tmp_path / "qkov/report/bad.py").write_text("from qkov import cli\nimport qkov.cli.main\n")
    (tmp_path / "qkov/__init__.py").write_text("def v():\n    from .cli.main import _version\n")
    (tmp_path / "qkov/core/rel.py").write_text("from ..cli import options\nfrom .. import cli\n")
    (tmp_path / "qkov/cli/ok.py").write_text("from qkov.cli import options\n")   # the CLI itself may
    assert sorted(cli_imports(tmp_path)) == ["qkov/__init__.py:2", "qkov/core/rel.py:1", "qkov/core/rel.py:2",
                                             "qkov/report/bad.py:1", "qkov/report/bad.py:2", "qkov/study/bad.py:2"]


def environ_uses(root: Path = ROOT) -> list[str]:
    """``path:line`` of every use of ``os.environ`` (or ``os.getenv``/``os.putenv``) in the engine and the stages
    (``qkov/study``) and every one in ``qkov/core`` other than a read (``os.environ.get``): nothing travels
    from the engine to a run through the environment (the run's ``RunContext`` carries it)."""
    bad = []
    for sub in ("qkov/study", "qkov/core"):
        for f in sorted((root / sub).rglob("*.py")):
            tree = ast.parse(f.read_text(), filename=str(f))
            reads = {id(n.func.value) for n in ast.walk(tree) if isinstance(n, ast.Call)
                     and isinstance(n.func, ast.Attribute) and n.func.attr == "get"}
            for n in ast.walk(tree):
                if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "os"
                        and n.attr in ("environ", "getenv", "putenv", "unsetenv")
                        and (sub == "qkov/study" or id(n) not in reads)):
                    bad.append(f"{f.relative_to(root).as_posix()}:{n.lineno}")
    return bad


def test_no_environment_hand_off_between_the_engine_and_the_stages(tmp_path):
    assert environ_uses() == []
    for sub in ("qkov/study", "qkov/core"):
        (tmp_path / sub).mkdir(parents=True)
    (tmp_path / "qkov/study/bad.py").write_text("import os\nos.environ['QKOV_DEVICE'] = 'cuda'\nos.environ.get('X')\n")
    (tmp_path / "qkov/core/ok.py").write_text("import os\nx = os.environ.get('QKOV_DATA_DIR')\nos.environ.update({})\n")
    assert environ_uses(tmp_path) == ["qkov/study/bad.py:2", "qkov/study/bad.py:3", "qkov/core/ok.py:3"]


def test_no_module_name_string_imports_of_project_modules():
    for layer in LAYERS:
        for f in (ROOT / layer).rglob("*.py"):
            text = f.read_text()
            assert "import_module(" not in text, f"{f.relative_to(ROOT)} imports by module-name string"


DATASET_HOMES = ("validation/real/datasets.py", "validation/real/fetch.py", "validation/real/squad_run.py")
"""The registry, the downloader's source table and SQuAD's own decoder run; loaders (``*_data.py``) too."""


def test_no_module_outside_the_dataset_registry_names_a_dataset():
    """A dataset is declared once (docs/architecture.md "Adding things"): a string constant equal to a registered
    dataset's name in any other module of validation/ or qkov/ (docstrings aside) is a branch on its name."""
    from validation.real.datasets import NAMES

    hits = []
    for pkg in ("validation", "qkov"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in DATASET_HOMES or rel.endswith("_data.py"):
                continue
            tree = ast.parse(path.read_text(), filename=rel)
            docs = {id(n.body[0].value) for n in ast.walk(tree)
                    if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
            hits += [f"{rel}:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and n.value in NAMES and id(n) not in docs]
    assert not hits, "dataset names outside the registry:\n" + "\n".join(hits)
