"""``qkov data fetch`` / ``qkov data check`` through click's CliRunner, against 127.0.0.1 only."""

import hashlib
import http.server
import threading

import pytest
from click.testing import CliRunner

import validation.real.fetch as F
from qkov.cli.data import data

BODY = b"version\tcontent\n" * 50


class _H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/f.txt":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


@pytest.fixture
def local_sources(monkeypatch):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _H)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    sources = {"sva": (F.RemoteFile(url + "/f.txt", "sva/f.txt", hashlib.sha256(BODY).hexdigest(), "fixture"),),
               "squad": (F.RemoteFile(url + "/missing.json", "squad/x.json", None, "fixture"),)}
    # the command passes its module's tables to fetch()/check(): point them at the fixture server
    monkeypatch.setattr("qkov.cli.data.SOURCES", sources)
    monkeypatch.setattr("qkov.cli.data.COUNTS", {"sva/f.txt": ("items", 49)})
    yield url
    httpd.shutdown()
    httpd.server_close()


def test_fetch_then_check(local_sources, tmp_path):
    r = CliRunner().invoke(data, ["fetch", "--dataset", "sva", "--data-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "downloaded" in r.output and (tmp_path / "sva" / "f.txt").read_bytes() == BODY
    r = CliRunner().invoke(data, ["check", "--dataset", "sva", "--data-dir", str(tmp_path)])
    assert r.exit_code == 0 and r.output.startswith("ok"), r.output


def test_errors_are_one_line_exit_2(local_sources, tmp_path, monkeypatch):
    monkeypatch.delenv("QKOV_DATA_DIR", raising=False)
    runner = CliRunner()
    cases = [
        (["fetch", "--dataset", "imagenet", "--data-dir", str(tmp_path)], "qkov: error: dataset: imagenet: must be one of sva, squad"),
        (["fetch"], "qkov: error: data-dir: (none): give a directory or set QKOV_DATA_DIR"),
        (["fetch", "--dataset", "squad", "--data-dir", str(tmp_path)], "missing.json: HTTP 404"),
        (["check", "--data-dir", str(tmp_path)], "entries failed the check"),
        (["check", "--data-dir", str(tmp_path / "nowhere")], "no such directory"),
    ]
    for args, msg in cases:
        r = runner.invoke(data, args)
        assert r.exit_code == 2, (args, r.output)
        err = r.stderr.strip()
        assert err.startswith("qkov: error: ") and msg in err and "\n" not in err, (args, err)
