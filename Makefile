# The common commands (README, "Developing"). Run inside the virtual environment.
.PHONY: check test fast quick bench app

check:
	ruff check . && ruff format --check . && lint-imports && mypy

test:
	python -m pytest -n 2 --dist loadfile --durations=25

fast:
	python -m pytest -n 2 --dist loadfile --ignore=tests/e2e

quick:
	python -m pytest -n 2 --dist loadfile -m "not slow"

bench:
	python -m bench.bench_vs_hf

app:
	streamlit run app.py
