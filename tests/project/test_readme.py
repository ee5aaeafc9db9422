"""The README's two set-up commands are the ones CI runs and the CLI accepts."""

from pathlib import Path

ROOT = Path(__file__).parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_exactly_two_commands_and_ci_runs_the_test_one():
    head = (ROOT / "README.md").read_text().split("```bash\n", 1)[0]
    assert len(head.splitlines()) <= 4, "the commands must come first"
    start, test = readme_commands()
    assert "pip install -r requirements.txt" in start and "pip install -r requirements.txt" in test
    ci_lines = [line for line in (ROOT / ".ci/run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci_lines[-1] == test
