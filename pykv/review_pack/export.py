"""Figure export: SVG and PNG (kaleido driving a headless Chromium) and self-contained HTML, each on
the light template, with the figure's title, a caption line and the deep link that reproduces it.

No Streamlit here: ``pykv.ui.views.widgets.export_buttons`` puts these behind download buttons, and anything
headless can call them too.

- One Chromium is started on the first image export and kept open, on an event loop of its own
  (a daemon thread), so later exports take a fraction of a second. Each export is bounded
  (``RENDER_TIMEOUT_S``; the first one also ``START_TIMEOUT_S``); a timeout closes the browser so
  the next export starts a fresh one.
- Any failure (no browser, kaleido missing, a timeout, a crash) is ``ExportUnavailable`` with a
  one-line message; ``static_export_problem()`` tells without starting anything. HTML needs
  neither kaleido nor a browser.
- Same figure, same bytes: sizes are fixed, plotly.js and the fonts come from this machine, the
  random ids plotly.js puts in an SVG are renumbered in order of appearance, and a PNG keeps no
  text or time chunks.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import html
import os
import re
import shutil
import textwrap
import threading
import time
from typing import Any, Literal

import plotly.graph_objects as go

from pykv.review_pack.fit import fit_width
from pykv.viz.theme import CHAR_EM, colors, template

RENDER_TIMEOUT_S = 20.0  # one export, once the browser is up
START_TIMEOUT_S = 30.0  # starting Chromium (a cold start on a busy 2-core machine takes ~3-5 s)
DEFAULT_WIDTH = 1000
DEFAULT_HEIGHT = 500  # for a figure that sets no height of its own
SCALES = (1, 2, 3)
CAPTION_LINE_PX = 16  # one subtitle line at CAPTION_FONT_PX, as plotly spaces it
CAPTION_FONT_PX = 11
PAD_PX = 12  # room added left and right: the app's figures run to the edge of their column
DEBIAN_CHROMIUM = "/usr/bin/chromium"
FAILURE_MEMORY_S = 60.0  # a failed export disables the image buttons this long, with the reason
HTML_DIV_ID = "pykv-figure"  # plotly's default div id is a random uuid


class ExportUnavailable(Exception):
    """Static (SVG/PNG) export cannot run here; ``str(e)`` is one line that says why."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))  # one line, whatever the cause printed


def _why(e: BaseException) -> str:
    """An exception as a short clause: its first message (choreographer's are tuples of sentences)."""
    first = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)
    text = " ".join(first.split()).rstrip(".")
    return f"{type(e).__name__}: {text[:157] + '...' if len(text) > 160 else text}"


# ---- the figure that is exported ------------------------------------------------------------------------


def caption_lines(caption: str, link: str | None, width: int, link_label: str = "link") -> list[str]:
    """The caption (wrapped to ``width`` px) and the link (broken only where it would not fit, and then only before
    a query's ``&`` or a command's `` --``), escaped for plotly's text."""
    chars = max(40, int((width - 2 * PAD_PX) / (CAPTION_FONT_PX * CHAR_EM)))
    lines = textwrap.wrap(caption, chars) if caption else []
    if link:
        lines += link_lines(f"{link_label}: {link}", chars)
    return [html.escape(line, quote=False) for line in lines]


def link_lines(text: str, chars: int) -> list[str]:
    """``text`` in lines of at most ``chars``, broken before ``&`` or `` --`` only (a piece longer stays whole)."""
    lines = [""]
    for piece in re.split(r"(?=&)|(?= --)", text):
        if lines[-1] and len(lines[-1]) + len(piece) > chars:
            lines.append(piece.lstrip())
        else:
            lines[-1] += piece
    return lines


