"""Helpers shared by the tests and the benchmarks: a streamlit server, headless Chromium, the projector
measurement, small checkpoints made on the fly. Installed with the project (pip install -e .), never by the app."""
