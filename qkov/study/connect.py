"""Connecting to an existing Dask scheduler (``qkov reproduce --scheduler``) fails in seconds, in one line.

:func:`check_scheduler` runs before anything is written, each step bounded by
:data:`SCHEDULER_TIMEOUT_S` (10 s):

1. the host name resolves (``getaddrinfo``);
2. a TCP connection opens (refused -> nothing listens there; no answer within the timeout -> unreachable);
3. the peer speaks Dask: the Dask comm handshake completes and an ``identity`` request is answered by a
   ``Scheduler`` (a live port that is not Dask -- an HTTP server, a silent listener, a Dask worker -- is
   told apart here, instead of hanging).

Before any of these, :func:`parse_address` checks the text: a malformed address (``not an address``,
``tcp://host:notaport``, ``tcp://[::1:8786``) is told apart from an unreachable one. Each failure is a
:class:`SchedulerError`, printed by the CLI as ``qkov: error: scheduler: <addr>: <what went wrong>`` with exit
status 2. Importing this module imports no Dask, asyncio or numpy: the CLI parses ``--scheduler`` with it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Any

from theory.errors import InputError

SCHEDULER_TIMEOUT_S = 10.0
"""Seconds allowed for each step of reaching the scheduler (resolve, connect, handshake, identity)."""


class SchedulerError(InputError):
    """The ``--scheduler`` address cannot be used (one line: address and reason)."""


SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
"""Transports a ``--scheduler`` address may name (Dask's; ``tcp`` when none is given)."""
ADDRESS_ALLOWED = ("malformed: must be a Dask scheduler address [SCHEME://]HOST:PORT (SCHEME one of "
                   f"{', '.join(SCHEMES)}; HOST a host name, an IPv4 address or an IPv6 address in brackets; "
                   "PORT 1-65535), e.g. tcp://127.0.0.1:8786")
"""What a malformed address is told (one line, before any connection is tried)."""

_ADDRESS = re.compile(r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[^\[\]]*\]|[^:/\[\]\s]+)"
                      r":(?P<port>[0-9]{1,5})")
_HOSTNAME = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9_-]{1,63}(?<!-))*\.?")


def parse_address(address: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a scheduler address (:data:`ADDRESS_ALLOWED`), checked without any system call
    or network access; a :class:`SchedulerError` ``scheduler: <address>: malformed: ...`` for anything else
    (``not an address``, ``tcp://host:notaport``, ``tcp://[::1:8786``, port 0 or over 65535). Every command
    parses ``--scheduler`` with this; :func:`check_scheduler` then says whether a scheduler answers there."""
    m = _ADDRESS.fullmatch(address) if isinstance(address, str) and len(address) <= 300 else None
    if m is None:
        raise _fail(str(address)[:300], ADDRESS_ALLOWED)
    scheme, host, port = (m["scheme"] or "tcp").lower(), m["host"], int(m["port"])
    ok = scheme in SCHEMES and 1 <= port <= 65535
    if ok and host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            ok = False
        host = host[1:-1]
    elif ok:
        ok = bool(_HOSTNAME.fullmatch(host)) and ":" not in host
    if not ok:
        raise _fail(address, ADDRESS_ALLOWED)
    return scheme, host, port


def _host_port(address: str) -> tuple[str, str, int]:
    return parse_address(address)


def _fail(address: str, why: str) -> SchedulerError:
    return SchedulerError(f"scheduler: {address}: {why}")


async def _identity(address: str, timeout: float) -> dict[str, Any]:
    import asyncio

    from distributed.comm import connect

    comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
    try:
        await asyncio.wait_for(comm.write({"op": "identity", "reply": True}), timeout)
        return await asyncio.wait_for(comm.read(), timeout)
    finally:
        comm.abort()


def check_scheduler(address: str, timeout: float | None = None) -> None:
    """Raise :class:`SchedulerError` unless a Dask scheduler answers at ``address`` within the timeout (a malformed
    address: :func:`parse_address`'s line, before any connection is tried)."""
    import asyncio
    import concurrent.futures

    timeout = SCHEDULER_TIMEOUT_S if timeout is None else timeout
    scheme, host, port = _host_port(address)
    if scheme not in ("tcp", "tls"):
        return  # other transports: left to the Dask client's own timeout
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise _fail(address, f"host {host!r} does not resolve ({exc.strerror})") from None
    try:
        sockaddr = infos[0][4]  # (host, port[, flow, scope]) of the first address found
        with socket.create_connection((str(sockaddr[0]), int(sockaddr[1])), timeout=timeout):
            pass
    except ConnectionRefusedError:
        raise _fail(address, "connection refused: no scheduler listens on that port") from None
    except (socket.timeout, TimeoutError):
        raise _fail(address, f"no answer within {timeout:g} s: host unreachable or port filtered") from None
    except OSError as exc:
        raise _fail(address, f"cannot connect ({exc.strerror or exc})") from None
    if scheme != "tcp":
        return  # TLS needs the security settings the client gets; its handshake is checked by Client
    url = f"tcp://{host}:{port}" if ":" not in host else f"tcp://[{host}]:{port}"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # own event loop: callers may be inside one
        fut = pool.submit(asyncio.run, _identity(url, timeout))
        try:
            reply = fut.result(timeout=3 * timeout + 5)
        except (asyncio.TimeoutError, TimeoutError, concurrent.futures.TimeoutError):
            raise _fail(address, f"a port is open but no Dask handshake came within {timeout:g} s: "
                                 "not a Dask scheduler") from None
        except Exception as exc:  # noqa: BLE001 - any protocol failure means "not Dask"
            raise _fail(address, f"not a Dask scheduler: the Dask handshake failed ({type(exc).__name__})") from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise _fail(address, f"answers the Dask protocol but is a {kind or 'non-scheduler'}, not a scheduler")


def connect_client(address: str, timeout: float | None = None):
    """A ``distributed.Client`` on ``address`` after :func:`check_scheduler`; failures are :class:`SchedulerError`."""
    from distributed import Client

    timeout = SCHEDULER_TIMEOUT_S if timeout is None else timeout
    check_scheduler(address, timeout)
    try:
        return Client(address, timeout=f"{timeout:g}s")
    except (OSError, TimeoutError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _fail(address, f"the Dask client could not connect within {timeout:g} s ({why[:120]})") from None


__all__ = ["SCHEDULER_TIMEOUT_S", "SCHEMES", "ADDRESS_ALLOWED", "SchedulerError", "parse_address", "check_scheduler",
           "connect_client"]
