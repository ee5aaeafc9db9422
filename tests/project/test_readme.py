"""The README: its two set-up commands come first and are the ones CI runs (the test one builds the manual too); it
stays short (a newcomer's first screen says what pykv is and where to read on), its links lead somewhere, and it
holds no dated or measured figure (those live in bench/results/ and the manual cites them)."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
MAX_LINES = 150
FIRST_SCREEN = 40  # lines


def readme_commands() -> list[str]:
    text = README.read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_exactly_two_commands_and_ci_runs_the_test_one():
    head = README.read_text().split("```bash\n", 1)[0]
    assert len(head.splitlines()) <= 4, "the commands must come first"
    start, test = readme_commands()
    assert "pip install -r requirements.txt" in start and "pip install -r requirements.txt" in test
    assert start.endswith("streamlit run app.py")
    ci_lines = [line for line in (ROOT / ".ci/run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci_lines[-1] == test
    checks = ("ruff check .", "ruff format --check .", "lint-imports", "mypy", "mkdocs build --strict", "pytest")
    assert all(check in test for check in checks), "CI lints, checks layers and types, builds the manual, tests"


def test_the_manual_gives_the_same_test_command():
    page = (ROOT / "docs" / "develop" / "index.md").read_text()
    assert page.split("```bash\n", 1)[1].split("```", 1)[0].strip() == readme_commands()[1]


def test_readme_is_short_and_its_first_screen_says_what_it_is_and_where_to_read_on():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md is {len(lines)} lines: move the detail into docs/"
    first = "\n".join(lines[:FIRST_SCREEN])
    assert "pykv is" in first and re.search(r"\]\(docs/[^)]+\.md\)", first), "what it is, and a link into the manual"


def test_readme_links_lead_to_files():
    for target in re.findall(r"\]\(([^)#\s]+)", README.read_text()):
        if not re.match(r"[a-z]+://", target):
            assert (ROOT / target).exists(), f"README.md links to {target}, which is not there"


def test_readme_holds_no_dated_or_measured_figures():
    text = README.read_text()
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "a dated figure belongs in bench/results/ and the manual"
    assert "bench/results/" not in text
    measured = re.findall(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|s|GB/s|MiB|GiB|tok/s|%)(?=[\s,.;)])", text)
    assert not measured, f"measured figures in the README: {measured}"
