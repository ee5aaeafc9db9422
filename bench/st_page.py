"""What a browser tab holds: the page, rebuilt from the ForwardMsg deltas, and the ForwardMsg cache (st_client.py).

A page is a flat map ``delta_path -> Node``: each ``new_element`` / ``add_block`` delta lands at its
``metadata.delta_path`` and replaces what was there. Like the frontend's ``AppRoot.clearStaleNodes``, a
script run that finishes drops the nodes it did not write: a full run drops every older node, a fragment
run only the older nodes of its own fragments (with what sits under a dropped block). Only what a load
test reads is kept (the element type, its text, a widget's id, label and disabled flag, the arrival
time), never a figure's JSON, so 100 sessions in one process stay cheap.

``MessageCache`` is the frontend's ForwardMessageCache: the cacheable messages by hash (the server then
sends a ``ref_hash`` instead of an element the tab already holds), dropped after ``maxCachedMessageAge``
finished runs (a fragment run only ages its own fragment's messages).

The page also counts what arrived, per element type (messages, bytes, ref_hash cache hits): the cost of a rerun,
seen from the wire.

    from bench.st_page import Page
    page.apply(msg.delta, tuple(msg.metadata.delta_path), run_id, t_recv, nbytes)
    page.clear_stale(run_id, fragment_ids)   # at a successful script_finished
    page.find(r"step 2 of \\d+")   # the first node whose text matches, or None
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

TEXT_FIELDS = ("body", "label", "message", "code_text", "title")  # the readable text of any element type
WIDGET_TYPES = {
    "button",
    "download_button",
    "checkbox",
    "toggle",
    "slider",
    "selectbox",
    "radio",
    "multiselect",
    "number_input",
    "text_input",
    "text_area",
    "button_group",
    "date_input",
    "time_input",
    "color_picker",
    "plotly_chart",
    "dataframe",
    "pagination",
}


@dataclass
class Node:
    """One element or block of the page as the browser holds it."""

    path: tuple[int, ...]
    kind: str  # the element's type ("markdown", "button", "plotly_chart", ...) or "block"
    text: str  # markdown/heading/alert body, a widget's label, an exception's message ("" for none)
    run_id: str  # the script run that last wrote it
    fragment_id: str  # the fragment that wrote it ("" outside fragments)
    t: float  # time.monotonic() of the message that last wrote it
    widget_id: str = ""  # "$$ID-<hash>-<user key>" for widgets with a key
    disabled: bool = False
    alert_format: str = ""  # "ERROR", "WARNING", "INFO", "SUCCESS" for alerts

    @property
    def user_key(self) -> str:
        key = self.widget_id.split("-", maxsplit=2)[-1] if self.widget_id.startswith("$$ID-") else ""
        return "" if key == "None" else key  # Streamlit's user_key_from_element_id


def element_text(kind: str, body) -> str:
    parts = [getattr(body, name) for name in TEXT_FIELDS if hasattr(body, name)]
    return "\n".join(p for p in parts if isinstance(p, str) and p)


class Page:
    """The page of one session: nodes by delta path, plus what the wire carried."""

    def __init__(self) -> None:
        self.nodes: dict[tuple[int, ...], Node] = {}
        self.msgs_by_kind: Counter[str] = Counter()  # deltas received per element type ("ref:" prefix: cache hits)
        self.bytes_by_kind: Counter[str] = Counter()  # wire bytes per element type
        self.exceptions: list[str] = []  # every st.exception / uncaught error element received (text)
        self.error_alerts: list[str] = []  # every st.error alert received (text)

    # ---- applying messages -----------------------------------------------------------------

    def apply(
        self, delta, path: tuple[int, ...], run_id: str, t: float, nbytes: int, via_ref: bool = False
    ) -> Node | None:
        """Apply one Delta at ``path`` (its ForwardMsg's metadata.delta_path), written by the current run
        ``run_id`` (the frontend's rule: the run of the latest new_session). A ref_hash's delta comes from
        the message cache."""
        which = delta.WhichOneof("type")
        if which == "add_block":
            node = Node(path, "block", "", run_id, delta.fragment_id, t)
        elif which == "new_element":
            kind = delta.new_element.WhichOneof("type") or "empty"
            body = getattr(delta.new_element, kind)
            node = Node(path, kind, element_text(kind, body), run_id, delta.fragment_id, t)
            if kind in WIDGET_TYPES:
                node.widget_id = getattr(body, "id", "")
                node.disabled = bool(getattr(body, "disabled", False))
            if kind == "alert":
                node.alert_format = body.Format.Name(body.format)
                if node.alert_format == "ERROR":
                    self.error_alerts.append(node.text)
            elif kind == "exception":
                self.exceptions.append(f"{body.type}: {body.message}")
        else:  # new_transient (spinners, toasts): nothing a test reads
            return None
        label = ("ref:" if via_ref else "") + node.kind
        self.msgs_by_kind[label] += 1
        self.bytes_by_kind[label] += nbytes
        old = self.nodes.get(path)
        if old is not None and old.kind == "block" and node.kind != "block":
            self._drop_under(path)
        self.nodes[path] = node
        return node

    def _drop_under(self, path: tuple[int, ...]) -> None:
        n = len(path)
        for p in [p for p in self.nodes if len(p) > n and p[:n] == path]:
            del self.nodes[p]

    def clear_stale(self, run_id: str, fragment_ids: list[str]) -> None:
        """After a successful run: drop the nodes that run should have written and did not."""
        frags = set(fragment_ids)
        stale = [
            p for p, node in self.nodes.items() if node.run_id != run_id and (not frags or node.fragment_id in frags)
        ]
        for p in sorted(stale, key=len):
            if p in self.nodes:
                if self.nodes[p].kind == "block":
                    self._drop_under(p)
                del self.nodes[p]

    def clear(self) -> None:
        self.nodes.clear()

    # ---- reading the page ------------------------------------------------------------------

    def __iter__(self) -> Iterator[Node]:
        return iter(sorted(self.nodes.values(), key=lambda node: node.path))

    def texts(self) -> list[str]:
        return [node.text for node in self if node.text]

    def find(self, pattern: str | re.Pattern, since: float | None = None) -> Node | None:
        """The first node (in page order) whose text matches, written at or after ``since`` if given."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        for node in self:
            if node.text and rx.search(node.text) and (since is None or node.t >= since):
                return node
        return None

    def errors_since(self, since: float) -> list[Node]:
        """The error alerts and exception elements on the page written at or after ``since``."""
        return [node for node in self if node.t >= since and (node.kind == "exception" or node.alert_format == "ERROR")]

    def widget(self, key: str) -> Node | None:
        """The widget whose user key is ``key`` (its id ends with ``-key``), or None."""
        for node in self.nodes.values():
            if node.widget_id and node.user_key == key:
                return node
        return None

    def widgets(self, kind: str = "button") -> dict[str, Node]:
        """User key -> node for the widgets of one type now on the page."""
        return {node.user_key: node for node in self if node.kind == kind and node.user_key}

    def widget_ids(self) -> set[str]:
        return {node.widget_id for node in self.nodes.values() if node.widget_id}


@dataclass
class CacheEntry:
    msg: object  # the ForwardMsg (parsed once)
    run_count: int
    fragment_id: str


@dataclass
class MessageCache:
    """The frontend's ForwardMessageCache: cacheable messages by hash, dropped after max_age runs."""

    entries: dict[str, CacheEntry] = field(default_factory=dict)
    run_count: int = 0

    def keep(self, msg) -> None:
        if msg.metadata.cacheable and msg.hash:
            if msg.hash in self.entries:
                self.entries[msg.hash].run_count = self.run_count
            else:
                self.entries[msg.hash] = CacheEntry(msg, self.run_count, msg.delta.fragment_id)

    def resolve(self, ref_hash: str):
        entry = self.entries[ref_hash]  # KeyError: a cache miss (the frontend throws too)
        entry.run_count = self.run_count
        return entry.msg

    def finished_run(self, max_age: int, fragment_ids: list[str]) -> None:
        self.run_count += 1
        for h, e in list(self.entries.items()):
            if fragment_ids and (not e.fragment_id or e.fragment_id not in fragment_ids):
                continue
            if self.run_count - e.run_count > max_age:
                del self.entries[h]
