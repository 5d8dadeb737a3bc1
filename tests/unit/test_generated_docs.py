"""Every generated block of the docs equals what its committed records produce (qkov.docsgen, `qkov docs --check`),
and the splice/check machinery itself can fail."""

from __future__ import annotations

import pytest

from qkov.docsgen import TABLES, GeneratedBlock, build, loader, regenerate, splice
from tests.paths import ROOT
from theory.errors import InputError


@pytest.mark.parametrize("block_id", sorted(TABLES))
def test_committed_block_equals_its_records(block_id):
    """The committed text between the block's markers is what `qkov docs` builds from records/ (regenerate with
    `qkov docs` after exporting new records; never edit a generated block by hand)."""
    b = TABLES[block_id]
    text = (ROOT / b.target).read_text()
    built = build(b, loader(ROOT))
    assert splice(text, b.id, built, b.target) == text, f"{b.target}: block {b.id} is stale: run `qkov docs`"


def test_every_block_names_existing_sets_and_targets():
    for b in TABLES.values():
        assert (ROOT / b.target).is_file(), b.target
        for s in b.sets:
            assert (ROOT / "records" / f"{s}.jsonl").is_file(), (b.id, s)


def test_splice_known_answers():
    text = "a\n<!-- generated:t -->\nold\nlines\n<!-- /generated:t -->\nb\n"
    assert splice(text, "t", "new\n") == "a\n<!-- generated:t -->\nnew\n<!-- /generated:t -->\nb\n"
    assert splice(splice(text, "t", "x"), "t", "x") == splice(text, "t", "x")
    for bad in ("a\n", "<!-- /generated:t -->\n<!-- generated:t -->\n",
                text + "<!-- generated:t -->\n", "x <!-- generated:t -->\n<!-- /generated:t -->\n"):
        with pytest.raises(ValueError, match="block t"):
            splice(bad, "t", "new")


def _fake_root(tmp_path, body="old"):
    (tmp_path / "docs").mkdir()
    (tmp_path / "records").mkdir()
    doc = tmp_path / "docs" / "page.md"
    doc.write_text(f"# page\n<!-- generated:n -->\n{body}\n<!-- /generated:n -->\nprose\n")
    (tmp_path / "records" / "s.jsonl").write_text(
        '{"config":{},"kind":"figure2","metrics":{"x":0.25},"provenance":{},"run":"figure2-000000000000","set":"s"}\n')
    block = GeneratedBlock("n", "docs/page.md", lambda load: f"x = {load('s')[0].metrics['x']}", ("s",))
    return doc, {"n": block}


def test_check_finds_a_stale_block_and_regenerate_fixes_it(tmp_path):
    doc, tables = _fake_root(tmp_path)
    before = doc.read_text()
    assert regenerate(tmp_path, check=True, tables=tables) == ["n"]
    assert doc.read_text() == before                                  # --check writes nothing
    assert regenerate(tmp_path, tables=tables) == ["n"]
    assert doc.read_text() == "# page\n<!-- generated:n -->\nx = 0.25\n<!-- /generated:n -->\nprose\n"
    assert regenerate(tmp_path, check=True, tables=tables) == []
    doc.write_text(doc.read_text().replace("0.25", "0.26"))          # a hand edit inside the block
    assert regenerate(tmp_path, check=True, tables=tables) == ["n"]


def test_a_missing_set_or_marker_is_one_line(tmp_path):
    doc, tables = _fake_root(tmp_path)
    (tmp_path / "records" / "s.jsonl").unlink()
    with pytest.raises(InputError, match="block n: record set missing"):
        regenerate(tmp_path, check=True, tables=tables)
    doc.write_text("no markers\n")
    (tmp_path / "records" / "s.jsonl").write_text("")
    tables = {"n": GeneratedBlock("n", "docs/page.md", lambda load: "x", ())}
    with pytest.raises(InputError, match="docs/page.md: block n"):
        regenerate(tmp_path, check=True, tables=tables)


def test_the_docs_command_checks(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import qkov.docsgen as dg
    from qkov.cli.main import cli

    doc, tables = _fake_root(tmp_path)
    monkeypatch.setattr(dg, "TABLES", tables)
    res = CliRunner().invoke(cli, ["docs", "--check", "--root", str(tmp_path)], standalone_mode=False)
    assert res.return_value == 1 and "n (run `qkov docs`)" in res.output
    res = CliRunner().invoke(cli, ["docs", "--root", str(tmp_path)], standalone_mode=False)
    assert "1 rewritten: n" in res.output
    res = CliRunner().invoke(cli, ["docs", "--check", "--root", str(tmp_path)], standalone_mode=False)
    assert res.return_value in (0, None) and "match their records" in res.output


def test_readme_findings_is_one_generated_row_per_claim_and_short_paragraphs():
    """README's "What qkov finds": the generated table (the paper's number, qkov's, the verdict, the scope and the
    reproducing command per claim) and no paragraph over 150 words around it."""
    import re

    from theory.claims import CLAIMS

    text = (ROOT / "README.md").read_text()
    section = text[text.index("## What qkov finds"):]
    section = section[:section.index("\n## ", 3)]
    block = section[section.index("<!-- generated:findings -->"):section.index("<!-- /generated:findings -->")]
    rows = [line for line in block.splitlines() if line.startswith("| **")]
    assert block.splitlines()[1].startswith("| claim | the paper | qkov | verdict | scope | reproduce")
    assert [re.match(r"\| \*\*([a-z-]+)\*\*", r).group(1) for r in rows] == list(CLAIMS)
    assert all("`qkov reproduce --quick`" in r or "docs/real-data.md" in r for r in rows)
    prose = section.replace(block, "")
    for para in re.split(r"\n\s*\n", prose):
        assert len(para.split()) <= 150, para[:80]
    for marker in ("<!-- main-command -->", "<!-- test-command -->", "<!-- docs-test:"):   # read by other tests
        assert marker in text
