"""How a page follows a class without asking every second: a long poll on the app's own HTTP route.

    the page's run  ──mounts──>  class_follow component (its data: the route, a ticket for the version shown)
    the browser     ──GET /api/pykv/follow?ticket=…──> held on the server's event loop (FollowWaits)
                    <── {"moved": true} as soon as the class moves ── the component reruns what holds it, once
                                                                  (a follower's class step, an instructor's page)

An idle follower costs the server nothing between steps (a Streamlit fragment on a one-second timer cost
~4 ms of one core per learner-second, and 200 of them more than the process could serve). A poll that is not
answered within WAIT_S comes back "not moved" and asks again, which renews the learner's presence; a failing
route (three errors in a row: an unknown ticket, a server restarted) reruns the page, which then asks the store
itself and gets a new ticket.

The route exists where Streamlit serves app.py as an ``st.App`` (``streamlit run app.py`` does: see app.py);
under AppTest the component is inert and tests rerun the page themselves.
"""

from __future__ import annotations

import streamlit as st
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from streamlit import config

from pykv.classroom.follow_waits import Answer, FollowWaits
from pykv.ui.session.classroom import classes  # at import: never on the event loop (the first poll waited ~9 s)

PATH = "/api/pykv/follow"
MAX_TOKEN_CHARS = 64  # tickets are 16 characters; anything longer is not one

_JS = """
export default function (component) {
  const { data, setTriggerValue } = component;
  const stop = new AbortController();
  // One loop a page: Streamlit calls this again when the data changes (every run) without the last cleanup.
  const loops = (globalThis.__pykvClassFollow ??= new Map());
  loops.get(data.slot)?.abort();
  loops.set(data.slot, stop);
  const url = `${data.path}?ticket=${encodeURIComponent(data.ticket)}`;
  const pause = (ms) => new Promise((done) => setTimeout(done, ms));
  (async () => {
    let failures = 0;
    while (!stop.signal.aborted) {
      try {
        const answer = await fetch(url, { signal: stop.signal, cache: "no-store" });
        if (!answer.ok) throw new Error(String(answer.status));  // 503 (busy), 404 (unknown ticket): retried
        const moved = (await answer.json()).moved;  // not JSON (no such route here): a failure, as an error
        failures = 0;
        if (moved) { setTriggerValue("moved", data.run); return; }
      } catch (error) {
        if (stop.signal.aborted) return;
        failures += 1;
        if (failures >= 3) { setTriggerValue("moved", data.run); return; }
        await pause(1000 * failures + Math.random() * 1000);
      }
    }
  })();
  return () => { stop.abort(); if (loops.get(data.slot) === stop) loops.delete(data.slot); };
}
"""

_waits: FollowWaits | None = None


def waits() -> FollowWaits:
    """The process's long polls (one per process, as the classes are)."""
    global _waits
    if _waits is None:
        _waits = FollowWaits(
            read_version=lambda code: classes().version(code),
            mark_seen=lambda code, learner, mode: classes().seen(code, learner, mode),
        )
    return _waits


async def _follow_endpoint(request: Request) -> JSONResponse:
    token = request.query_params.get("ticket", "")
    if not token or len(token) > MAX_TOKEN_CHARS:
        return JSONResponse({"error": "a ticket is 16 characters: rerun the page for one"}, status_code=400)
    answer = await waits().wait(token)
    if answer is Answer.BUSY:
        return JSONResponse({"error": "busy: ask again in a few seconds"}, status_code=503)
    if answer is Answer.UNKNOWN:
        return JSONResponse({"error": "unknown ticket: rerun the page for a new one"}, status_code=404)
    return JSONResponse({"moved": answer is Answer.MOVED}, headers={"Cache-Control": "no-store"})


def route_path() -> str:
    """PATH under the server's base URL path, if any (Streamlit does not put it before an app's own routes)."""
    base = str(config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}{PATH}" if base else PATH


def routes() -> list[Route]:
    """The app's own HTTP routes, served beside Streamlit's (app.py)."""
    return [Route(route_path(), _follow_endpoint, methods=["GET"])]


@st.cache_resource(show_spinner=False)
def _component():
    return st.components.v2.component("pykv_class_follow", js=_JS)


def follow(code: str, version: int | None, page: str, mode: str | None = None) -> None:
    """Rerun this page (or the fragment it is in) when class ``code`` is past ``version``; ``page``: the session's
    anonymous id; ``mode`` ("following"): every poll also counts it as a learner present."""
    runs = st.session_state["class_follow_runs"] = st.session_state.get("class_follow_runs", 0) + 1
    data = {
        "path": route_path(),
        "ticket": waits().issue(code, version, page, mode),
        "slot": "class_follow",
        "run": runs,
    }  # new data every run: the component starts a fresh poll after each rerun
    _component()(data=data, key="class_follow", on_moved_change=_ignore)  # no HTML: takes no room


def _ignore() -> None:
    """The trigger's only job is the rerun it causes."""
