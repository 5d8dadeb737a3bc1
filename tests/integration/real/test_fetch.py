"""The data downloader against a local HTTP server on 127.0.0.1 (never the internet):
atomic writes, resumed truncated downloads, checksum mismatches, 404, unreachable hosts, check()."""

import hashlib
import json
import socket

import pytest

from tests.httpkit import Served, serve
from validation.real.fetch import (COUNTS, SOURCES, FetchError, RemoteFile, check, download, fetch,
                                   sha256_of)

BODY = bytes(range(256)) * 40  # 10,240 bytes
SHA = hashlib.sha256(BODY).hexdigest()


@pytest.fixture
def server():
    """``(served, base URL)`` of a fresh local server (:mod:`tests.httpkit`)."""
    served = Served()
    with serve(served) as url:
        yield served, url


def test_download_is_verified_and_atomic(server, tmp_path):
    served, url = server
    served.files["/a.bin"] = BODY
    dest = tmp_path / "sub" / "a.bin"
    seen = []
    assert download(url + "/a.bin", dest, sha256=SHA, progress=lambda d, t: seen.append((d, t))) == dest
    assert dest.read_bytes() == BODY and not (tmp_path / "sub" / "a.bin.part").exists()
    assert seen[-1] == (len(BODY), len(BODY))


@pytest.mark.parametrize("server_honours_range", [True, False])
def test_truncated_download_keeps_part_and_resumes(server, tmp_path, server_honours_range):
    served, url = server
    served.files["/t.bin"] = BODY
    served.truncate_once.add("/t.bin")
    if not server_honours_range:
        served.behaviour["/t.bin"] = "norange"
    dest = tmp_path / "t.bin"
    with pytest.raises(FetchError, match=r"truncated, got 3413 of 10240 bytes; run again to resume"):
        download(url + "/t.bin", dest, sha256=SHA)
    part = tmp_path / "t.bin.part"
    assert not dest.exists() and part.stat().st_size == len(BODY) // 3
    download(url + "/t.bin", dest, sha256=SHA)
    assert dest.read_bytes() == BODY and not part.exists()
    assert served.log[-1] == ("/t.bin", f"bytes={len(BODY) // 3}-")  # the second request resumed


def test_checksum_mismatch_discards_the_file(server, tmp_path):
    served, url = server
    served.files["/bad.bin"] = BODY[:-1] + b"\x00"
    dest = tmp_path / "bad.bin"
    with pytest.raises(FetchError, match="does not match the pinned"):
        download(url + "/bad.bin", dest, sha256=SHA)
    assert not dest.exists() and not (tmp_path / "bad.bin.part").exists()


def test_404_and_unreachable_are_one_line_errors(server, tmp_path):
    served, url = server
    with pytest.raises(FetchError, match=r"/nope\.bin: HTTP 404") as e404:
        download(url + "/nope.bin", tmp_path / "x")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(FetchError, match=rf"cannot reach 127\.0\.0\.1:{port}") as eoff:
        download(f"http://127.0.0.1:{port}/x", tmp_path / "x", timeout=5)
    assert "\n" not in str(e404.value) and "\n" not in str(eoff.value)
    assert not (tmp_path / "x").exists()


def _squad(n_questions):
    qas = [{"id": str(i), "question": "q?", "answers": [{"text": "a", "answer_start": 0}]} for i in range(n_questions)]
    return json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "a b", "qas": qas}]}]}).encode()


def test_fetch_then_check_a_small_data_set(server, tmp_path):
    served, url = server
    dev = _squad(3)
    served.files["/dev.json"] = dev
    sources = {"squad": (RemoteFile(url + "/dev.json", "squad/dev-v1.1.json", hashlib.sha256(dev).hexdigest()),
                         RemoteFile(url + "/train.json", "squad/train-v1.1.json", None, required=False))}
    counts = {"squad/dev-v1.1.json": ("questions", 3)}
    got = fetch(tmp_path, ["squad"], include_optional=False, sources=sources)
    assert got == [(tmp_path / "squad" / "dev-v1.1.json", "downloaded")]
    assert fetch(tmp_path, ["squad"], include_optional=False, sources=sources)[0][1] == "kept"
    res = check(tmp_path, sources=sources, counts=counts)
    assert [(r.path, r.status) for r in res] == [("squad/dev-v1.1.json", "ok"), ("squad/train-v1.1.json", "absent")]
    # a wrong count or a corrupted file is reported, and fetch() replaces the corrupted file
    assert check(tmp_path, sources=sources, counts={"squad/dev-v1.1.json": ("questions", 4)})[0].status == "bad count"
    (tmp_path / "squad" / "dev-v1.1.json").write_bytes(dev + b" ")
    assert check(tmp_path, sources=sources, counts=counts)[0].status == "bad checksum"
    assert fetch(tmp_path, ["squad"], include_optional=False, sources=sources)[0][1] == "downloaded"
    assert check(tmp_path, sources=sources, counts=counts)[0].ok
    with pytest.raises(FetchError, match="dataset: nope: must be one of squad"):
        fetch(tmp_path, ["nope"], sources=sources)
    # the 404 of the optional train file is an error when it is asked for
    with pytest.raises(FetchError, match="HTTP 404"):
        fetch(tmp_path, ["squad"], sources=sources)


def test_pins_are_hex_sha256_and_counts_cover_every_required_file():
    for files in SOURCES.values():
        for rf in files:
            assert rf.url.startswith("https://") and rf.note
            assert rf.sha256 is None or (len(rf.sha256) == 64 and int(rf.sha256, 16) >= 0)
            assert rf.dest in COUNTS


def test_project_snapshot_passes_check_when_present():
    import os
    from pathlib import Path
    root = os.environ.get("QKOV_DATA_DIR")
    if not root or not Path(root).is_dir():
        pytest.skip("QKOV_DATA_DIR not set: no data snapshot to check")
    res = check(Path(root))
    assert all(r.ok for r in res), [r for r in res if not r.ok]
    assert sha256_of(Path(root) / "squad" / "dev-v1.1.json") == SOURCES["squad"][0].sha256
