"""The run timeline on the Playground: a click on a point shows its step, once.

AppTest cannot click a plotly point, and its element tree has no plotly widget to ``set_value``. So a
click is sent the way the browser sends it: a WidgetState under the chart's element id whose
string_value is the selection JSON, added to the widget states of the next run (``AppTest._run``,
what ``AppTest.run`` itself calls). The page then reads it through Streamlit's own widget registry
and deserializer, exactly as in a live session. (Assigning ``session_state["timeline"]`` instead
would be a script write, which Streamlit forbids for a selection in a live app.)
"""

from __future__ import annotations

import json

from app_helpers import ok, shown_step
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest


def timeline(at: AppTest):
    return next(c for c in at.get("plotly_chart") if c.key == "timeline")


def click(at: AppTest, step: int | None, chart_id: str | None = None, curve: int = 0) -> AppTest:
    """Rerun as after a click on the point of trace ``curve`` at ``step`` (``step=None``: an empty
    selection) on the chart ``chart_id`` (default: the timeline drawn by the last run)."""
    chart_id = chart_id or timeline(at).proto.id
    points = (
        []
        if step is None
        else [{"curve_number": curve, "point_number": step, "point_index": step, "x": step, "y": 1.0}]
    )
    selection = {
        "selection": {"points": points, "point_indices": [p["point_index"] for p in points], "box": [], "lasso": []}
    }
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=chart_id, string_value=json.dumps(selection)))
    return ok(at._run(states))


def test_timeline_is_drawn_selectable_with_every_recorded_step(app):
    ok(app.run())
    for _ in range(4):
        app.button(key="step").click().run()
    chart = timeline(ok(app))
    assert list(chart.proto.selection_mode) == [0]  # POINTS: the Playground's timeline answers clicks
    spec = json.loads(chart.proto.spec)
    assert spec["layout"]["title"]["text"].startswith("Run timeline · step 4 of 4")
    assert any("Click a point" in c.value for c in app.caption)


def test_a_click_on_the_timeline_shows_that_step_once(app):
    ok(app.run())
    for _ in range(5):
        app.button(key="step").click().run()
    assert shown_step(ok(app)) == 5

    click(app, 2)
    assert shown_step(app) == 2  # the header, and shown_step checks the URL's ?step= too
    assert app.session_state["lab"].head == 5  # a recorded step: nothing was replayed or dropped
    assert json.loads(timeline(app).proto.spec)["layout"]["title"]["text"].startswith("Run timeline · step 2 of 5")

    # A click on the step already shown leaves the figure (and so the chart) as it was: the browser keeps
    # sending that selection with every rerun. Step must still move on, and not be pulled back to 2.
    same_chart = timeline(app).proto.id
    click(app, 2, same_chart)
    assert shown_step(app) == 2 and timeline(app).proto.id == same_chart
    app.button(key="step").click()
    click(app, 2, same_chart)  # the Step click and the stale selection arrive together
    assert shown_step(app) == 3

    # Once the selection is empty, the same point can be clicked again.
    click(app, None)
    click(app, 2)
    assert shown_step(app) == 2


def test_a_selection_past_the_recorded_steps_stops_at_the_head(app):
    ok(app.run())
    for _ in range(3):
        app.button(key="step").click().run()
    app.button(key="back").click().run()
    click(app, 10**9)  # the selection comes from the browser: no replay for a forged step
    assert shown_step(app) == 3 and app.session_state["lab"].head == 3
    click(app, None)
    click(app, 0, curve=5)  # any trace: every point sits at x = its step
    assert shown_step(app) == 0
