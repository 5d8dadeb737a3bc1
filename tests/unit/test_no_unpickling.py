"""Nothing is ever unpickled (issue 44): no unpickling call anywhere in theory/, simulation/, validation/, qkov/.

Found by walking each module's syntax tree (a grep that cannot be fooled by a line break): ``pickle.load(s)``,
``pickle.Unpickler``, ``marshal.load(s)``, ``shelve``, ``dill``/``joblib``/``cloudpickle`` loads, ``np.load`` with
``allow_pickle=True``, pandas' ``read_pickle``, and ``torch.load`` without ``weights_only=True``. The
planted-payload test (tests/faults/test_planted_payloads.py) shows the readers that remain never run a payload.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("theory", "simulation", "validation", "qkov")
UNPICKLERS = {("pickle", "load"), ("pickle", "loads"), ("pickle", "Unpickler"), ("marshal", "load"),
              ("marshal", "loads"), ("shelve", "open"), ("dill", "load"), ("dill", "loads"), ("joblib", "load"),
              ("cloudpickle", "load"), ("cloudpickle", "loads"), ("pd", "read_pickle"), ("pandas", "read_pickle"),
              ("_pickle", "loads"), ("_pickle", "load")}


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def unsafe_loads(source: str) -> list[str]:
    """``"<line>: <call>"`` for every unpickling call in ``source`` (module docstring)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in ("pickle", "marshal", "dill", "cloudpickle"):
            found += [f"{node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if a.name in ("load", "loads", "Unpickler")]
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        call = (name, node.func.attr)
        if call in UNPICKLERS:
            found.append(f"{node.lineno}: {name}.{node.func.attr}")
        elif call in (("torch", "load"),):
            wo = _kw(node, "weights_only")
            if not (isinstance(wo, ast.Constant) and wo.value is True):
                found.append(f"{node.lineno}: torch.load without weights_only=True")
        elif call in (("np", "load"), ("numpy", "load")):
            ap = _kw(node, "allow_pickle")
            if ap is not None and not (isinstance(ap, ast.Constant) and ap.value is False):
                found.append(f"{node.lineno}: np.load with allow_pickle")
    return found


def test_the_check_finds_each_kind_of_unpickling():
    """The scanner is real: each form it must catch is caught, the safe forms are not."""
    bad = ("import pickle\npickle.loads(b)\n", "torch.load(f)\n", "torch.load(f, weights_only=False)\n",
           "np.load(f, allow_pickle=True)\n", "from pickle import loads\n", "pd.read_pickle(p)\n",
           "x = torch.load(\n    f,\n    map_location='cpu')\n")
    for src in bad:
        assert unsafe_loads(src), src
    for src in ("torch.load(f, weights_only=True)\n", "np.load(f, allow_pickle=False)\n", "np.load(f)\n",
                "json.loads(s)\n", "pickle.dumps(x)\n"):
        assert not unsafe_loads(src), src


@pytest.mark.parametrize("package", PACKAGES)
def test_no_unpickling_in_the_packages(package):
    found = [f"{path.relative_to(ROOT)}:{hit}" for path in sorted((ROOT / package).rglob("*.py"))
             for hit in unsafe_loads(path.read_text())]
    assert not found, "unpickling found (issue 44: nothing is ever unpickled):\n" + "\n".join(found)
