"""The app's pages by URL path, as app.py routes them, so a page can send the session to another
(``st.switch_page(pages.page("playground"))``) without importing it (pages import each other's helpers)."""

from __future__ import annotations

URL_PATHS = ("playground", "sweep", "lessons", "server", "about")  # app.py's pages (each served at its own path)
_ROUTED: dict = {}  # url path -> st.Page; written by app.py on every run (the same pages each time)


def routed(by_path: dict) -> list:
    """Remember app.py's pages (url path -> st.Page) and return them for st.navigation."""
    if tuple(by_path) != URL_PATHS:  # the server serves a deep link to each page (deep_links): the same list
        raise ValueError(f"app.py routes {tuple(by_path)}, but routes.URL_PATHS names {URL_PATHS}")
    _ROUTED.update(by_path)
    return list(by_path.values())


def page(url_path: str):
    """The page app.py routes at ``url_path`` (e.g. "lessons")."""
    try:
        return _ROUTED[url_path]
    except KeyError:
        raise ValueError(f"no page {url_path!r} is routed (app.py routes the pages)") from None


def url_paths() -> set[str]:
    """The url paths app.py routes (a browser's address may end in one)."""
    return set(_ROUTED)
