"""The app's guard on its HTTP server's connections: what ``streamlit run app.py`` leaves open on a shared server.

Streamlit serves an ``st.App`` with uvicorn (h11) and passes it no connection settings. Out of the box, uvicorn
holds a connection that sends a request line and stops for ever (its keep-alive timer runs only between
requests), takes as many as the open-file limit allows, and then asyncio logs a traceback for every refused
accept: 1,100 such connections locked every visitor out of a server with 1,024 open files and wrote 88 MB of
tracebacks a minute. It also trusts ``X-Forwarded-For`` from 127.0.0.1, so through a same-host proxy or tunnel
that passes the header on, a visitor's address is whatever the visitor wrote.

``install()`` runs while uvicorn imports app.py (its ``Config.load`` is on the stack), before it listens:

    every connection     --connection_made-->  over MAX_CONNECTIONS? close the oldest one still waiting for its
                                               request's headers, else refuse this one
    a request's headers  --HEADER_TIMEOUT_S--> not all in: the connection is closed (408 unsent: nothing to parse)
    X-Forwarded-For      trusted only from the proxies the host names in FORWARDED_ALLOW_IPS (uvicorn's variable)
    the error log        one record per kind per LOG_WINDOW_S at most, then how many were dropped

A reverse proxy in front still needs its own timeouts and per-client limits (README, docs/teach/workshop.md): the app
sees one address, the proxy's, for every visitor.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import sys
import time
from collections import OrderedDict
from typing import Any

HEADER_TIMEOUT_S = 10.0  # a request's line and headers must arrive within this (PYKV_HEADER_TIMEOUT_S)
FD_RESERVE = 128  # open files kept for the process itself (the model, logs, uploads, the class store)
MAX_CONNECTIONS_CEILING = 4096  # at most this many open connections, whatever the open-file limit
LOG_WINDOW_S, LOG_PER_WINDOW = 60.0, 5  # records of one kind (logger + message) let through per window
HEADER_TIMEOUT_ENV, MAX_CONNECTIONS_ENV = "PYKV_HEADER_TIMEOUT_S", "PYKV_MAX_CONNECTIONS"
_GUARDED_LOGGERS = ("asyncio", "uvicorn.error", "uvicorn", "streamlit")


def raise_open_file_limit() -> int:
    """The soft open-file limit raised to the hard one (a process may do so itself); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return int(soft if soft != resource.RLIM_INFINITY else 65536)


def connection_cap(open_files: int, environ: Any = os.environ) -> int:
    """How many connections the server keeps open at once: the open-file limit less FD_RESERVE, at most
    MAX_CONNECTIONS_CEILING, lower if the host says so (PYKV_MAX_CONNECTIONS); at least 16."""
    cap = min(MAX_CONNECTIONS_CEILING, open_files - FD_RESERVE)
    raw = environ.get(MAX_CONNECTIONS_ENV)
    if raw:
        try:
            cap = min(cap, int(raw))
        except ValueError:
            pass
    return max(16, cap)


def header_timeout(environ: Any = os.environ) -> float:
    try:
        value = float(environ.get(HEADER_TIMEOUT_ENV) or HEADER_TIMEOUT_S)
    except ValueError:
        return HEADER_TIMEOUT_S
    return min(max(value, 1.0), 300.0)


class RateLimitedLog(logging.Filter):
    """At most ``per_window`` records of one kind (logger and message template) every ``window_s``; the first
    record let through after a window that dropped some says how many."""

    def __init__(self, window_s: float = LOG_WINDOW_S, per_window: int = LOG_PER_WINDOW, clock=time.monotonic):
        super().__init__()
        self.window_s, self.per_window, self._clock = window_s, per_window, clock
        self._seen: dict[tuple[str, str], list[float]] = {}  # kind -> [window start, count, dropped]

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        kind = (record.name, str(record.msg)[:200])
        now = self._clock()
        entry = self._seen.get(kind)
        if entry is None or now - entry[0] >= self.window_s:
            dropped = 0 if entry is None else int(entry[2])
            if len(self._seen) >= 1000:
                self._seen.clear()
            self._seen[kind] = [now, 1, 0]
            if dropped:
                record.msg = f"{record.msg} [{dropped} more like this dropped in the last {self.window_s:g} s]"
            return True
        entry[1] += 1
        if entry[1] <= self.per_window:
            return True
        entry[2] += 1
        return False


