"""The CLI's top level, and CI running exactly the README's test command."""

import re
import subprocess
import sys
from pathlib import Path

from qkov.cli.main import cli, run_cli

from tests.paths import ROOT


def _fenced_after(marker: str) -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(re.escape(marker) + r"\s*```bash\n(.*?)\n```", text, re.S)
    assert m, f"README has no bash block after {marker}"
    return m.group(1).strip()


def test_version_and_help(capsys):
    assert run_cli(cli, ["--version"]) == 0
    assert "qkov" in capsys.readouterr().out
    assert run_cli(cli, ["--help"]) == 0
    assert "reproduce" in capsys.readouterr().out


def test_ci_extracts_readme_test_command():
    cmd = _fenced_after("<!-- test-command -->")
    assert "pytest" in cmd
    script = (ROOT / ".ci" / "run").read_text()
    extracted = subprocess.run(
        ["awk", r'/<!-- test-command -->/{f=1; next} f && /^```bash/{g=1; next} g && /^```/{exit} g{print}',
         str(ROOT / "README.md")], capture_output=True, text=True, check=True).stdout.strip()
    assert extracted == cmd
    assert "README.md" in script and "exit 1" in script


def test_main_command_is_reproduce_quick():
    assert _fenced_after("<!-- main-command -->").endswith("qkov reproduce --quick")


def test_python_m_qkov_is_the_cli_and_science_packages_have_none():
    out = subprocess.run([sys.executable, "-m", "qkov", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout and "reproduce" in out.stdout
    for pkg in ("theory", "simulation", "validation"):
        assert not (ROOT / pkg / "__main__.py").exists(), f"{pkg} is a library: no command line of its own"


def test_cli_reference_doc_is_generated_from_the_cli():
    from qkov.cli.reference import render_cli_reference

    assert (ROOT / "docs" / "cli.md").read_text() == render_cli_reference(), \
        "docs/cli.md is stale: run `python -m qkov.cli.reference > docs/cli.md`"


def test_run_cli_keeps_ctx_exit_codes():
    import click

    from qkov.cli.support import run_cli

    @click.command()
    @click.pass_context
    def failing(ctx):
        ctx.exit(3)

    group = click.Group(commands={"failing": failing})
    assert run_cli(group, ["failing"]) == 3


def test_every_command_accepts_dash_h_wherever_invoked():
    from qkov.cli.reference import _walk

    for path, cmd, ctx in _walk(cli, ["qkov"], None):
        assert cmd.context_settings.get("help_option_names") == ["-h", "--help"], path
