"""Waiting on a Streamlit page's state in Playwright instead of sleeping a fixed time: the script run is over,
no element of an earlier run is still shown stale, and the layout (how tall the page is, how many elements it
has) has not changed for a quiet moment. Shared by the browser tests and the benchmarks that drive a browser."""

from __future__ import annotations

QUIET_MS = 250  # the layout unchanged this long (a follow-up run starts within ~100 ms of the one before)
SETTLED_JS = """(quietMs) => {
  const app = document.querySelector('[data-testid="stApp"]');
  const busy = !app || app.getAttribute('data-test-script-state') !== 'notRunning'  // 'initial' before a run
      || app.getAttribute('data-test-connection-state') !== 'CONNECTED'
      || document.querySelector('[data-stale="true"]') !== null;
  const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
  const sig = busy ? 'busy' : [main.scrollHeight, main.scrollWidth, document.scrollingElement.scrollHeight,
                               document.getElementsByTagName('*').length, location.href].join(' ');
  const now = performance.now(), last = window.__pykvSettle;
  if (busy || !last || last.sig !== sig) { window.__pykvSettle = {sig, since: now}; return false; }
  return now - last.since >= quietMs;
}"""


def wait_settled(page, timeout_ms: float = 120_000, quiet_ms: float = QUIET_MS) -> None:
    """Until the page is idle and its layout has held still for ``quiet_ms`` (polled every 50 ms)."""
    page.evaluate("() => { window.__pykvSettle = null; }")
    page.wait_for_function(SETTLED_JS, arg=quiet_ms, polling=50, timeout=timeout_ms)


def next_frame(page) -> None:
    """After two animation frames: a resize has been laid out and painted."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
