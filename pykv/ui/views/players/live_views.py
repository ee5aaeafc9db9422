"""The live views of a Lab at its cursor: metrics strip, block grid(s), queues, "This step" narration,
the run timeline and the detail tabs. The Playground and the lesson player both draw them, so a lesson shows exactly
what the playground shows.

Every figure comes from ``pykv.viz``, drawn with ``theme=None`` and a stable key. ``key_prefix`` keeps
two pages' element keys apart (the Playground uses none, so its keys stay "grid_gpu", "queues", ...).
"""

from __future__ import annotations

from functools import partial
from urllib.parse import urlencode

import streamlit as st

from pykv.border.snapshot import Snapshot, SnapshotDiff, diff_snapshots
from pykv.gpu_model import Target
from pykv.lab.lab import Lab
from pykv.lab.modelled_run import ModelledRun, modelled_run, real_gpu_step
from pykv.ui.session import state
from pykv.ui.views.panels import modelled_views
from pykv.ui.views.widgets import target
from pykv.ui.views.widgets.export_buttons import export_controls
from pykv.ui.views.widgets.metric_row import metric_row
from pykv.ui.views.widgets.plot_config import PLOT_CONFIG
from pykv.viz import (
    block_grid_figure,
    block_tables_figure,
    engine_times,
    metrics_strip,
    narrate,
    preemption_costs_frame,
    queues_figure,
    requests_frame,
    selected_step,
    timeline_figure,
)
from pykv.viz.captions import state_caption
from pykv.viz.modelled import with_modelled_bills, with_modelled_times

TABS = {"block_tables": "Block tables", "requests": "Requests", "costs": "Preemption costs", "log": "Log (all steps)"}
TIMELINE_HEIGHT = 500  # six panels: below ~450 px the strips get too thin to click


def render(
    lab: Lab,
    key_prefix: str = "",
    split: tuple[int, int] = (5, 4),
    grid_height: int = 460,
    link: str | None = None,
    timeline_select: bool = False,
    modelled_target: Target | None = None,
    focus: str | None = None,
    queue_width: int | None = None,
) -> None:
    """Everything below the controls: metrics, grids | queues + narration, the run timeline, then the detail tabs.
    ``link``: the relative deep link an exported figure names (default: the Playground's ?preset=...&step=...).
    ``timeline_select``: a click on the timeline asks for its step (the page acts on ``clicked_step``).
    ``modelled_target``: the GPU + model the modelled row prices the schedule on (default: the session's).
    ``focus``: a lesson step's view (pykv.lessons.format.schema.FOCUS_VIEWS); a detail tab of that name opens first.
    ``queue_width``: the queue column's px at 1280 where the caller's is narrow (a lesson's): chips fit their ids."""
    snap = lab.view
    diff = diff_snapshots(lab.previous, snap) if lab.previous is not None else None
    dark, k = state.is_dark(), key_prefix
    export = _exporter(lab, snap, link)
    modelled = modelled_run(lab, target.current_estimate(modelled_target))  # priced beside the Lab, drawn here

    metric_row(metrics_strip(snap), f"{k}measured")
    modelled_views.strip(snap, modelled, f"{k}modelled")  # beside the measured row, never instead of it
    if (real_gpu := real_gpu_step(lab)) is not None:
        st.caption(modelled_views.real_gpu_note(real_gpu))
    left, right = st.columns(list(split), gap="medium")
    with left:
        _grids(snap, diff, dark, k, grid_height, export, split)
    with right:
        _queues(snap, diff, dark, k, export, queue_width)
        _this_step(snap, modelled, k)
    timeline(lab, dark, key_prefix, timeline_select)
    export(
        partial(timeline_figure, tuple(lab.snapshots), lab.cursor, height=TIMELINE_HEIGHT),
        "timeline",
        f"{k}timeline",
        width=1100,
        note=f" · step times measured on {snap.device}",
    )  # a copy: the run grows
    details(lab, snap, diff, dark, key_prefix, export, modelled, default_tab=None if focus is None else TABS.get(focus))
    target.formulas_expander(modelled.est)


# The main column's width at the narrowest screen the Playground is laid out for (1280 px, sidebar open): the grids'
# legends wrap to their share of it (six entries a line ran past a device grid beside a CPU pool: "changed this step"
# cut at 1440 px).
NARROWEST_MAIN_PX = 820
CPU_GRID_SHARE = (
    3,
    2,
)  # device grid : CPU grid; at [5, 2] the CPU grid got ~140 px, under its title ("CPU swap · 12/24 used")


