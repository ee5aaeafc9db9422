"""pykv lab: `streamlit run app.py`. A router only; pages live in pykv/ui."""

import streamlit as st

from pykv.ui import about, placeholders, playground

st.set_page_config(page_title="pykv lab", page_icon=":material/grid_view:", layout="wide")
st.navigation([
    st.Page(playground.render, title="Playground", icon=":material/grid_view:", url_path="playground", default=True),
    st.Page(placeholders.sweep, title="Sweep", icon=":material/tune:", url_path="sweep"),
    st.Page(placeholders.lessons, title="Lessons", icon=":material/school:", url_path="lessons"),
    st.Page(about.render, title="About", icon=":material/info:", url_path="about"),
]).run()
