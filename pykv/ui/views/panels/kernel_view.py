"""The kernel view panel: the attention kernels of the step on screen, as they ran.

For each launch (store, decode, prefill, split-K reduce): its kernel, grid, tile sizes and what each
program owned; choosing a program draws the blocks it read, in block-table order, with its key tiles
(``pykv.viz.kernel_view``). The data is the launch record the kernels' launchers filled while the
step ran (``pykv_kernels.launch_record``, kept by the Lab per step), never a re-derivation.

The choice is kept by its label ("decode · req 3 · KV head 1"), so it follows the same request and
head from step to step; a choice that did not run at the step on screen gets a message.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pykv.lab.lab import Lab
from pykv.ui.safe_text import plain
from pykv.ui.session import state
from pykv.viz.kernel_view import KernelWalk, Tile, kernel_walk_figure
from pykv_kernels.launch_record import LaunchRecord, WorkItem


def choice_key(key: str) -> str:
    """Where a panel keeps its chosen program label: ``playground_kernel_choice``, ``lesson_kernel_choice``."""
    return f"{key}_kernel_choice"


def program_label(launch: LaunchRecord, item: WorkItem, request_ids: list[str]) -> str:
    if launch.phase == "store":
        heads = "all KV heads" if item.kv_head is None else f"KV head {item.kv_head}"
        return f"store · tokens {item.query_rows[0]}..{item.query_rows[1] - 1} · {heads}"
    assert item.seq is not None  # only the store's items span several requests
    label = f"{launch.phase} · req {request_ids[item.seq]} · KV head {item.kv_head}"
    if launch.phase == "prefill":
        label += f" · tokens {item.query_positions[0]}..{item.query_positions[1] - 1}"
    return label + (f" · split {item.split}" if item.split is not None else "")


def program_choices(launches: tuple[LaunchRecord, ...], request_ids: list[str]) -> dict[str, tuple[int, int, int]]:
    """label -> (launch, program, item) for every item every program of every launch owned."""
    out: dict[str, tuple[int, int, int]] = {}
    for li, launch in enumerate(launches):
        for pi, program in enumerate(launch.programs):
            for ii, item in enumerate(program.items):
                out.setdefault(program_label(launch, item, request_ids), (li, pi, ii))
    return out


def walk_of(launch: LaunchRecord, item: WorkItem, label: str, request_ids: list[str]) -> KernelWalk:
    return KernelWalk(
        title=label,
        request_id=None if item.seq is None else request_ids[item.seq],
        blocks=item.blocks,
        block_size=launch.block_size,
        key_start=item.key_start,
        key_stop=item.key_stop,
        causal_from=item.causal_from if launch.phase == "prefill" else None,
        tiles=tuple(Tile(t.start, t.stop, t.width) for t in item.tiles),
        writes=launch.phase == "store",
    )


def launches_frame(launches: tuple[LaunchRecord, ...]) -> pd.DataFrame:
    rows = []
    for launch in launches:
        owned = [len(p.items) for p in launch.programs]
        rows.append(
            {
                "launch": launch.phase,
                "kernel": launch.kernel,
                "grid": "×".join(map(str, launch.grid)),
                "tiles": ", ".join(f"{k}={v}" for k, v in launch.params),
                "programs": len(launch.programs),
                "items per program": f"{min(owned)}..{max(owned)}" if min(owned) != max(owned) else str(owned[0]),
                "blocks from": "the kernel's trace" if launch.traced else "the tables it was given",
            }
        )
    return pd.DataFrame(rows)


def open_key(key: str) -> str:
    """Where the panel's expander keeps whether it is open: ``playground_kernels_open``, ``lesson_kernels_open``."""
    return f"{key}_kernels_open"


def expander(lab: Lab, key: str = "playground") -> None:
    """The panel in an expander drawn only while open: closed, a step's click skips the kernel walk's figure and
    table (about a third of a Playground Step's drawing on the server, and the browser's too)."""
    box = st.expander("Attention kernels of this step", key=open_key(key), on_change="rerun")
    if box.open:
        with box:
            render(lab, key)


def render(lab: Lab, key: str = "playground") -> None:
    """The panel for the step on screen (call inside an expander or a column)."""
    snap = lab.view
    launches = lab.kernel_launches.get(lab.cursor)
    if snap.report is None or not snap.report.scheduled:
        st.info("No attention ran at this step (step 0, or nothing was scheduled): step the engine to see its kernels.")
        return
    if not launches:
        backend = lab.live_engine.backend.label if lab.live_engine is not None else lab.config.attention_backend
        st.info(
            f"This step ran {backend} attention: no Triton kernel launches to show. Choose "
            "attention_backend = triton (or auto) in the sidebar to watch the kernels walk the block tables."
        )
        return
    ids = list(snap.report.scheduled)
    st.caption(_which_layer(lab))
    # a table, not a data grid: its cells wrap, so the last column is never cut at 1440 px (a grid scrolled it away)
    st.table(launches_frame(launches), hide_index=True)
    choices = program_choices(launches, ids)
    labels = list(choices)
    wanted: str | None = st.session_state.get(choice_key(key))
    if wanted is not None and wanted not in choices:
        st.warning(
            f"No program ran {plain(wanted)} at step {lab.cursor} (this step ran {len(labels)} other program "
            "work items): choose one below."
        )
        wanted = None
    first_attention = next((i for i, label in enumerate(labels) if not label.startswith("store")), 0)
    index = labels.index(wanted) if wanted is not None else first_attention
    picked = st.selectbox(
        "Program",
        labels,
        index=index,
        key=f"{key}_kernel_program_{lab.cursor}",
        help="A program's work on one request and KV head: the blocks it read, in order.",
    )
    if picked != labels[index]:  # the user's choice: kept, and followed to the next steps
        st.session_state[choice_key(key)] = picked
    li, pi, ii = choices[picked]
    launch = launches[li]
    item = launch.programs[pi].items[ii]
    others = len(launch.programs[pi].items) - 1
    parts = [
        f"{launch.kernel}, program {pi} of {len(launch.programs)} (grid {launch.grid})"
        + (f", which owned {others} other item(s) too" if others else "")
    ]
    if item.key_stop > 0:
        parts.append(f"keys {item.key_start}..{item.key_stop - 1}")
    parts.append(f"blocks {' → '.join(map(str, item.blocks))}")
    st.caption(" · ".join(parts))
    fig = kernel_walk_figure(snap, walk_of(launch, item, picked, ids), dark=state.is_dark())
    st.plotly_chart(fig, theme=None, key=f"{key}_kernel_walk")


def _which_layer(lab: Lab) -> str:
    """Which layer the panel shows, and what the others ran (the lab's CPU default runs the kernels on one)."""
    shown = "The first layer's launches (every layer reads the same block tables)"
    backend = lab.live_engine.backend if lab.live_engine is not None else None
    if backend is None:
        return shown + "."
    if backend.later_layers is not None:
        return (
            f"{shown}; the other layers ran {backend.later_layers.label} attention, to keep a step quick on "
            "this CPU (attention_backend = triton runs the kernels on every layer)."
        )
    return f"{shown}; the other layers launched the same kernels."
