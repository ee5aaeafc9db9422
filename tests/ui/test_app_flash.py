"""The page's one message queue (pykv/ui/session/flash.py): each place shows its own messages once, in order."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page():
    import streamlit as st

    from pykv.ui.session.flash import flash, show

    if st.button("say", key="say"):
        flash("the engine said *no*")
        flash("stopped early", "warning")
        flash("bad target", place="target")
    show("page")
    st.markdown("---")
    show("target", prefix="Not changed: ")


def test_each_place_shows_its_messages_once_in_order_as_plain_text():
    app = AppTest.from_function(_page).run()
    assert not app.error and not app.warning
    app.button(key="say").click().run()
    assert [e.value for e in app.error] == ["the engine said \\*no\\*", "Not changed: bad target"]
    assert [w.value for w in app.warning] == ["stopped early"]
    app.run()  # shown once: the next run has nothing left
    assert not app.error and not app.warning
