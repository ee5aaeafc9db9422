"""A lesson's Markdown made breakable (pykv.ui.safe_text.breakable): a long identifier may end a line only after
its ``:``, ``_`` or ``.`` (a <wbr> there, no character added), and the HTML the page allows for it is only those
<wbr>s and the <code> elements around them: nothing else of the lesson's, or of a value filled into it, renders as
HTML. tests/e2e/test_lesson_browser.py looks at a learner's 1280 px column."""

from __future__ import annotations

import re

from pykv.ui.safe_text import breakable


def tags(html: str) -> set[str]:
    return set(re.findall(r"<(/?\w+)", html))


def test_a_long_identifier_breaks_after_its_separators_only():
    line = "- :green[✓] metric.pykv:num_preemptions_total equals 0 — got `0`"
    assert breakable(line) == (
        "- :green[✓] metric.<wbr>pykv:<wbr>num_<wbr>preemptions_<wbr>total equals 0 — got `0`"
    )  # the colour directive and a short code span as they were
    assert breakable("req_a and block.a.3 stay whole") == "req_a and block.a.3 stay whole"


def test_a_code_span_naming_one_becomes_code_with_break_points():
    out = breakable("the counter `vllm:external_prefix_cache_hits_total` = 3, `x < y`")
    assert "<code>vllm:<wbr>external_<wbr>prefix_<wbr>cache_<wbr>hits_<wbr>total</code>" in out
    assert out.endswith("`x < y`")  # no identifier: Markdown's own code span, which shows "<" as text
    # the text is the text: no character added, a copy of the name is the name
    assert re.sub(r"<wbr>|</?code>", "", out) == "the counter vllm:external_prefix_cache_hits_total = 3, `x < y`"


def test_no_html_of_the_lesson_survives():
    hostile = "<img src=x onerror=alert(1)> `<script>pykv:num_preemptions_total</script>` <b>bold</b>"
    assert tags(breakable(hostile)) <= {"wbr", "code", "/code"}
    assert "&lt;script&gt;" in breakable(hostile)  # escaped inside the <code> it made


def test_fenced_code_and_link_targets_are_kept_verbatim():
    fence = "```\nkeep <this> pykv:num_preemptions_total\n```"
    assert breakable(f"before\n{fence}\nafter") == f"before\n{fence}\nafter"
    assert breakable("[the metric](https://example.org/pykv:num_preemptions_total)") == (
        "[the metric](https://example.org/pykv:num_preemptions_total)"
    )
