"""qkov.testing from the outside: the pytest plugin's profiles, life without Hypothesis, torch against the reduced map.

The plugin is exercised in fresh pytest processes (``-p qkov.testing.pytest_plugin``, a no-op where the entry
point is installed), so what a user's run sees is what is checked.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.paths import ROOT

PLUGIN = "qkov.testing.pytest_plugin"

PROFILE_TEST = '''
import os
from hypothesis import settings
from qkov.testing import property_settings

def test_profile():
    assert settings.default.max_examples == int(os.environ["EXPECT_GLOBAL"])
    assert property_settings().max_examples == int(os.environ["EXPECT_QKOV"])
'''


def _pytest(tmp_path: Path, *args: str, env: dict[str, str] | None = None, pythonpath: str = str(ROOT)):
    # Hypothesis loads its own profile named "ci" by itself when it sees a CI environment ($CI, $GITHUB_ACTIONS,
    # ...): the child runs outside CI so that "nothing chosen" means Hypothesis's default, on a developer's machine
    # and in CI alike.
    ci_vars = set(getattr(__import__("hypothesis._settings", fromlist=["_CI_VARS"]), "_CI_VARS", {"CI": None}))
    full = {k: v for k, v in os.environ.items() if k != "QKOV_HYPOTHESIS_PROFILE" and k not in ci_vars}
    full.update(env or {}, PYTHONPATH=pythonpath)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", PLUGIN,
                           "--rootdir", str(tmp_path), *args], cwd=tmp_path, env=full, capture_output=True, text=True,
                          timeout=300)


def test_pyproject_declares_the_plugin_entry_point_and_the_extras():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["entry-points"]["pytest11"] == {PLUGIN: PLUGIN}      # named as the module: `-p` never loads it twice
    for extra in ("test", "testing"):
        assert any(d.startswith("hypothesis") for d in meta["optional-dependencies"][extra])


@pytest.mark.parametrize("args, env, expect_global, expect_qkov", [
    ((), {}, 100, 6),                                                       # nothing chosen: Hypothesis's default kept
    (("--qkov-hypothesis-profile=thorough",), {}, 300, 300),
    ((), {"QKOV_HYPOTHESIS_PROFILE": "ci"}, 6, 6),
    (("--qkov-hypothesis-profile=thorough",), {"QKOV_HYPOTHESIS_PROFILE": "ci"}, 300, 300),   # the option wins
    (("--hypothesis-profile=qkov-ci",), {}, 6, 6),                          # registered with Hypothesis as qkov-ci
    (("--qkov-hypothesis-profile=qkov-thorough",), {}, 300, 300),           # either spelling
], ids=["default", "option", "env", "option-over-env", "hypothesis-option", "prefixed"])
def test_plugin_registers_and_selects_the_profiles(tmp_path, args, env, expect_global, expect_qkov):
    (tmp_path / "test_profile.py").write_text(PROFILE_TEST)
    run = _pytest(tmp_path, *args, env={**env, "EXPECT_GLOBAL": str(expect_global), "EXPECT_QKOV": str(expect_qkov)})
    assert run.returncode == 0, run.stdout + run.stderr


PROJECT_CONFTEST = '''
from hypothesis import settings
settings.register_profile("ci", max_examples=50)
settings.register_profile("thorough", max_examples=77)
settings.load_profile("ci")
'''


@pytest.mark.parametrize("args, expect", [((), 50), (("--hypothesis-profile=ci",), 50),
                                          (("--hypothesis-profile=thorough",), 77)])
def test_a_project_keeps_its_own_ci_and_thorough_profiles(tmp_path, args, expect):
    """Issue 44: the plugin (loaded in every pytest run where qkov is installed) replaced a project's own
    Hypothesis profile named ``ci`` (a project loading ``ci`` with 50 examples ran 6). It registers ``qkov-ci`` and
    ``qkov-thorough`` only, so the project's ``ci``/``thorough`` are what the project gets, and qkov's own
    settings are still there for qkov's properties."""
    (tmp_path / "conftest.py").write_text(PROJECT_CONFTEST)
    (tmp_path / "test_profile.py").write_text(PROFILE_TEST + '''

def test_qkov_registers_no_unprefixed_profile():
    from qkov.testing import profiles
    assert settings.get_profile("qkov-ci").max_examples == 6
    assert settings.get_profile("ci").max_examples == 50 and settings.get_profile("thorough").max_examples == 77
''')
    run = _pytest(tmp_path, *args, env={"EXPECT_GLOBAL": str(expect), "EXPECT_QKOV": "6"})
    assert run.returncode == 0, run.stdout + run.stderr


