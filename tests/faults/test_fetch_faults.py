"""Faults of issue 25 in `qkov data fetch`: links, filesystem errors, slow drip, junk, size cap, mirror.

Every server is on 127.0.0.1 (``httpkit``); the data sets it serves are small fake files made here, whose
SHA-256 and record counts replace the official pins for the test (the pins are checked all the same).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re

import pytest

from tests.httpkit import Served, serve
from qkov.cli.main import cli
from qkov.cli.main import run_cli as _run_cli
from validation.real import fetch as F
from validation.real.fetch import FetchError, download


def run_cli(group, args: list[str]) -> int:
    """The exit status of ``qkov ARGS`` run in this process (``data`` exits through ``SystemExit``)."""
    try:
        return _run_cli(group, args)
    except SystemExit as exc:
        return int(exc.code or 0)


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("qkov: error: ") and "Traceback" not in err, err
    return lines[0]


def _fake_datasets() -> dict[str, bytes]:
    """Small files in the official formats, by their place in the data directory."""
    squad = {"data": [{"title": "T", "paragraphs": [{"context": "The cat sat.", "qas": [
        {"id": "q1", "question": "Who sat?", "answers": [{"text": "cat", "answer_start": 4}]}]}]}]}
    posts = {f"p{i}": {"post_tokens": ["a", "b"], "annotators": [{"label": "normal"}] * 3, "rationales": []}
             for i in range(3)}
    div = {"train": ["p0"], "val": ["p1"], "test": ["p2"]}
    tsv = "sentence\tsubj_idx\tverb_idx\tverb_pos\n" + "".join(f"the dog {i} runs\t1\t3\tVBZ\n" for i in range(4))
    return {"squad/dev-v1.1.json": json.dumps(squad).encode(), "squad/train-v1.1.json": json.dumps(squad).encode(),
            "hatexplain/Data/dataset.json": json.dumps(posts).encode(),
            "hatexplain/Data/post_id_divisions.json": json.dumps(div).encode(),
            "sva/linzen_edinburgh_nlu/wiki-dev.txt": tsv.encode(),
            "sva/linzen_edinburgh_nlu/wiki-test.txt": tsv.encode()}


@pytest.fixture
def fakes(monkeypatch):
    """Pin the fake files (SHA-256 and counts) in place of the official ones, for the CLI and the API."""
    files = _fake_datasets()
    counts = {"squad/dev-v1.1.json": ("questions", 1), "squad/train-v1.1.json": ("questions", 1),
              "hatexplain/Data/post_id_divisions.json": ("ids train/val/test", 3),
              "hatexplain/Data/dataset.json": ("posts", 3),
              "sva/linzen_edinburgh_nlu/wiki-dev.txt": ("items", 4), "sva/linzen_edinburgh_nlu/wiki-test.txt": ("items", 4)}
    sources = {name: tuple(dataclasses.replace(rf, url="http://192.0.2.1/unreachable/" + rf.dest,
                                               sha256=None if rf.sha256 is None else hashlib.sha256(files[rf.dest]).hexdigest())
                           for rf in rfs) for name, rfs in F.SOURCES.items()}
    for target in ("qkov.cli.data", "validation.real.fetch"):
        monkeypatch.setattr(f"{target}.SOURCES", sources)
        monkeypatch.setattr(f"{target}.COUNTS", counts)
    monkeypatch.delenv(F.MIRROR_ENV, raising=False)
    return Served(files={"/mirror/" + k: v for k, v in files.items()})


def test_mirror_fetches_all_three_data_sets_from_a_local_server(fakes, tmp_path, capsys, monkeypatch):
    """`qkov data fetch --mirror http://127.0.0.1:PORT/...` (and $QKOV_DATA_MIRROR) fetch every file, with
    its pin checked, from <mirror>/<path>; `qkov data check` then passes. Before: no mirror option."""
    with serve(fakes) as base:
        d = tmp_path / "data"
        rc = run_cli(cli, ["data", "fetch", "--mirror", base + "/mirror/", "--data-dir", str(d)])
        cap = capsys.readouterr()
        assert rc == 0, cap.err
        assert cap.out.count("downloaded") == 6 and {p for p, _ in fakes.log} == set(fakes.files)
        for rel, body in _fake_datasets().items():
            assert (d / rel).read_bytes() == body
        assert run_cli(cli, ["data", "check", "--data-dir", str(d)]) == 0, capsys.readouterr()
        d2 = tmp_path / "data2"
        monkeypatch.setenv(F.MIRROR_ENV, base + "/mirror")
        assert run_cli(cli, ["data", "fetch", "--data-dir", str(d2), "--dataset", "sva"]) == 0
        assert capsys.readouterr().out.count("downloaded") == 2
        assert run_cli(cli, ["data", "fetch", "--data-dir", str(d2), "--dataset", "sva"]) == 0
        assert capsys.readouterr().out.count("kept") == 2


@pytest.mark.parametrize("mirror", ["file:///etc/", "ftp://x/", "http://", "http://h/\nx", "127.0.0.1:8000"])
def test_bad_mirror_url_is_one_line(fakes, tmp_path, capsys, mirror):
    rc = run_cli(cli, ["data", "fetch", "--mirror", mirror, "--data-dir", str(tmp_path / "d")])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 2 and line.startswith("qkov: error: mirror: ") and "http:// or https://" in line
    assert not (tmp_path / "d").exists()


def test_slow_drip_server_is_refused_by_the_overall_deadline(fakes, tmp_path, capsys):
    """Before: a server sending one byte every 10 s hung fetch forever (the timeout was per read)."""
    fakes.behaviour["/mirror/sva/linzen_edinburgh_nlu/wiki-dev.txt"] = "drip"
    body = fakes.files["/mirror/sva/linzen_edinburgh_nlu/wiki-dev.txt"]
    with serve(fakes) as base:
        rc = run_cli(cli, ["data", "fetch", "--mirror", base + "/mirror", "--dataset", "sva", "--deadline", "1.5",
                           "--data-dir", str(tmp_path / "d")])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 2 and "too slow" in line and "wiki-dev.txt" in line
    # stopped mid-drip by the deadline (the drip of the whole body takes len(body) * 0.3 s, ~40 s): some bytes
    # may have come, not all of them; without the overall deadline every read succeeds in time and all of them come
    done = int(re.search(r"too slow, (\d+) bytes when the deadline passed", line).group(1))
    assert done < len(body), (done, len(body))


def test_junk_unpinned_file_is_refused_and_discarded(fakes, tmp_path, capsys):
    """Before: junk served as the unpinned HateXplain dataset.json was kept ("kept" on every later fetch)."""
    good = fakes.files["/mirror/hatexplain/Data/dataset.json"]
    fakes.files["/mirror/hatexplain/Data/dataset.json"] = os.urandom(50_000)
    d = tmp_path / "d"
    with serve(fakes) as base:
        args = ["data", "fetch", "--mirror", base + "/mirror", "--dataset", "hatexplain", "--data-dir", str(d)]
        rc = run_cli(cli, args)
        line = _one_error_line(capsys.readouterr().err)
        assert rc == 2 and "dataset.json" in line and "file discarded" in line
        assert not (d / "hatexplain/Data/dataset.json").exists()
        assert not (d / "hatexplain/Data/dataset.json.part").exists()
        (d / "hatexplain/Data/dataset.json").write_text(json.dumps([1, 2, 3]))  # junk already in place
        fakes.files["/mirror/hatexplain/Data/dataset.json"] = good
        assert run_cli(cli, args) == 0
        out = capsys.readouterr().out
        assert "downloaded hatexplain" not in out  # (paths are printed whole)
        assert any(x.startswith("downloaded") and x.endswith("dataset.json") for x in out.splitlines()), out
        assert (d / "hatexplain/Data/dataset.json").read_bytes() == good


@pytest.mark.parametrize("how", ["ok", "nolength"], ids=["content-length", "no-content-length"])
def test_body_over_the_size_cap_is_refused(tmp_path, how):
    """Before: no size cap (40 MiB of junk accepted). A Content-Length over the cap is refused before the
    body; a body without one that grows past it is discarded."""
    served = Served(files={"/big": b"x" * 5000}, behaviour={"/big": how})
    with serve(served) as base:
        with pytest.raises(FetchError, match="cap of 1000 bytes") as exc:
            download(base + "/big", tmp_path / "big", max_bytes=1000)
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "big").exists() and not (tmp_path / "big.part").exists()


def test_size_cap_via_cli_is_one_line(fakes, tmp_path, capsys, monkeypatch):
    sources = {k: tuple(dataclasses.replace(rf, max_bytes=20) for rf in v) for k, v in F.SOURCES.items()}
    monkeypatch.setattr("qkov.cli.data.SOURCES", sources)
    with serve(fakes) as base:
        rc = run_cli(cli, ["data", "fetch", "--mirror", base + "/mirror", "--dataset", "sva",
                           "--data-dir", str(tmp_path / "d")])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 2 and "over the cap of 20 bytes" in line


def test_symlinked_part_file_is_refused_and_its_target_untouched(tmp_path):
    """Before: a `.part` linked elsewhere was overwritten with the download (appended to, with Range)."""
    served = Served(files={"/f": b"payload" * 100})
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    d = tmp_path / "d"
    d.mkdir()
    (d / "f.part").symlink_to(victim)
    with serve(served) as base:
        with pytest.raises(FetchError, match="a symbolic link") as exc:
            download(base + "/f", d / "f")
    assert "remove" in str(exc.value) and victim.read_text() == "precious" and not (d / "f").exists()
    (d / "f.part").unlink()
    (d / "f").symlink_to(victim)                      # the destination itself, too
    with serve(served) as base:
        with pytest.raises(FetchError, match="a symbolic link"):
            download(base + "/f", d / "f")
    assert victim.read_text() == "precious"


def test_data_dir_under_a_file_is_one_line(fakes, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    with serve(fakes) as base:
        for d in (tmp_path / "afile", tmp_path / "afile" / "sub"):
            rc = run_cli(cli, ["data", "fetch", "--mirror", base + "/mirror", "--dataset", "sva",
                               "--data-dir", str(d)])
            line = _one_error_line(capsys.readouterr().err)
            assert rc == 2 and "afile" in line


def test_destination_that_is_a_directory_is_one_line(fakes, tmp_path, capsys):
    d = tmp_path / "d"
    (d / "sva/linzen_edinburgh_nlu/wiki-dev.txt").mkdir(parents=True)
    with serve(fakes) as base:
        rc = run_cli(cli, ["data", "fetch", "--mirror", base + "/mirror", "--dataset", "sva", "--data-dir", str(d)])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 2 and "wiki-dev.txt" in line and "is a directory" in line


@pytest.mark.parametrize("err", [30, 13, 28], ids=["read-only", "permission", "disk-full"])
def test_unwritable_data_dir_is_one_line(fakes, tmp_path, capsys, monkeypatch, err):
    """A read-only or unwritable directory (simulated: this suite may run as root, which ignores modes)."""
    real_replace = os.replace

    def refuse(src, dst, *a, **k):
        if str(dst).startswith(str(tmp_path)):
            raise OSError(err, os.strerror(err))
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(F.os, "replace", refuse)
    with serve(fakes) as base:
        rc = run_cli(cli, ["data", "fetch", "--mirror", base + "/mirror", "--dataset", "sva",
                           "--data-dir", str(tmp_path / "d")])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 2 and "cannot write" in line and os.strerror(err) in line
