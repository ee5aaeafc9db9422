# The common commands (the manual's Developing page, docs/develop/index.md). Run inside the virtual environment.
.PHONY: check docs test fast quick bench screenshots app

check:
	ruff check . && ruff format --check . && lint-imports && mypy

docs:
	mkdocs build --strict

test:
	python -m pytest -n 2 --dist loadfile --durations=25

fast:
	python -m pytest -n 2 --dist loadfile --ignore=tests/e2e

quick:
	python -m pytest -n 2 --dist loadfile -m "not slow"

bench:
	python -m bench.bench_vs_hf

screenshots:
	PYKV_WRITE_SCREENSHOTS=1 python -m pytest tests/e2e/test_manual_screenshots.py

app:
	streamlit run app.py
