"""The watcher's rerun of a follower's page (pykv.ui.session.wake) replays the session's last client state:
its widgets' values, query and page, but never a button press or another trigger of that last run (a learner's
"Explore on my own" or answer must not fire again when the class moves), and the whole page, not a fragment."""

from __future__ import annotations

from streamlit.proto.ClientState_pb2 import ClientState

from pykv.ui.session import wake


def _last_state() -> ClientState:
    state = ClientState(query_string="class=K7QM2X", page_script_hash="abc", fragment_id="frag", is_auto_rerun=True)
    for wid, field, value in [("radio", "string_value", "B"), ("explore", "trigger_value", True),
                              ("answer", "json_trigger_value", "{}"), ("slider", "int_value", 3)]:
        widget = state.widget_states.widgets.add(id=wid)
        setattr(widget, field, value)
    state.widget_states.widgets.add(id="chat").string_trigger_value.data = "hi"
    return state


def test_a_wake_replays_values_but_no_trigger_and_reruns_the_whole_page():
    state = wake.replay_state(_last_state())
    assert [w.id for w in state.widget_states.widgets] == ["radio", "slider"]
    assert state.query_string == "class=K7QM2X" and state.page_script_hash == "abc"
    assert state.fragment_id == "" and not state.is_auto_rerun


def test_without_a_streamlit_runtime_there_is_no_waker():
    assert wake.waker() is None  # the page keeps its one-second poll (AppTest, bare mode)