def export_figure(
    fig: go.Figure,
    *,
    caption: str,
    link: str | None = None,
    width: int = DEFAULT_WIDTH,
    height: int | None = None,
    link_label: str = "link",
) -> go.Figure:
    """A copy of ``fig`` on the light template, ``width`` x (its height + the caption's lines) px, with the
    caption and link as the title's subtitle (under any subtitle it had), fitted to ``width``
    (:func:`pykv.review_pack.fit.fit_width`). ``fig`` itself is not changed.

    The caption goes at the top, with the title, because plotly can keep a title clear of the plot
    (``title.automargin``) but not an annotation below the axes, whose room depends on tick labels."""
    out = go.Figure(fig)  # a deep copy
    for i, trace in enumerate(out.data):
        trace.uid = f"trace{i}"  # plotly.js would draw a random one into the SVG's class names
    lines = caption_lines(caption, link, width, link_label)
    base_height = height or fig.layout.height or DEFAULT_HEIGHT
    muted = colors(dark=False)["muted"]
    old = out.layout.title.subtitle.text
    subtitle = "<br>".join(([old] if old else []) + [f'<span style="color:{muted}">{line}</span>' for line in lines])
    light = template(dark=False)
    margin = {side: getattr(out.layout.margin, side) for side in "lrt"}
    margin = {side: getattr(light.layout.margin, side) if m is None else m for side, m in margin.items()}
    out.update_layout(
        template=light,
        width=width,
        height=base_height + CAPTION_LINE_PX * len(lines) + 8,
        autosize=False,
        margin=dict(l=margin["l"] + PAD_PX, r=margin["r"] + PAD_PX, t=margin["t"] + CAPTION_LINE_PX * len(lines)),
        title=dict(subtitle=dict(text=subtitle, font=dict(size=CAPTION_FONT_PX))),
    )
    return fit_width(out, width)  # the title clear of the plot, long lines wrapped, a wide legend under the plot


# ---- determinism ---------------------------------------------------------------------------------------

_SVG_ID = re.compile(r'\bid="([^"]+)"')
_PNG_DROP = {b"tIME", b"tEXt", b"zTXt", b"iTXt"}


def normalise_svg(svg: bytes) -> bytes:
    """Renumber every id (plotly.js makes them from a random figure uid, e.g. ``clipfc8a88xy``) to
    ``pykv0``, ``pykv1``, ... in order of first appearance, with every reference to it."""
    text = svg.decode("utf-8")
    names: dict[str, str] = {}
    for match in _SVG_ID.finditer(text):
        names.setdefault(match.group(1), f"pykv{len(names)}")
    if not names:
        return svg
    # id="x" and every "#x": url(#x), url("#x") (also as &quot;#x in a style), href="#x"
    alternatives = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))  # longest first
    pattern = re.compile(r'(\bid="|#)(' + alternatives + r")(?![\w-])")
    return pattern.sub(lambda m: m.group(1) + names[m.group(2)], text).encode("utf-8")


def normalise_png(png: bytes) -> bytes:
    """The PNG without its text and time chunks (Chromium writes none today; a future one might)."""
    if not png.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ExportUnavailable("the browser returned something that is not a PNG")
    out, i = [png[:8]], 8
    while i + 8 <= len(png):
        length = int.from_bytes(png[i : i + 4], "big")
        end = i + 12 + length
        if png[i + 4 : i + 8] not in _PNG_DROP:
            out.append(png[i:end])
        i = end
    return b"".join(out)


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels, from the IHDR chunk (bytes 16-24)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


# ---- the browser ---------------------------------------------------------------------------------------


def browser_path() -> str | None:
    """``BROWSER_PATH`` if set (kaleido's own variable), else Debian's Chromium, else one on PATH."""
    if path := os.environ.get("BROWSER_PATH"):
        return path
    if os.access(DEBIAN_CHROMIUM, os.X_OK):
        return DEBIAN_CHROMIUM
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def static_export_problem() -> str | None:
    """Why SVG/PNG export cannot run here (one line), or None; starts nothing (cheap on every rerun)."""
    try:
        import kaleido  # noqa: F401  (kaleido warns at import about a plotly it does not know: once)
    except Exception as e:  # ImportError, or a kaleido that fails at import
        return f"SVG/PNG export needs kaleido ({_why(e)}); HTML export still works."
    path = browser_path()
    if path is None:
        return "SVG/PNG export needs Chromium (apt-get install chromium); HTML export still works."
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return f"SVG/PNG export: no browser at {path} (BROWSER_PATH); HTML export still works."
    return _BROWSER.last_failure


