"""Streamlit pages and widgets (the only package, with app.py, that imports streamlit)."""

from pathlib import Path

ICON = str(Path(__file__).with_name("icon.svg"))  # the pages' icon, shipped: Streamlit fetches a :material: one
