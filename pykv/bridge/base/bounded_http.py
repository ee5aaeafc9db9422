"""One HTTP GET within bounds: a deadline shared by every request of one reading, a cap on the answer's size, and
redirects followed only on the origin the user gave (same scheme, host and port).

A server that drips a byte every few seconds never holds the reader past its deadline: a watchdog shuts the socket
down when the deadline passes, whatever call is blocked on it (connect, headers, body). Every failure is one
BridgeInputError; nothing else (IncompleteRead, InvalidURL, OverflowError, RecursionError) escapes.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass

from pykv.bridge.base.errors import BridgeInputError

MAX_REDIRECTS = 3
CHUNK_BYTES = 64 * 1024
_REDIRECTS = (301, 302, 303, 307, 308)


@dataclass
class Deadline:
    """The monotonic time by which a whole reading (every request of it) must be done."""

    seconds: float
    end: float = 0.0

    def __post_init__(self) -> None:
        self.end = time.monotonic() + self.seconds

    def left(self) -> float:
        return self.end - time.monotonic()


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """The origin of an http(s) URL; BridgeInputError for anything else (no host, a port out of range)."""
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:  # "Port out of range 0-65535", a bad IPv6 literal
            raise BridgeInputError(f"{url[:200]!r} is not a usable URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BridgeInputError(f"{url[:200]!r} is not an http(s) URL: give it like http://host:9090")
        return cls(parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80))


def get_json(
    url: str, origin: Origin, deadline: Deadline, max_bytes: int, timeout_s: float = 10.0
) -> tuple[int, object]:
    """(HTTP status, the answer's JSON) of a GET of ``url``; BridgeInputError (one line) for any failure."""
    status, body = get(url, origin, deadline, max_bytes, timeout_s)
    try:
        return status, json.loads(body)
    except RecursionError:
        raise BridgeInputError("the answer is JSON nested too deeply to be Prometheus's") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise BridgeInputError(f"the answer is not JSON ({str(exc)[:80]})") from None


def get(url: str, origin: Origin, deadline: Deadline, max_bytes: int, timeout_s: float = 10.0) -> tuple[int, bytes]:
    """(HTTP status, body) of a GET of ``url``, following at most MAX_REDIRECTS redirects on ``origin``."""
    for _ in range(MAX_REDIRECTS + 1):
        try:
            status, location, body = _get_once(url, origin, deadline, max_bytes, timeout_s)
        except BridgeInputError:
            raise
        except (OSError, http.client.HTTPException, ValueError, OverflowError, UnicodeError) as exc:
            if deadline.left() <= 0:
                raise BridgeInputError(f"no complete answer within the deadline of {deadline.seconds:g} s") from None
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise BridgeInputError(f"no answer ({type(exc).__name__}: {reason[:120]})") from None
        if location is None:
            return status, body
        target = urllib.parse.urljoin(url, location)
        try:
            same = Origin.of(target) == origin
        except BridgeInputError:
            same = False
        if not same:
            raise BridgeInputError(
                f"it redirected to another origin ({target[:120]!r}); a redirect is followed only on "
                f"{origin.scheme}://{origin.host}:{origin.port}: give the final URL"
            )
        url = target
    raise BridgeInputError(f"more than {MAX_REDIRECTS} redirects")


def _get_once(
    url: str, origin: Origin, deadline: Deadline, max_bytes: int, timeout_s: float
) -> tuple[int, str | None, bytes]:
    left = deadline.left()
    if left <= 0:
        raise BridgeInputError(f"no complete answer within the deadline of {deadline.seconds:g} s")
    parts = urllib.parse.urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = http.client.HTTPSConnection if origin.scheme == "https" else http.client.HTTPConnection
    conn = kind(origin.host, origin.port, timeout=min(left, timeout_s))
    watchdog = threading.Timer(left, _shut, (conn,))
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.request("GET", target, headers={"Accept": "application/json", "Accept-Encoding": "identity"})
        response = conn.getresponse()
        if response.status in _REDIRECTS:
            return response.status, response.getheader("Location") or "", b""
        declared = response.getheader("Content-Length")
        if declared and declared.strip().isdigit() and int(declared) > max_bytes:
            raise BridgeInputError(f"its answer is {int(declared):,} bytes, over the cap of {max_bytes:,}")
        chunks, size = [], 0
        while True:
            chunk = response.read1(CHUNK_BYTES)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise BridgeInputError(f"its answer is over the cap of {max_bytes:,} bytes")
            if deadline.left() <= 0:
                raise BridgeInputError(f"no complete answer within the deadline of {deadline.seconds:g} s")
            chunks.append(chunk)
        if deadline.left() <= 0:  # the watchdog shut the socket: what came is cut short
            raise BridgeInputError(f"no complete answer within the deadline of {deadline.seconds:g} s")
        if response.length:  # read1 ends quietly where the connection did: fewer bytes than Content-Length said
            raise BridgeInputError(f"its answer was cut short ({size:,} bytes came, {response.length:,} more were due)")
        return response.status, None, b"".join(chunks)
    finally:
        watchdog.cancel()
        conn.close()


def _shut(conn: http.client.HTTPConnection) -> None:
    """The deadline passed: wake whatever call is blocked on the socket (it then fails, and says the deadline)."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