class _Browser:
    """One kaleido (one Chromium, one tab) on a private event loop in a daemon thread.

    Exports queue on a lock (one tab renders one figure at a time); the loop thread never runs
    Streamlit code, so a page rerun cannot block it. A failure is remembered for
    ``FAILURE_MEMORY_S`` so the page can say why instead of offering a button that fails again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kaleido: Any = None
        self._path: str | None = None
        self._failure: tuple[float, str] | None = None  # (when, one line)

    @property
    def last_failure(self) -> str | None:
        if self._failure and time.monotonic() - self._failure[0] < FAILURE_MEMORY_S:
            return self._failure[1]
        return None

    def _fail(self, message: str) -> ExportUnavailable:
        error = ExportUnavailable(message)
        self._failure = (time.monotonic(), str(error))
        return error

    def render(self, fig: dict, opts: dict, timeout_s: float) -> bytes:
        if not self._lock.acquire(timeout=timeout_s):
            raise ExportUnavailable(f"another export is still running after {timeout_s:g} s; try again.")
        try:
            kaleido = self._open(browser_path())
            try:
                raw = self._call(kaleido.calc_fig(fig, opts=opts), timeout_s)
            except concurrent.futures.TimeoutError:
                self._close()  # a hung tab: the next export starts a fresh browser
                raise self._fail(f"SVG/PNG export took longer than {timeout_s:g} s and was stopped.") from None
            except Exception as e:
                self._close()
                raise self._fail(f"SVG/PNG export failed ({_why(e)}).") from None
            self._failure = None
            return raw
        finally:
            self._lock.release()

    def _call(self, coro, timeout_s: float):
        future = asyncio.run_coroutine_threadsafe(coro, self._running_loop())
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or not self._loop.is_running():
            self._loop = asyncio.new_event_loop()
            threading.Thread(target=self._loop.run_forever, name="pykv-export-browser", daemon=True).start()
        return self._loop

    def _open(self, path: str | None):
        if self._kaleido is not None and path == self._path:
            return self._kaleido
        self._close()
        try:
            import kaleido
        except Exception as e:
            raise self._fail(f"SVG/PNG export needs kaleido ({_why(e)}).") from None

        async def start():
            # mathjax=False: its default is a CDN script, and nothing here may need the network;
            # plotly.js comes from the installed plotly package (kaleido's default)
            k = kaleido.Kaleido(n=1, timeout=RENDER_TIMEOUT_S, mathjax=False, path=path)
            await k.open()
            return k

        try:
            self._kaleido, self._path = self._call(start(), START_TIMEOUT_S), path
        except concurrent.futures.TimeoutError:
            raise self._fail(f"SVG/PNG export: the browser did not start within {START_TIMEOUT_S:g} s.") from None
        except Exception as e:
            raise self._fail(f"SVG/PNG export: the browser did not start ({_why(e)}).") from None
        return self._kaleido

    def _close(self) -> None:
        kaleido, self._kaleido, self._path = self._kaleido, None, None
        if kaleido is None:
            return
        try:
            self._call(kaleido.close(), 10)
        except Exception:  # a browser that will not close: choreographer kills it at exit
            pass

    def close(self) -> None:
        if self._lock.acquire(timeout=RENDER_TIMEOUT_S):  # at exit: never wait on a hung export for ever
            try:
                self._close()
            finally:
                self._lock.release()


_BROWSER = _Browser()
atexit.register(_BROWSER.close)


# ---- the exports ---------------------------------------------------------------------------------------


def export_image(
    fig: go.Figure,
    fmt: Literal["svg", "png"],
    *,
    scale: int = 1,
    caption: str,
    link: str | None = None,
    width: int = DEFAULT_WIDTH,
    height: int | None = None,
    link_label: str = "link",
    timeout_s: float = RENDER_TIMEOUT_S,
) -> bytes:
    """``fig`` as SVG or PNG bytes (PNG: ``scale`` x the export's pixel size), captioned (see
    ``export_figure``). ExportUnavailable (one line) when static export cannot run here."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"fmt must be 'svg' or 'png', not {fmt!r}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, not {scale!r}")
    if problem := static_export_problem():
        raise ExportUnavailable(problem)
    out = export_figure(fig, caption=caption, link=link, width=width, height=height, link_label=link_label)
    opts = dict(format=fmt, width=out.layout.width, height=out.layout.height, scale=scale if fmt == "png" else 1)
    raw = _BROWSER.render(out.to_plotly_json(), opts, timeout_s)
    return normalise_svg(raw) if fmt == "svg" else normalise_png(raw)


def export_html(
    fig: go.Figure,
    *,
    caption: str,
    link: str | None = None,
    width: int = DEFAULT_WIDTH,
    height: int | None = None,
    link_label: str = "link",
    title: str | None = None,
) -> bytes:
    """``fig`` as one HTML file that needs no network: plotly.js (~4.7 MB) is embedded. Captioned
    like the images; deterministic (a fixed div id, no timestamps)."""
    out = export_figure(fig, caption=caption, link=link, width=width, height=height, link_label=link_label)
    page = out.to_html(
        include_plotlyjs=True, include_mathjax=False, full_html=True, div_id=HTML_DIV_ID, config={"displaylogo": False}
    )
    name = title or re.sub(r"<[^>]+>", "", out.layout.title.text or "pykv figure")
    charset = '<meta charset="utf-8" />'
    page = page.replace(charset, f"{charset}\n    <title>{html.escape(name)}</title>", 1)
    return page.encode("utf-8")
