"""The Playground's banner over a server replay: what the run is, the way back to the diagnosis it came from, and the
page brought to its top (the Your server page's button sits far down, and a page switch keeps the scroll: the
replay opened scrolled to the bottom with no way back)."""

from __future__ import annotations

import streamlit as st
import streamlit.components.v1 as components

from pykv.lab.lab import Lab
from pykv.ui.session import replay_link, routes

# the app scrolls in its main section (stMain), not the window; the frame is the app's own origin
SCROLL_TOP = """<script>
const doc = window.parent.document;
(doc.querySelector('[data-testid="stMain"]') || doc.scrollingElement).scrollTo({top: 0});
</script>"""
ARRIVED = "replay_banner_scrolled"  # st.session_state: id() of the Lab the page was last brought to the top for


def render(lab: Lab) -> None:
    if not replay_link.query_part(lab):
        return
    n = len(lab.workload.requests) if lab.workload else 0
    has_diagnosis = st.session_state.get("server_diagnosis") is not None
    with st.container(horizontal=True, vertical_alignment="center", key="replay_banner"):
        st.info(
            f"A replay of a real server's pressure: {n} requests on a scaled pool, "
            + (
                "from your diagnosis. Its link is in the address bar: it opens this run in any browser."
                if has_diagnosis
                else "rebuilt from the link. The diagnosis it came from stays with whoever made the link."
            ),
            icon=":material/replay:",
        )
        st.page_link(
            routes.page("server"),
            label="Back to the diagnosis" if has_diagnosis else "Diagnose a server",
            icon=":material/arrow_back:",
        )
    if st.session_state.get(ARRIVED) != id(lab):  # an id, not the Lab: a replaced Lab's memory is freed
        st.session_state[ARRIVED] = id(lab)
        components.html(SCROLL_TOP, height=0)