def _guarded_protocol(base: type, cap: int, timeout_s: float) -> type:
    """``base`` (uvicorn's H11Protocol) with a header deadline and the connection cap."""
    import h11

    waiting: OrderedDict[Any, None] = OrderedDict()  # connections waiting for a request's headers, oldest first

    class GuardedH11Protocol(base):
        _pykv_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport):
            super().connection_made(transport)
            if len(self.connections) > cap:
                oldest = next(iter(waiting), None)
                if oldest is None:  # every connection is busy: refuse this one
                    self._pykv_drop()
                    return
                oldest._pykv_drop()
            self._pykv_wait()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and self.transport is not None and not self.transport.is_closing():
                if self._pykv_timer is None:
                    self._pykv_wait()  # the next request on a kept-alive connection began
            else:
                self._pykv_done()  # its headers are in (or it is closing / upgraded)

        def connection_lost(self, exc: Exception | None) -> None:
            self._pykv_done()
            super().connection_lost(exc)

        def _pykv_wait(self) -> None:
            self._pykv_timer = self.loop.call_later(timeout_s, self._pykv_drop)
            waiting[self] = None

        def _pykv_done(self) -> None:
            if self._pykv_timer is not None:
                self._pykv_timer.cancel()
                self._pykv_timer = None
            waiting.pop(self, None)

        def _pykv_drop(self) -> None:
            self._pykv_done()
            self.connections.discard(self)
            if self.transport is not None:
                self.transport.abort()

    GuardedH11Protocol.__name__ = GuardedH11Protocol.__qualname__ = "GuardedH11Protocol"
    return GuardedH11Protocol


def _uvicorn_config() -> Any | None:
    """The uvicorn Config loading this app: found on the call stack (uvicorn imports app.py in Config.load)."""
    config_type = getattr(sys.modules.get("uvicorn.config"), "Config", None)
    if config_type is None:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, config_type):
            return candidate
        frame = frame.f_back  # type: ignore[assignment]
    return None


def guard_config(config: Any, environ: Any = os.environ) -> str:
    """Guard a uvicorn ``config`` (before it listens; before ``Config.load`` wraps the app for X-Forwarded-For):
    what was set, in words."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    open_files = raise_open_file_limit()
    cap, timeout_s = connection_cap(open_files, environ), header_timeout(environ)
    current = getattr(config, "http_protocol_class", None)  # set by Config.load before it imports the app
    base = current if isinstance(current, type) and issubclass(current, H11Protocol) else H11Protocol
    guarded = _guarded_protocol(base, cap, timeout_s)  # h11 also where httptools is installed: it has no such guard
    config.http = guarded  # what Config.load reads when it has not run yet
    config.http_protocol_class = guarded  # what the server reads once it has
    if "FORWARDED_ALLOW_IPS" not in environ:
        config.forwarded_allow_ips = []  # X-Forwarded-For from nobody (HostFromProxy keeps the scheme: below)
    limiter = RateLimitedLog()
    for name in _GUARDED_LOGGERS:
        logging.getLogger(name).addFilter(limiter)
    return f"{cap} connections, {timeout_s:g} s for a request's headers (open files {open_files})"


def install(environ: Any = os.environ) -> str | None:
    """Guard the server that is loading this app (see the module's docstring); what was set, or None where no
    uvicorn is loading it (AppTest, a plain import, another server)."""
    config = _uvicorn_config()
    return None if config is None else guard_config(config, environ)


# ---- the app's middleware: Streamlit's own /_stcore/metrics, a proxy's scheme ----------------------------------

STREAMLIT_METRICS_ENV = "PYKV_STREAMLIT_METRICS"
_LOOPBACK = ("127.0.0.1", "::1")


class AppGuard:
    """ASGI middleware (st.App's ``middleware``), in front of Streamlit's routes and the app's own:

    - ``/_stcore/metrics`` (Streamlit's cache names and hit counts, session counts; unauthenticated) answers 404
      unless the host sets PYKV_STREAMLIT_METRICS=1: Streamlit has no setting that turns it off;
    - a same-host proxy's ``X-Forwarded-Proto`` still sets the scheme (uvicorn no longer reads its headers:
      ``guard_config``), its ``X-Forwarded-For`` no address.
    """

    def __init__(self, app: Any, environ: Any = os.environ) -> None:
        self.app = app
        self.metrics_open = str(environ.get(STREAMLIT_METRICS_ENV, "")).strip().lower() in ("1", "true", "yes")
        self.proxy_scheme = "FORWARDED_ALLOW_IPS" not in environ

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope.get("type")
        if kind == "http" and not self.metrics_open and str(scope.get("path", "")).endswith("/_stcore/metrics"):
            from starlette.responses import PlainTextResponse

            await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
            return
        if kind in ("http", "websocket") and self.proxy_scheme:
            client = scope.get("client")
            if client and client[0] in _LOOPBACK:
                proto = dict(scope.get("headers") or ()).get(b"x-forwarded-proto", b"").decode("latin1").strip()
                proto = proto.split(",")[-1].strip().lower()
                if proto in ("http", "https"):
                    secure = proto == "https"
                    scheme = ("wss" if secure else "ws") if kind == "websocket" else proto
                    scope = dict(scope, scheme=scheme)
        await self.app(scope, receive, send)
