"""The CLI reference (docs/cli.md), generated from the click commands themselves.

``python -m qkov.cli.reference > docs/cli.md`` regenerates it; a test fails when the file
and the CLI disagree.
"""

from __future__ import annotations

import click

from qkov.cli.main import cli


def _walk(cmd: click.Command, path: list[str], ctx: click.Context | None):
    sub_ctx = cmd.make_context(path[-1], [], parent=ctx, resilient_parsing=True, terminal_width=100,
                               max_content_width=100)
    yield path, cmd, sub_ctx
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(sub_ctx):
            sub = cmd.get_command(sub_ctx, name)
            if sub is not None:
                yield from _walk(sub, path + [name], sub_ctx)


def render_cli_reference() -> str:
    """Markdown with each command's usage, help and options, in CLI order."""
    out = ["# CLI reference", "", "Generated from the CLI by `python -m qkov.cli.reference`; do not edit.", ""]
    for path, cmd, ctx in _walk(cli, ["qkov"], None):
        out += [f"## `{' '.join(path)}`", "", "```text", cmd.get_help(ctx).rstrip(), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    print(render_cli_reference(), end="")
