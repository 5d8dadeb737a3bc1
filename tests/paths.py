"""Where things are, for tests in any tier: the repository root (the folder holding pyproject.toml)."""

import os
from pathlib import Path


def _root() -> Path:
    here = Path(__file__).resolve().parent
    for p in (here, *here.parents):
        if (p / "pyproject.toml").is_file():
            return p
    raise RuntimeError("no pyproject.toml above tests/")


ROOT = _root()
DOCS = ROOT / "docs"


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a subprocess of a test: this one, plus the repository root first on ``PYTHONPATH``
    (so ``tests.*`` helper modules, e.g. fake study stages, import by name there), plus ``extra``.

    The tests' own process never edits ``sys.path`` or ``os.environ`` for this: pytest puts the root on
    ``sys.path`` (``tests`` is a package), and Dask's spawned worker processes inherit that ``sys.path``.
    """
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *rest]), **extra}