def grid_widths(split: tuple[int, int], cpu: bool) -> tuple[int, int]:
    """The px the device grid and the CPU grid get (at least) in the left column of ``split``."""
    left = NARROWEST_MAIN_PX * split[0] / sum(split) - 32  # the gap between the two columns
    if not cpu:
        return int(left), 0
    device = (left - 16) * CPU_GRID_SHARE[0] / sum(CPU_GRID_SHARE)
    return int(device), int(left - 16 - device)


def _grids(
    snap: Snapshot, diff: SnapshotDiff | None, dark: bool, k: str, height: int, export, split: tuple[int, int]
) -> None:
    """The device pool's block grid and, when there is one, the CPU pool's (swap or offloading tier) beside it."""
    cpu_blocks = sum(b.pool == "cpu" for b in snap.blocks)
    g1, g2 = st.columns(list(CPU_GRID_SHARE), gap="small") if cpu_blocks else (st.container(), None)
    changed = diff.blocks if diff else None
    device_px, _ = grid_widths(split, bool(cpu_blocks))
    with g1:
        gpu = partial(block_grid_figure, snap, "gpu", changed, height=height, width=device_px)
        st.plotly_chart(gpu(dark=dark), theme=None, key=f"{k}grid_gpu", config=PLOT_CONFIG)
        export(gpu, "kv_pool", f"{k}grid_gpu", width=800)
    if g2 is None:
        return
    with g2:
        cols = 4 if cpu_blocks <= 64 else 8
        cpu = partial(block_grid_figure, snap, "cpu", changed, height=height, legend=False, cols=cols)
        st.plotly_chart(cpu(dark=dark), theme=None, key=f"{k}grid_cpu", config=PLOT_CONFIG)
        export(cpu, "cpu_offload_tier" if snap.cpu_pool == "offload" else "cpu_swap_pool", f"{k}grid_cpu", width=420)


def _queues(snap: Snapshot, diff: SnapshotDiff | None, dark: bool, k: str, export, width: int | None = None) -> None:
    queues = partial(queues_figure, snap, changed=diff.requests if diff else None, height=235)
    st.plotly_chart(queues(dark=dark, width=width), theme=None, key=f"{k}queues", config=PLOT_CONFIG)
    export(queues, "queues", f"{k}queues", width=800)


def _this_step(snap: Snapshot, modelled: ModelledRun, k: str) -> None:
    """What this step did, in words (measured, then modelled), and its log lines."""
    st.markdown("**This step**")
    # As tall as its text: a fixed height hid the victim's reason and the modelled cost below the fold.
    with st.container(border=True, key=f"{k}narration"):
        lines = narrate(snap) + modelled_views.narration_lines(snap, modelled)
        if snap.report is None and not k:  # the Playground (a lesson steps with its own Next)
            lines[0] += " Press Step (→) or Play."
        st.markdown("\n".join(f"- {line}" for line in lines))
        log_lines = snap.report.log_lines if snap.report else None
        if not log_lines:
            return
        st.code("\n".join(log_lines), language=None, wrap_lines=True)
        if note := device_pool_note(log_lines):
            st.caption(note)


def _exporter(lab: Lab, snap, link: str | None):
    """``export(draw, name, key, width)``: the Export control of one figure, ``draw(dark=...)`` its builder
    (called with dark=False only when a download is pressed)."""
    manual = sum(1 for m in lab.manual if m.step <= snap.step)
    caption = state_caption(lab.config, snap.device, preset=lab.preset, step=snap.step, manual_requests=manual)
    link = link or "?" + urlencode(state.query_for(lab))

    def export(draw, name: str, key: str, width: int, note: str = "") -> None:
        export_controls(
            partial(draw, dark=False), f"pykv_step{snap.step}_{name}", caption + note, link, key, width=width
        )

    return export


def details(
    lab: Lab,
    snap,
    diff,
    dark: bool,
    key_prefix: str = "",
    export=None,
    modelled: ModelledRun | None = None,
    default_tab: str | None = None,
) -> None:
    k = key_prefix
    # Only the open tab is drawn (a tab click reruns): a Step redraws one tab, not a chart, two tables and the log.
    # A lesson step that names a tab opens on it: the key carries that tab, so a step naming another one opens there.
    opened = next((name for name, label in TABS.items() if label == default_tab), "first")
    tables, reqs, costs, logs = st.tabs(
        list(TABS.values()), default=default_tab, key=f"{k}details_{opened}", on_change="rerun"
    )
    if tables.open:
        with tables:
            block_tables = partial(block_tables_figure, snap, changed_requests=diff.requests if diff else None)
            st.plotly_chart(block_tables(dark=dark), theme=None, key=f"{k}block_tables", config=PLOT_CONFIG)
            if export is not None:
                export(block_tables, "block_tables", f"{k}block_tables", width=1000)
    if reqs.open:
        _requests_tab(reqs, lab, snap, key_prefix, modelled)
    if costs.open:
        _costs_tab(costs, snap, key_prefix, modelled)
    if logs.open:
        _log_tab(logs, lab)


