"""Fake study stages for the engine's tests: same contract as ``qkov.study.derive_stage`` & co, instant runs.

Behaviour comes from the environment of the *planning* process and travels inside
each run's config (so the workers need nothing but this package, ``tests.e2e.reproduce.fakestudy``, importable
from the repository root: in-process Dask workers get the parent's ``sys.path``, subprocesses get
:func:`tests.paths.child_env`):

- ``QKOV_FAKE_DIR``: scratch directory; each execution appends to ``counts/<run dir name>``;
- ``QKOV_FAKE_SLEEP``: seconds each run sleeps between its first file and ``COMPLETE``;
- ``QKOV_FAKE_KILL=1``: the first synthetic run kills its own worker process the first time
  (a marker file in the scratch directory remembers that it did);
- ``QKOV_FAKE_FAIL=1``: the first synthetic run always raises.
"""

from qkov.study.engine import Stage

from . import derive, real, simulate, synthetic

FAKE_STAGES = (
    Stage.from_module("derive", derive),
    Stage.from_module("simulate", simulate),
    Stage.from_module("synthetic", synthetic),
    Stage.from_module("real", real),
)
"""The fake study's stages (pass them as ``stages=`` to the engine or :func:`qkov.study.reproduce`)."""

STUDY = {"stages": FAKE_STAGES}
"""``obj`` for :func:`qkov.cli.main.run_cli` / ``main``: ``qkov reproduce`` then runs the fake stages."""


def run_cli(group, args=None, prog_name="qkov"):
    """:func:`qkov.cli.main.run_cli` with the fake stages injected (``qkov reproduce`` runs them)."""
    from qkov.cli.main import run_cli as real

    return real(group, args, prog_name, obj=STUDY)
