"""pykv lab: `streamlit run app.py`. A router only; pages live in pykv/ui.

`streamlit run` finds the ``st.App`` below and serves this file through it, with the app's own HTTP routes
(a class's long polls, pykv/ui/session/follow_push.py; each page's own address, deep_links.py); every session's
run executes this file as ``__main__``, the router.
"""

import plotly.graph_objects as go
import streamlit as st
from starlette.middleware import Middleware

if __name__ != "__main__":  # imported by the server: the ASGI app, this file its script
    from pykv.ui.session import deep_links, follow_push, routes, server_guard, server_start

    server_start.before_serving()  # the connection guard, class mode's passphrase, the heavy imports warmed
    from pykv.ui.pages import about, lessons, playground, server, sweep  # noqa: F401  (warmed before any session)

    app = st.App(
        __file__,
        routes=follow_push.routes() + deep_links.routes(routes.URL_PATHS),
        middleware=[Middleware(server_guard.AppGuard)],
    )
else:
    from pykv.ui import ICON

    st.set_page_config(page_title="pykv lab", page_icon=ICON, layout="wide")

    # Cold start: an invisible chart first makes the browser fetch plotly.js while Python imports torch
    # and loads the model (about 2 s sooner to the first drawn grid). It is cleared at once, and drawn on a
    # session's first run only (a class follower's page reruns on every step of the instructor).
    boot = st.empty()
    booting = not st.session_state.get("booted")
    if booting:
        boot.plotly_chart(go.Figure(layout={"height": 10}), theme=None, key="boot")
        st.session_state.booted = True
    from pykv.ui.pages import about, lessons, playground, server, sweep  # noqa: E402  (after the boot chart)
    from pykv.ui.session import routes, seats  # noqa: E402

    if booting:
        boot.empty()
    seats.seats().maybe_reap()  # any page's run gives closed tabs' engines back (at most every 10 s)

    st.navigation(
        routes.routed(
            {
                "playground": st.Page(
                    playground.render,
                    title="Playground",
                    icon=":material/grid_view:",
                    url_path="playground",
                    default=True,
                ),
                "sweep": st.Page(sweep.render, title="Sweep", icon=":material/tune:", url_path="sweep"),
                "lessons": st.Page(lessons.render, title="Lessons", icon=":material/school:", url_path="lessons"),
                "server": st.Page(server.render, title="Your server", icon=":material/dns:", url_path="server"),
                "about": st.Page(about.render, title="About", icon=":material/info:", url_path="about"),
            }
        )
    ).run()