def test_an_unknown_profile_is_one_usage_line(tmp_path):
    (tmp_path / "test_profile.py").write_text(PROFILE_TEST)
    run = _pytest(tmp_path, env={"QKOV_HYPOTHESIS_PROFILE": "fast"})
    assert run.returncode == 4
    assert "QKOV_HYPOTHESIS_PROFILE: 'fast': must be one of ci, thorough" in run.stderr


def test_without_hypothesis_pytest_runs_and_strategies_name_the_extra(tmp_path):
    blocker = tmp_path / "blocker" / "hypothesis"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError(\"No module named 'hypothesis'\")\n")
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    path = f"{blocker.parent}{os.pathsep}{ROOT}"
    ok = _pytest(tmp_path, "-p", "no:hypothesispytest", "test_plain.py", pythonpath=path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    refused = _pytest(tmp_path, "-p", "no:hypothesispytest", "--qkov-hypothesis-profile=ci", "test_plain.py",
                      pythonpath=path)
    assert refused.returncode == 4 and 'needs Hypothesis: pip install "qkov[test]"' in refused.stderr
    imp = subprocess.run([sys.executable, "-c", "from qkov.testing import strategies"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": path}, timeout=120)
    assert imp.returncode == 1
    assert imp.stderr.strip().splitlines()[-1] == ('ImportError: qkov.testing.strategies needs Hypothesis, which is not '
                                                   'installed: pip install "qkov[test]"')
    core = subprocess.run([sys.executable, "-c", "from qkov.testing import Case, assert_law_within_remainder"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, timeout=120)
    assert core.returncode == 0, core.stderr             # the assertions and helpers need no Hypothesis


def test_reduced_map_matches_torch_and_another_optimizers_map_does_not():
    """Adam's exact reduced map is torch's full-matrix Adam (:data:`qkov.testing.assertions.MAP_RTOL`); Adam without
    bias correction (beta2 = 0) is another map, and the assertion says so naming the optimizer and the step."""
    from qkov.testing import Case, assert_matches_reduced_map, train_full
    from simulation.optimizer_maps import OptimizerSpec

    case = Case("CACO", 3, 2, 2.0, 0.5, 0.5)
    run = train_full(case, OptimizerSpec("adam", 0.9, 0.999, 1e-8), dt=0.01, steps=8, on_set=True)
    assert_matches_reduced_map(run, min_steps=9)      # steps 0..8 all on the set, on every machine (issue 41)
    wrong = dataclasses.replace(run, spec=OptimizerSpec("adam", 0.9, 0.0, 1e-8))
    with pytest.raises(AssertionError, match="optimizer=adam betas=") as err:
        assert_matches_reduced_map(wrong)
    assert "step=" in str(err.value) and "K=3 M=2 ratio=2" in str(err.value)


def test_the_entry_point_loads_the_plugin_and_p_does_not_load_it_twice(tmp_path):
    """An installed distribution's ``pytest11`` entry point (a dist-info on the path, as pip writes it) loads the
    plugin by itself, and ``-p qkov.testing.pytest_plugin`` (pyproject's addopts) next to it is a no-op."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    dist = tmp_path / "site" / "qkov_probe-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: qkov-probe\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in meta.items()))
    (tmp_path / "test_profile.py").write_text(PROFILE_TEST)
    path = f"{dist.parent}{os.pathsep}{ROOT}"
    env = {"EXPECT_GLOBAL": "300", "EXPECT_QKOV": "300"}
    # Hypothesis loads its own profile named "ci" by itself when it sees a CI environment ($CI, $GITHUB_ACTIONS,
    # ...): the child runs outside CI so that "nothing chosen" means Hypothesis's default, on a developer's machine
    # and in CI alike.
    ci_vars = set(getattr(__import__("hypothesis._settings", fromlist=["_CI_VARS"]), "_CI_VARS", {"CI": None}))
    full = {k: v for k, v in os.environ.items() if k != "QKOV_HYPOTHESIS_PROFILE" and k not in ci_vars}
    full.update(env, PYTHONPATH=path)
    for extra in ((), ("-p", PLUGIN)):
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "--rootdir",
                              str(tmp_path), "--qkov-hypothesis-profile=thorough"], cwd=tmp_path, env=full,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, (extra, run.stdout + run.stderr)
