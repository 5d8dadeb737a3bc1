"""A local HTTP server on 127.0.0.1 for the downloader's tests (never the internet).

``Served`` maps a URL path to a body and a behaviour: ``ok`` (honours ``Range``), ``norange`` (ignores
``Range``: always the whole body with 200), ``drip`` (one byte every ``drip_s`` seconds), ``nolength`` (no
``Content-Length``: the body ends when the connection closes). A path in ``truncate_once`` sends a third of
its body once and drops the connection (later requests are served normally).
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Served:
    files: dict[str, bytes] = field(default_factory=dict)
    behaviour: dict[str, str] = field(default_factory=dict)
    drip_s: float = 0.3
    truncate_once: set[str] = field(default_factory=set)
    log: list[tuple[str, str | None]] = field(default_factory=list)


def _handler(served: Served):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args):
            pass

        def do_GET(self):
            served.log.append((self.path, self.headers.get("Range")))
            body = served.files.get(self.path)
            if body is None:
                self.send_error(404, "Not Found")
                return
            how = served.behaviour.get(self.path, "ok")
            start = 0
            rng = self.headers.get("Range")
            if rng and how == "ok":
                start = int(rng.split("=")[1].split("-")[0])
                if start >= len(body):
                    self.send_response(416)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            chunk = body[start:]
            if how != "nolength":
                self.send_header("Content-Length", str(len(chunk)))
            self.end_headers()
            if self.path in served.truncate_once:
                served.truncate_once.discard(self.path)
                self.wfile.write(chunk[: len(chunk) // 3])  # then drop the connection
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            with contextlib.suppress(OSError):
                if how == "drip":
                    for i in range(len(chunk)):
                        self.wfile.write(chunk[i:i + 1])
                        self.wfile.flush()
                        time.sleep(served.drip_s)
                else:
                    self.wfile.write(chunk)

    return Handler


@contextlib.contextmanager
def serve(served: Served):
    """Serve ``served`` on 127.0.0.1; yields the base URL ``http://127.0.0.1:PORT``."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