def _requests_tab(tab, lab: Lab, snap, k: str, modelled: ModelledRun | None) -> None:
    with tab:
        frame = requests_frame(snap, engine_times(lab.snapshots[: lab.cursor + 1]))
        st.caption(
            "TTFT here is engine time: the measured step times from a request's arrival to its first token, "
            f"summed (on {snap.device}), so the pauses between your clicks are not counted."
        )
        if modelled is not None:
            frame = with_modelled_times(frame, modelled.request_times, modelled.label)
        st.dataframe(frame, hide_index=True, key=f"{k}requests_table", width="stretch")


def _costs_tab(tab, snap, k: str, modelled: ModelledRun | None) -> None:
    with tab:
        frame = preemption_costs_frame(snap)
        if frame.empty:
            st.caption("No preemption yet.")
        else:
            caption = (
                f"Measured on {snap.device}; swap rows also show a modelled PCIe time (modelled, not measured). "
                "Recompute time is the forward time apportioned to re-prefilled tokens. Each measured time has a "
                "CPU twin: the engine thread's CPU time (time.thread_time), which other work on a busy machine does "
                "not inflate, while the wall time includes its waits."
            )
            if modelled is not None:
                frame = with_modelled_bills(frame, modelled.bills, modelled.label)
                caption += (
                    f" The last two columns are modelled on {modelled.label}: the re-prefill's share of its "
                    "steps (or the swap's copies), and that time multiplied by the requests that waited."
                )
            st.caption(caption)
            st.dataframe(frame, hide_index=True, key=f"{k}preemptions_table", width="stretch")


def _log_tab(tab, lab: Lab) -> None:
    with tab:
        lines = [
            f"[step {s.step}] {line}"
            for s in lab.snapshots[1 : lab.cursor + 1]
            for line in (s.report.log_lines if s.report else [])
        ]
        st.code("\n".join(lines[-300:]) if lines else "(no log lines yet)", language=None, wrap_lines=True)
        if note := device_pool_note(lines[-300:]):
            st.caption(note)


# vLLM 0.30+ names the device pool after the device (0.33.0 vllm/v1/metrics/loggers.py, LoggingStatLogger:
# kv_cache_device is "GPU" on CUDA, else the device type upper-cased), so the lab on a CPU prints "CPU KV cache
# usage" for the pool a GPU server calls "GPU": a V0 reader takes it for the swap pool.
_V1_CPU_POOL = "CPU KV cache usage"


def device_pool_note(lines: list[str]) -> str | None:
    """A caption for log lines whose V1 stats line names the device pool "CPU", else None."""
    if not any("Engine 000:" in line and _V1_CPU_POOL in line for line in lines):
        return None
    return (
        "“CPU KV cache usage” is the device pool (the blocks in the grid): vLLM 0.30+ names it after the device "
        "it runs on, and this lab runs on a CPU. On a GPU server the same line says “GPU KV cache usage”. It "
        "is not V0's CPU swap pool, which V1 does not have."
    )


# ---- the run timeline -------------------------------------------------------------------------


def timeline(lab: Lab, dark: bool, key_prefix: str = "", selectable: bool = False) -> None:
    """Every recorded step, the one on screen marked. ``selectable``: a click reruns the page, which
    reads the step with ``clicked_step`` before it draws anything (so the controls show the new step)."""
    fig = timeline_figure(lab.snapshots, lab.cursor, dark=dark, height=TIMELINE_HEIGHT)
    if selectable:
        st.plotly_chart(
            fig,
            theme=None,
            key=f"{key_prefix}timeline",
            config=PLOT_CONFIG,
            on_select="rerun",
            selection_mode=("points",),
        )
        st.caption("Click a point to show its step.")
    else:
        st.plotly_chart(fig, theme=None, key=f"{key_prefix}timeline", config=PLOT_CONFIG)


def clicked_step(lab: Lab, key_prefix: str = "") -> int | None:
    """The recorded step a new click on the timeline asks for, else None.

    The chart's selection outlives the click: it stays in session_state until the figure changes
    (a click on the step already shown changes nothing), so the points handled last are remembered
    and not acted on again; an empty selection forgets them, so the same point can be clicked later.
    """
    key = f"{key_prefix}timeline"
    handled = f"{key}_handled"
    selection = st.session_state.get(key)
    step = selected_step(selection)
    if step is None:
        st.session_state.pop(handled, None)
        return None
    assert selection is not None  # selected_step found a step in it
    points = selection["selection"]["points"]
    if st.session_state.get(handled) == points:
        return None
    st.session_state[handled] = points
    return min(step, lab.head)  # the browser sends the selection: never a step past the recorded ones
