"""Which live servers the app may attach to: only those its operator allows, never an address a page visitor types.

The allow-list is the server's setting, read from ``PYKV_ATTACH_ALLOW`` (comma-separated) and, in the app, from the
``attach_allow`` entry of ``.streamlit/secrets.toml`` (a list or the same comma-separated string):

    PYKV_ATTACH_ALLOW=http://10.0.0.5:8000,http://vllm-b:8000,tcp://10.0.0.5:5557 streamlit run app.py

An http(s) entry allows that origin's /metrics (scheme, host and port must match exactly: no other path, no other
port, and the poll follows no redirect to another origin); a ``tcp://`` entry allows that KV-event endpoint. An
empty list means attaching is off. Anything not on the list is refused in one line, before any connection.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass

from pykv.bridge.base.bounded_http import Origin
from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.live.kv_subscriber import check_endpoint
from pykv.bridge.live.poller import metrics_url

ENV = "PYKV_ATTACH_ALLOW"
SECRET = "attach_allow"
MAX_ENTRIES = 100


@dataclass(frozen=True)
class AllowList:
    metrics: tuple[str, ...]  # /metrics URLs, as metrics_url makes them
    kv_events: tuple[str, ...]  # tcp:// endpoints
    rejected: tuple[str, ...] = ()  # entries that are neither (shown to the operator, never fetched)

    @classmethod
    def parse(cls, entries: list[str] | str | None) -> AllowList:
        if entries is None:
            return cls((), ())
        items = entries.split(",") if isinstance(entries, str) else [str(e) for e in entries]
        metrics: list[str] = []
        kv: list[str] = []
        rejected: list[str] = []
        for item in (i.strip() for i in items[:MAX_ENTRIES]):
            if not item:
                continue
            try:
                if item.startswith(("tcp://", "ipc://")):
                    kv.append(check_endpoint(item))
                else:
                    metrics.append(metrics_url(item))
            except BridgeInputError:
                rejected.append(item[:120])
        return cls(tuple(dict.fromkeys(metrics)), tuple(dict.fromkeys(kv)), tuple(rejected))

    @classmethod
    def from_settings(cls, secret: object = None) -> AllowList:
        """The environment's list and the secrets entry (``secret``, read by the caller), together."""
        env = os.environ.get(ENV, "")
        extra = secret if isinstance(secret, (list, tuple)) else [secret] if isinstance(secret, str) else []
        return cls.parse(env.split(",") + [str(e) for e in extra])

    @property
    def empty(self) -> bool:
        return not self.metrics and not self.kv_events

    def check_metrics(self, url: str) -> str:
        """The allowed /metrics URL ``url`` names; BridgeInputError (one line) when it is not on the list."""
        try:
            wanted = metrics_url(url)
            Origin.of(wanted)
        except BridgeInputError:
            wanted = None
        if wanted is None or _normal(wanted) not in {_normal(u) for u in self.metrics}:
            raise BridgeInputError(
                f"{url.strip()[:120]!r} is not on this server's attach allow-list ({ENV}): "
                + (f"allowed: {', '.join(self.metrics)}" if self.metrics else "no address is allowed")
            )
        return wanted

    def check_kv_events(self, endpoint: str) -> str:
        if endpoint.strip() not in self.kv_events:
            raise BridgeInputError(
                f"{endpoint.strip()[:120]!r} is not on this server's attach allow-list ({ENV}): "
                + (f"allowed: {', '.join(self.kv_events)}" if self.kv_events else "no KV-event endpoint is allowed")
            )
        return endpoint.strip()


def _normal(url: str) -> tuple:
    """An URL's origin and path, compared case-insensitively on the host (``Origin.of`` lowers it)."""
    origin = Origin.of(url)
    parts = urllib.parse.urlsplit(url)
    return origin, parts.path or "/", parts.query
