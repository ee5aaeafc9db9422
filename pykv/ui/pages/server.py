"""Your server: bring what your own vLLM printed (its log) and scraped (/metrics), or a request trace; the lab
reads it, charts it, says what is wrong in the course's terms, replays the same pressure, tries the fix, and
keeps a baseline. Nothing leaves this machine, and nothing is kept after the session."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypeVar

import streamlit as st

from pykv.bridge import diagnose
from pykv.bridge.base.bounded_reader import MAX_LINES_READ, ReadBudget
from pykv.ui.safe_text import error_line
from pykv.ui.session import budgets
from pykv.ui.views.panels import (
    attach_panel,
    server_baseline,
    server_config,
    server_lab,
    server_point,
    server_report,
    server_what_if,
)

UPLOAD_CAP_MB = 100  # .streamlit/config.toml server.maxUploadSize
MAX_PASTE_CHARS = 2_000_000
READ_BUDGET_S = 60.0  # CPU seconds one Diagnose may read for (also charged to the session's engine allowance)
EXAMPLES = Path(__file__).resolve().parents[2] / "bridge" / "examples"  # pykv/bridge/examples
T = TypeVar("T")


def render() -> None:
    st.title("Your server")
    st.caption(
        "Upload what your vLLM printed (its log, plain or .gz), a /metrics body or a request trace (Azure, "
        "BurstGPT, Mooncake / Qwen-Bailian JSONL, vLLM bench JSONL), or paste text. Any release from 0.2 "
        f"to 0.33, V0 and V1. Files up to {UPLOAD_CAP_MB} MB; reading stops after {READ_BUDGET_S:g} s of CPU "
        f"time or {MAX_LINES_READ:,} lines and says so; nothing leaves this machine and nothing is kept after the "
        "session. From a shell: `python -m pykv diagnose FILE`, or `python -m pykv attach --metrics URL` to watch a "
        "live server."
    )
    _inputs()
    d = st.session_state.get("server_diagnosis")
    if d is not None:
        _report(d)
    _section(attach_panel.attach_section)


def _report(d) -> None:
    """The diagnosis read (release, start-up, timeline, findings), then the replay, what-if, baseline and pack."""
    try:
        server_report.release(d)
        server_config.render(d)
        server_report.startup(d)
        if server_point.is_one_point(d):
            server_point.render(d)  # one scrape: its values, not a timeline of one dot
        else:
            server_report.timeline(d)
        server_report.findings(d)
    except Exception as e:  # a diagnosis this page cannot draw: one line, and it is not kept (no error every rerun)
        st.session_state.pop("server_diagnosis", None)
        st.session_state.pop("server_what_if_result", None)
        st.error(f"This diagnosis cannot be shown: {error_line(e)}")
        return
    plan = _section(server_lab.replay, d)
    if plan is not None:
        _section(server_what_if.render, d, plan)
    _section(server_baseline.render, d)
    if plan is not None:
        _section(server_lab.pack_button, d, plan)


def _section(draw: Callable[..., T], *args: Any) -> T | None:
    """One part of the page (the replay, the what-if, the baseline, the pack): what it cannot do is one line, and
    the rest of the page stays."""
    try:
        return draw(*args)
    except Exception as e:  # streamlit's rerun and stop are BaseExceptions: they pass
        st.error(error_line(e))
        return None


def example_sources(name: str) -> list[Path]:
    """An example log and the files beside it with its name (``x.log``, ``x.metrics``): read together."""
    log = EXAMPLES / name
    return [log] + sorted(p for p in EXAMPLES.glob(f"{log.stem}.*") if p != log)


def _inputs() -> None:
    with st.form("server_input"):
        files = st.file_uploader(
            "Log, metrics or trace files",
            accept_multiple_files=True,
            key=f"server_files_{st.session_state.get('server_uploads_read', 0)}",  # a new one after each read
        )
        pasted = st.text_area(
            "…or paste text",
            max_chars=MAX_PASTE_CHARS,
            height=120,
            key="server_paste",
            placeholder="INFO 06-16 21:24:15 metrics.py:341] Avg prompt throughput: …",
        )
        submitted = st.form_submit_button("Diagnose", type="primary", icon=":material/troubleshoot:")
    examples = sorted(EXAMPLES.glob("*.log"))
    picked = st.selectbox(
        "…or try an example log",
        ["(none)"] + [p.name for p in examples],
        key="server_example",
        help="Written for pykv in each release's own log format; a V1 example is read with the /metrics bodies "
        "beside it (a V1 log cannot count preemptions).",
    )
    sources: list = []
    if submitted:
        sources = list(files or []) + ([pasted.encode()] if pasted.strip() else [])  # uploads read, never copied
        if not sources:
            st.warning("Upload a file or paste some text first.")
            return
    elif picked != "(none)" and st.session_state.get("server_example_read") != picked:
        sources = [str(p) for p in example_sources(picked)]
        st.session_state.server_example_read = picked
    if not sources:
        return
    if _read(sources) and files:
        _release(files)
        st.rerun()  # the form again with an empty uploader, the diagnosis below it


def _release(files: list) -> None:
    """Drop read uploads from the session's memory (Streamlit keeps an upload until its widget lets it go): a 95 MB
    trace stayed in the session beside its diagnosis. The next run draws a fresh uploader."""
    st.session_state.server_uploads_read = st.session_state.get("server_uploads_read", 0) + 1
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        manager = getattr(ctx, "uploaded_file_mgr", None)
        for f in files:
            if manager is not None and hasattr(manager, "remove_file") and getattr(f, "file_id", None):
                manager.remove_file(session_id=ctx.session_id, file_id=f.file_id)  # type: ignore[union-attr]
    except Exception:  # another upload manager: it lets them go when the session ends
        pass


def _read(sources: list) -> bool:
    """Diagnose ``sources`` within READ_BUDGET_S of CPU (and what is left of the session's allowance), saying how far
    it got; a closed tab stops the read (budgets.session_gone). Whether a diagnosis came of it."""
    size = sum(len(s) if isinstance(s, bytes) else getattr(s, "size", 0) for s in sources) / 2**20
    left = budgets.session_budget().remaining()
    if left <= 0:
        st.error("This session has used its compute allowance for now: try again in a few minutes.")
        return False
    status = st.empty()

    def progress(nbytes: int, lines: int, spent_s: float) -> None:
        status.caption(f"Read {nbytes / 2**20:,.1f} MB, {lines:,} lines ({spent_s:.0f} s of CPU)…")

    budget = ReadBudget(cpu_s=min(READ_BUDGET_S, left), should_stop=budgets.session_gone(), progress=progress)
    with st.spinner(f"Reading {size:.1f} MB…" if size >= 1 else "Reading…"), budgets.charged():
        try:
            st.session_state.server_diagnosis = diagnose(sources, budget=budget)
            st.session_state.pop("server_what_if_result", None)
        except Exception as e:  # nothing usable: one sentence, and the previous diagnosis stays
            st.error(error_line(e))
            return False
        finally:
            status.empty()
    return True
