"""Attach to a live server (the Your server page): poll an allowed vLLM's /metrics (and count its KV events) every
few seconds, and show the live timeline and findings of the window (``pykv.bridge.live``).

Security: a page visitor never chooses what this server fetches. Only the addresses the operator allows
(``PYKV_ATTACH_ALLOW`` or ``attach_allow`` in .streamlit/secrets.toml; pykv/bridge/live/allow.py) can be polled;
anything else is refused in one line before any connection. Each poll is bounded in time (POLL_TIMEOUT_S) and size
(8 MB), follows no redirect off its origin, and an attach stops by itself after MAX_ATTACH_S.
"""

from __future__ import annotations

import time

import streamlit as st

from pykv.bridge.diagnosis import Diagnosis
from pykv.bridge.live.allow import ENV, SECRET, AllowList
from pykv.bridge.live.attach import Attach
from pykv.ui.safe_text import error_line, plain
from pykv.ui.session import budgets, state
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz.server_timeline import server_timeline_figure

POLL_TIMEOUT_S = 4.0
INTERVALS_S = (2, 5, 10, 30, 60)
MAX_ATTACH_S = 3600.0  # an attach left running stops after an hour
KEY = "server_attach"  # the session's Attach
CONFIDENCE_ICON = {"high": ":material/error:", "medium": ":material/warning:", "low": ":material/info:"}


def allow_list() -> AllowList:
    try:
        secret = st.secrets.get(SECRET)
    except Exception:  # no secrets file, or one that does not parse: the environment alone
        secret = None
    return AllowList.from_settings(secret)


def attach_section() -> None:
    """The section, in an expander (open while attached): the page's own headings stay the diagnosis's."""
    with st.expander("Attach to a live server", icon=":material/sensors:", expanded=KEY in st.session_state):
        _section_body()


def _section_body() -> None:
    allow = allow_list()
    if allow.empty:
        st.caption(
            f"Attaching is off on this server: its operator allows addresses with `{ENV}=http://host:port,...` "
            f"(or `{SECRET}` in .streamlit/secrets.toml). From a shell: `python -m pykv attach --metrics URL`."
        )
        return
    st.caption(
        "Polls the server's /metrics every few seconds (and counts its KV-cache events) and diagnoses the window. "
        "Allowed here: " + ", ".join(f"`{u}`" for u in allow.metrics + allow.kv_events)
    )
    with st.form("server_attach_form"):
        url = st.text_input("Server", value=allow.metrics[0] if allow.metrics else "", key="server_attach_url")
        kv = st.text_input(
            "KV events (optional)",
            value=allow.kv_events[0] if allow.kv_events else "",
            key="server_attach_kv",
            help="vLLM's --kv-events-config endpoint, e.g. tcp://host:5557",
        )
        interval = st.select_slider("Every (s)", INTERVALS_S, value=5, key="server_attach_every")
        start = st.form_submit_button("Attach", icon=":material/sensors:")
    if start:
        _start(allow, url, kv, interval)
    live = st.session_state.get(KEY)
    if live is None:
        return
    if st.button("Stop", key="server_attach_stop", icon=":material/stop:"):
        _stop()
        st.caption("Stopped.")
        return
    st.fragment(_live_view, run_every=st.session_state.get("server_attach_interval", 5))()


def _start(allow: AllowList, url: str, kv: str, interval: int) -> None:
    try:
        metrics = allow.check_metrics(url)
        endpoint = allow.check_kv_events(kv) if kv.strip() else None
        attach = Attach(metrics, None, endpoint, timeout_s=POLL_TIMEOUT_S)
    except Exception as e:  # not allowed, or no socket: one line, nothing fetched
        st.error(error_line(e))
        return
    _stop()
    st.session_state[KEY] = attach
    st.session_state.server_attach_interval = interval


def _stop() -> None:
    old = st.session_state.pop(KEY, None)
    if old is not None:
        old.close()


def _live_view() -> None:
    live: Attach | None = st.session_state.get(KEY)
    if live is None:
        return
    if time.time() - live.started > MAX_ATTACH_S:
        _stop()
        st.caption(f"Stopped after {MAX_ATTACH_S / 60:.0f} minutes: attach again to go on.")
        return
    if budgets.session_budget().remaining() <= 0:
        _stop()
        st.caption("Stopped: this session has used its compute allowance for now; attach again in a few minutes.")
        return
    with budgets.charged():  # each poll's parse and the window's diagnosis count against the session's allowance
        _poll_and_show(live)


def _poll_and_show(live: Attach) -> None:
    tick = live.tick()
    if tick.error:
        st.error(plain(tick.error[:300]))
    rise, counter = live.window.preemption_counter()
    sample = live.window.last_sample()
    cols = st.columns(4)
    cols[0].metric("Running / waiting", f"{sample.running} / {sample.waiting}" if sample else "—")
    usage = sample.gpu_kv_usage if sample else None
    cols[1].metric("KV cache", f"{usage:.1%}" if usage is not None else "—")
    cols[2].metric(
        "Preemptions while attached",
        f"{rise:,}" if rise is not None else "not exposed",
        help="The rise of vllm:num_preemptions_total since this attach began.",
    )
    cols[3].metric(
        "Since the server started",
        f"{counter:,}" if counter is not None else "—",
        help="vllm:num_preemptions_total as read now: a count since the server's start-up.",
    )
    if live.kv_counts is not None:
        st.caption(plain(live.kv_counts.line()))
    try:
        d = live.diagnosis()
    except ValueError as e:  # nothing readable yet (the first poll failed)
        st.caption(error_line(e))
        return
    _window(d, len(live.window.scrapes))


def _window(d: Diagnosis, scrapes: int) -> None:
    st.caption(plain(f"{d.release.text}; {scrapes:,} scrape(s) in the window"))
    if len(d.samples) >= 2:
        fig = server_timeline_figure(d.samples, d.startup, dark=state.is_dark())
        st.plotly_chart(fig, theme=None, key="server_attach_timeline", config=PLOT_CONFIG)
    if not d.findings:
        st.success("Live findings: nothing here looks like KV-cache trouble.")
    for f in d.findings:
        st.markdown(
            f"{CONFIDENCE_ICON.get(f.confidence, '')} **{plain(f.title)}** ({f.confidence} confidence): {plain(f.why)}"
        )
