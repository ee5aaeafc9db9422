"""The course's cheat sheet: one printable page (tuning order, symptoms and fixes, the knobs), each row
linked to the lesson step that shows it. ``cheatsheet_html`` builds it; no Streamlit here."""

from pykv.cheatsheet.page import cheatsheet_html, cited_lessons

__all__ = ["cheatsheet_html", "cited_lessons"]
