"""Attach to a live vLLM: poll its /metrics, follow its log, count its KV events, each ``tick()``; diagnose the
window whenever asked. One owner thread (the CLI's loop, or one browser session's fragment) calls it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import IO

from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.diagnosis import Diagnosis
from pykv.bridge.live.kv_events import KVEventCounts
from pykv.bridge.live.kv_subscriber import KVEventSubscriber
from pykv.bridge.live.log_follower import LogFollower
from pykv.bridge.live.poller import DEFAULT_TIMEOUT_S, MetricsPoller
from pykv.bridge.live.window import LiveWindow, timeline_row

MIN_INTERVAL_S = 0.5
MAX_INTERVAL_S = 3600.0


def check_interval(seconds: float) -> float:
    if not MIN_INTERVAL_S <= seconds <= MAX_INTERVAL_S:
        raise BridgeInputError(f"the interval must be {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g} s, not {seconds:g}")
    return seconds


@dataclass
class Tick:
    """What one tick saw: the timeline row, and the poll's failure (one line) if it failed."""

    row: str
    error: str | None = None


class Attach:
    """``metrics``: a server's URL (``http://host:8000`` or its /metrics); ``log``: a path or "-" (``stream``);
    ``kv_events``: a ZMQ endpoint (``tcp://host:5557``). At least one. ``record``: keep the raw scrapes and
    KV-event messages (for a fixture)."""

    def __init__(
        self,
        metrics: str | None = None,
        log: str | None = None,
        kv_events: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        stream: IO[bytes] | None = None,
        record: bool = False,
    ) -> None:
        if not (metrics or log or kv_events):
            raise BridgeInputError("attach to something: give --metrics URL, --log FILE (or -) or --kv-events ENDPOINT")
        self.window = LiveWindow()
        self.poller = MetricsPoller(metrics, timeout_s, record=record) if metrics else None
        self.follower: LogFollower | None = None
        self.subscriber: KVEventSubscriber | None = None
        try:
            self.follower = LogFollower(log, stream) if log else None
            self.subscriber = KVEventSubscriber(kv_events, record=record) if kv_events else None
        except BaseException:
            self.close()
            raise
        self.last_error: str | None = None
        self.started = time.time()

    @property
    def kv_counts(self) -> KVEventCounts | None:
        return self.subscriber.counts if self.subscriber else None

    def tick(self) -> Tick:
        """Poll once, take the log lines and KV events that arrived; never raises for the server's sake."""
        error = None
        if self.poller is not None:
            try:
                self.window.add_scrape(self.poller.poll())
            except BridgeInputError as exc:
                error = f"{self.poller.url}: {exc}"
        if self.follower is not None:
            self.window.add_log_lines(self.follower.take())
            if self.follower.error:
                error = self.follower.error
        if self.subscriber is not None:
            self.subscriber.drain()
        self.last_error = error
        rise, counter = self.window.preemption_counter()
        clock = time.strftime("%H:%M:%S", time.localtime())
        row = timeline_row(self.window.last_sample(), rise, counter, clock) if self.poller else clock
        if self.follower is not None:
            row += f"  log {self.window.log_lines:,} lines"
        if self.subscriber is not None:
            counts = self.subscriber.counts
            row += f"  KV events: BlockStored {counts.block_stored:,}, BlockRemoved {counts.block_removed:,}"
        return Tick(row, error)

    def diagnosis(self) -> Diagnosis:
        """The window diagnosed (BridgeInputError: nothing readable yet)."""
        return self.window.diagnosis()

    def close(self) -> None:
        if self.follower is not None:
            self.follower.close()
        if self.subscriber is not None:
            self.subscriber.close()
