"""Where things are, for tests in any tier: the repository root (the folder holding pyproject.toml)."""

from pathlib import Path


def _root() -> Path:
    here = Path(__file__).resolve().parent
    for p in (here, *here.parents):
        if (p / "pyproject.toml").is_file():
            return p
    raise RuntimeError("no pyproject.toml above tests/")


ROOT = _root()
DOCS = ROOT / "docs"
