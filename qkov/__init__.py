"""qkov: the app over the science libraries :mod:`theory` -> :mod:`simulation` -> :mod:`validation`.

``import qkov`` is cheap (no sympy, torch or Dask). It gives the run store's reader::

    import qkov
    run = qkov.load_run("qkov-results/runs/simulate-...")
    run.config, run.metrics["..."], run.arrays["trajectories.npz"]["u"]

The whole study from Python: ``from qkov.study import reproduce; reproduce("quick", "qkov-results")``.

The ratio on your own model (torch, Hugging Face, PEFT; imported on first use)::

    opt = torch.optim.AdamW(qkov.param_groups(model, lr=3e-4, ratio=10.0))   # groups ov, qk, other

:func:`param_groups` is :func:`validation.user_models.param_groups` (see docs/tutorials/own-model.md).

Packages: :mod:`qkov.core` (validated configs, run store), :mod:`qkov.study` (the study API: ``reproduce`` and
the other commands' bodies, stages, engine, claims), :mod:`qkov.report` (the report), :mod:`qkov.cli` (every
command: parses, calls the study API, prints; nothing else imports it).
"""

from __future__ import annotations

__all__ = ["load_run", "Run", "param_groups", "__version__"]


def __getattr__(name: str):
    if name in ("load_run", "Run"):
        from qkov.core import runstore

        return getattr(runstore, name)
    if name == "param_groups":
        from validation.user_models import param_groups

        return param_groups
    if name == "__version__":
        return _version()
    raise AttributeError(name)


def _version() -> str:
    """The installed distribution's version (``0+unknown`` from a source tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("qkov")
    except PackageNotFoundError:
        return "0+unknown"
