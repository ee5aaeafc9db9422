"""The manual (docs/, built by MkDocs): it builds in strict mode, opens offline (no font, script or stylesheet from
another host), its reference pages hold everything the code's tables hold, and its pictures are the ones the
browser test takes."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from docs.hooks import cli_page, manual, results_page, table_pages
from testkit.manual_shots import SHOTS

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
IMAGES_BUDGET = 600 * 1024  # a few hundred KB of pictures in all
FETCHING = {
    "link": "href",
    "script": "src",
    "img": "src",
    "iframe": "src",
    "source": "src",
    "video": "src",
    "audio": "src",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    return out


class _Fetches(HTMLParser):
    """Every URL a page makes the browser fetch by itself (stylesheets, scripts, images, frames)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attr = FETCHING.get(tag)
        values = dict(attrs)
        if attr and values.get(attr):
            self.urls.append(values[attr])
        if values.get("srcset"):
            self.urls += [part.split()[0] for part in values["srcset"].split(",")]


def _remote(url: str) -> bool:
    return bool(re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", url, re.I)) and not url.startswith("data:")


def test_the_site_fetches_nothing_from_another_host(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 18
    for page in pages:
        parser = _Fetches()
        parser.feed(page.read_text())
        remote = [url for url in parser.urls if _remote(url)]
        assert not remote, f"{page.relative_to(site)} fetches {remote}"
        assert "fonts.googleapis" not in page.read_text() and "fonts.gstatic" not in page.read_text()
    for sheet in site.rglob("*.css"):
        text = sheet.read_text()
        imports = re.findall(r"@import\s+(?:url\()?['\"]?([^'\")\s;]+)", text)
        urls = re.findall(r"url\(\s*['\"]?([^'\")]+)", text)
        assert not [u for u in imports + urls if _remote(u)], f"{sheet.name} fetches from another host"


def test_the_reference_pages_hold_everything_the_code_tables_hold(site):
    from pykv.border.config import knobs
    from pykv.border.metric_names import METRICS
    from pykv.cli.main import build_parser

    knob_page = (site / "reference" / "knobs.html").read_text()
    assert all(f"<code>{k.name}</code>" in knob_page for k in knobs())
    metric_page = (site / "reference" / "metrics.html").read_text()
    assert all(f"<code>{m.name}</code>" in metric_page for m in METRICS)
    cli = (site / "reference" / "cli.html").read_text()
    commands, _ = cli_page._subcommands(build_parser())
    for name, parser in commands.items():
        assert f'id="{name}"' in cli, name
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue  # every command has --help
            for flag in action.option_strings:
                assert f"<code>{flag}</code>" in cli, (name, flag)
    api = (site / "reference" / "python-api.html").read_text()
    assert all(name in api for name in ("LLMEngine", "EngineConfig", "SamplingParams", "StepReport", "Snapshot"))
    benchmarks = (site / "benchmarks.html").read_text()
    assert all(f'id="{p.stem}"' in benchmarks for p in (ROOT / "bench" / "results").glob("*.txt"))


def test_the_included_guides_are_in_the_manual(site):
    lesson_guide = (site / "teach" / "writing-a-lesson.html").read_text()
    assert "A complete example" in lesson_guide and "pykv:include" not in lesson_guide
    oracle = (site / "fidelity" / "oracle.html").read_text()
    assert "build_venvs.py" in oracle
    unfilled = [p.name for p in site.rglob("*.html") if "<!-- pykv:" in p.read_text()]
    assert not unfilled, f"markers the hook left: {unfilled}"


def test_an_unknown_marker_fails_the_build_and_include_moves_headings_outside_fences(tmp_path):
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="unknown marker"):
        manual.expand("<!-- pykv:no-such-table -->")
    (tmp_path / "x.md").write_text("# Title\n\n```markdown\n# not a heading\n```\n## Section\n")
    relative = os.path.relpath(tmp_path / "x.md", manual.ROOT)
    text = manual.include(f"{relative} shift=1")
    assert text.splitlines()[0] == "## Title" and "# not a heading" in text.splitlines() and "### Section" in text


def test_a_results_file_says_its_command_date_machine_and_load(tmp_path):
    path = tmp_path / "2026-12-06-cpu-clicks.txt"
    path.write_text(
        "$ python bench/bench_clicks.py --clicks 50 --save x.txt\n"
        "# 2026-12-06 03:09 · shipped model · 2 cores shared by server and clients\n"
        "other sessions clicks ok     p50   load 1m (start -> end)\n"
        "             0   50/50     0.23s  0.48 -> 0.99\n"
    )
    result = results_page.read_result(path, ["bench_clicks", "bench_click_cost"])
    assert result.script == "bench_clicks" and result.date == "2026-12-06"
    assert result.machine == "CPU, 2 cores, shared with other work" and result.load == "0.48 -> 0.99"
    assert result.command == "python bench/bench_clicks.py --clicks 50 --save x.txt"


def test_the_course_table_lists_every_lesson():
    from pykv.lessons.course.loader import load_course

    text = table_pages.course_markdown()
    assert all(f"`{lesson.id}`" in text for lesson in load_course())


def _image_links() -> dict[str, set[str]]:
    links: dict[str, set[str]] = {}
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)", page.read_text()):
            links.setdefault((page.parent / target).resolve().name, set()).add(str(page.relative_to(DOCS)))
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)", readme):
        assert (ROOT / target).is_file(), f"README.md shows {target}, which is not there"
        links.setdefault(Path(target).name, set()).add("README.md")
    return links


def test_the_pictures_are_the_ones_the_browser_test_takes_and_stay_small():
    shown = _image_links()
    taken = {f"{shot.name}.png" for shot in SHOTS}
    assert set(shown) <= taken, f"pictures no shot in testkit/manual_shots.py takes: {set(shown) - taken}"
    assert taken <= set(shown), f"shots the manual does not show: {taken - set(shown)}"
    files = sorted((DOCS / "img").glob("*.png"))
    assert {p.name for p in files} == taken, "docs/img holds exactly the manual's pictures"
    assert sum(p.stat().st_size for p in files) <= IMAGES_BUDGET, "optimise the pictures (make screenshots)"
