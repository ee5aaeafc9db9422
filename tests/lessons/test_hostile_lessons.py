"""Hostile and careless lesson files (issue 12, rows 17-21 and more): each gives one short, one-line
LessonError naming the file (and the field where there is one), and ``read_course`` reports it beside the lessons
that load, never raising. A hostile file that comes in sizes is refused, and a large legal lesson or odd narration
loads, in time that grows no faster than its size (tests/growth.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from growth import assert_growth, raising

from pykv.lessons import LessonError, load_lesson
from pykv.lessons.course.loader import read_course
from pykv.lessons.format.limits import (
    MAX_ACTIONS_PER_STEP,
    MAX_FIELD_CHARS,
    MAX_FILE_BYTES,
    MAX_LESSON_STEPS,
    MAX_PROBLEM_CHARS,
    MAX_REQUESTS,
    MAX_SIDE_RUNS,
    MAX_TITLE_CHARS,
    MAX_YAML_DEPTH,
)
from pykv.lessons.format.step_blocks import Check

REQUESTS = '  requests:\n    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}\n'


def front(
    extra: str = "",
    *,
    lesson_id: str = "hostile",
    config: str = "  num_gpu_blocks: 12\n  block_size: 4\n",
    workload: str = REQUESTS,
    seed: str = "0",
) -> str:
    return (
        f"id: {lesson_id}\ntitle: Hostile\nsummary: A lesson someone sent.\nseed: {seed}\nconfig:\n{config}"
        f"workload:\n{workload}{extra}"
    )


def step(actions: str = "- step: 1\n", expect: str = "", narration: str = "Narration.", title: str = "The step") -> str:
    text = f"## {title}\n\n{narration}\n\n```actions\n{actions}```\n"
    return text + (f"\n```expect\n{expect}```\n" if expect else "")


def lesson(head: str = "", body: str = "") -> str:
    return f"---\n{head or front()}---\n\n{body or step()}"


S = "steps[0] (The step)"
BOMB = "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(9))
BOMB = "a: &a [" + ", ".join(['"lol"'] * 9) + "]\n" + BOMB  # 9**10 "lol"s from 10 lines
EXPECT_A = "- that: request.a.status\n  equals: "
Content = str | bytes | Callable[[], str | bytes]

# (id, file content, the field named ("" = the file as a whole), words in the problem)
CASES: list[tuple[str, Content, str, str]] = [
    # ---- the rows ----
    (
        "row17-yaml-nested-50000-deep-front-matter",
        lambda: lesson(front(extra="notes: " + "[" * 50_000 + "]" * 50_000 + "\n")),
        "front matter",
        f"nested more than {MAX_YAML_DEPTH} levels deep",
    ),
    (
        "row17-yaml-nested-50000-deep-in-expect",
        lambda: lesson(body=step(expect=EXPECT_A + "[" * 50_000 + "]" * 50_000 + "\n")),
        S + ".expect",
        "nested more than",
    ),
    (
        "row17-block-yaml-nested-deep",
        lambda: lesson(body=step(expect=EXPECT_A + "\n" + "".join("  " * i + "- \n" for i in range(1, 400)))),
        S + ".expect",
        "nested more than",
    ),
    (
        "row18-preset-n-huge",
        lesson(front(workload="  preset: burst\n  args: {n: 100000000}\n")),
        "workload.args.n",
        f"use 1 to {MAX_REQUESTS}",
    ),
    (
        "row18-preset-max-tokens-huge",
        lesson(front(workload="  preset: storm\n  args: {max_tokens: 100000000}\n")),
        "workload.args.max_tokens",
        "out of a lesson's range",
    ),
    (
        "row18-preset-every-huge",
        lesson(front(workload="  preset: spread\n  args: {every: 1000000000}\n")),
        "workload.args.every",
        "out of a lesson's range",
    ),
    (
        "row19-config-num-gpu-blocks-huge",
        lesson(front(config="  num_gpu_blocks: 100000000\n")),
        "config.num_gpu_blocks",
        "above the app's limit of 512",
    ),
    (
        "row19-configure-num-cpu-blocks-huge",
        lesson(body=step("- configure: {num_cpu_blocks: 1000000000}\n")),
        S + ".actions[0].configure.num_cpu_blocks",
        "above the app's limit",
    ),
    (
        "row19-run-config-max-num-seqs-huge",
        lesson(body=step("- run: {name: r, config: {max_num_seqs: 100000}}\n")),
        S + ".actions[0].run.config.max_num_seqs",
        "above the app's limit",
    ),
    (
        "row19-config-swap-space-huge",
        lesson(front(config="  swap_space: 1000.0\n")),
        "config.swap_space",
        "above the app's limit",
    ),
    (
        "row19-config-float-for-blocks",
        lesson(front(config="  num_gpu_blocks: 1.0e+12\n")),
        "config.num_gpu_blocks",
        "above the app's limit",
    ),
    (
        "row20-alias-bomb-in-front-matter",
        lesson(front(extra="bomb:\n" + "".join("  " + line + "\n" for line in BOMB.splitlines()))),
        "front matter",
        "anchors and aliases",
    ),
    (
        "row20-alias-bomb-in-expect-operand",
        lambda: lesson(body=step(expect=EXPECT_A + "{" + ", ".join(BOMB.splitlines()) + "}\n")),
        S + ".expect",
        "anchors and aliases",
    ),
    (
        "row20-a-single-alias",
        lesson(front(config="  num_gpu_blocks: &n 12\n  max_num_seqs: *n\n")),
        "front matter",
        "anchors and aliases",
    ),
    (
        "row21-2.5-MB-250000-actions",
        lambda: lesson(body=step("- step: 1\n" * 250_000)),
        "",
        f"at most {MAX_FILE_BYTES // 1024} KB",
    ),
    (
        "row21-25000-actions-in-one-step-under-the-size-cap",
        lambda: lesson(body=step("- step: 1\n" * 25_000)),
        S + ".actions",
        "too many YAML values",
    ),
    (
        "row21-51-actions-in-one-step",
        lesson(body=step("- step: 1\n" * (MAX_ACTIONS_PER_STEP + 1))),
        S + ".actions",
        f"at most {MAX_ACTIONS_PER_STEP}",
    ),
    (
        "row21-51-checks-in-one-step",
        lesson(body=step(expect=(EXPECT_A + "running\n") * 51)),
        S + ".expect",
        "at most 50",
    ),
    (
        "row21-101-steps",
        lesson(body="".join(step(title=f"Step {i}") for i in range(MAX_LESSON_STEPS + 1))),
        f"steps[{MAX_LESSON_STEPS}]",
        f"more than {MAX_LESSON_STEPS} steps",
    ),
    (
        "row21-yaml-values-over-the-lesson-budget",
        lambda: lesson(
            body="".join(step(expect=EXPECT_A + "[" + "1, " * 790 + "1]\n", title=f"S{i}") for i in range(10))
        ),
        "steps[6] (S6).expect",
        "too many YAML values",
    ),
    # ---- more hostile or careless files ----
    ("not-utf-8", lesson(front(extra="# caf\xe9\n")).encode("latin-1"), "", "not UTF-8"),
    ("binary-file", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64, "", "not UTF-8"),
    ("nul-bytes-in-text", lesson(body=step(narration="a\x00b")), "", "NUL"),
    ("empty-file", "", "front matter", "must start with a '---' line"),
    (
        "huge-single-line-narration",
        lambda: lesson(body=step(narration="x" * 200_000)),
        S + ".narration",
        "at most 20000",
    ),
    ("step-title-1-MB", lambda: lesson(body=step(title="T" * 1_000_000)), "", "a lesson file has at most"),
    (
        "step-title-100-KB",
        lambda: lesson(body=step(title="T" * 100_000)),
        "steps[0] (TTTT",
        f"at most {MAX_TITLE_CHARS}",
    ),
    (
        "lesson-title-long",
        lesson(front().replace("title: Hostile", "title: " + "t" * 5000)),
        "title",
        "at most 200 characters",
    ),
    (
        "check-operand-100k-element-list",
        lambda: lesson(body=step(expect=EXPECT_A + "[" + "0," * 100_000 + "0]\n")),
        S + ".expect",
        "too many YAML values",
    ),
    (
        "yaml-value-over-20000-chars",
        lambda: lesson(body=step(expect=EXPECT_A + "x" * 21_000 + "\n")),
        S + ".expect",
        "characters; at most 20000",
    ),
    (
        "hex-int-with-8000-digits",
        lambda: lesson(front(config="  max_model_len: 0x" + "F" * 8000 + "\n")),
        "config.max_model_len",
        "far too large",
    ),
    ("int-with-5000-digits", lambda: lesson(front(seed="9" * 5000)), "front matter", "not valid YAML"),
    (
        "tabs-in-front-matter",
        lesson(front().replace("  num_gpu_blocks", "\tnum_gpu_blocks")),
        "front matter",
        "not valid YAML",
    ),
    ("key-written-twice-in-front-matter", lesson(front(extra="title: Again\n")), "front matter", "written twice"),
    ("unhashable-key", lesson(front(extra="{[1, 2]: x}: 3\n")), "front matter", "a key must be text or a number"),
    (
        "request-id-used-twice",
        lesson(front(workload=REQUESTS + '    - {request_id: a, prompt: "x", max_tokens: 2}\n')),
        "workload.requests[1].request_id",
        "used twice",
    ),
    (
        "run-action-with-huge-workload",
        lesson(body=step("- run: {name: r, workload: {preset: storm, args: {n: 100000000, max_tokens: 4}}}\n")),
        S + ".actions[0].run.workload.args.n",
        "out of a lesson's range",
    ),
    (
        "too-many-side-runs",
        lesson(body=step("".join(f"- run: {{name: r{i}}}\n" for i in range(MAX_SIDE_RUNS + 1)))),
        S + f".actions[{MAX_SIDE_RUNS}].run",
        f"at most {MAX_SIDE_RUNS} run actions",
    ),
    (
        "too-many-explicit-requests",
        lesson(
            front(
                workload="  requests:\n"
                + "".join(f"    - {{request_id: r{i}, prompt: x, max_tokens: 2}}\n" for i in range(MAX_REQUESTS + 1))
            )
        ),
        "workload.requests",
        f"at most {MAX_REQUESTS}",
    ),
    (
        "too-many-requests-with-add-request",
        lesson(
            body="".join(
                step(
                    "".join(
                        f"- add_request: {{request_id: r{j}{i}, prompt: x, max_tokens: 2}}\n"
                        for i in range(MAX_REQUESTS // 2)
                    ),
                    title=f"S{j}",
                )
                for j in range(2)
            )
        ),
        f"steps[1] (S1).actions[{MAX_REQUESTS // 2 - 1}].add_request",
        f"at most {MAX_REQUESTS} requests",
    ),
    (
        "explicit-request-max-tokens-huge",
        lesson(front(workload=REQUESTS.replace("max_tokens: 8", "max_tokens: 60000"))),
        "workload.requests[0].max_tokens",
        "above a lesson's limit",
    ),
    (
        "explicit-request-arrival-far-away",
        lesson(front(workload=REQUESTS.replace("max_tokens: 8", "max_tokens: 8, arrival_step: 90000"))),
        "workload.requests[0].arrival_step",
        "above a lesson's limit",
    ),
    (
        "add-request-max-tokens-huge",
        lesson(body=step("- add_request: {request_id: z, prompt: x, max_tokens: 1000000000000}\n")),
        S + ".actions[0].add_request.max_tokens",
        "less than or equal to 1024",
    ),
    (
        "add-request-prompt-long",
        lambda: lesson(body=step("- add_request: {request_id: z, prompt: " + "x" * 17_000 + ", max_tokens: 2}\n")),
        S + ".actions[0].add_request.prompt",
        "at most 16384 characters",
    ),
    (
        "tokenize-text-long",
        lambda: lesson(body=step("- tokenize: {name: t, a: " + "y" * 17_000 + ", b: z}\n")),
        S + ".actions[0].tokenize.a",
        "at most 16384 characters",
    ),
    (
        "preset-n-is-text",
        lesson(front(workload="  preset: burst\n  args: {n: many}\n")),
        "workload.args.n",
        "must be a whole number",
    ),
    (
        "preset-n-is-true",
        lesson(front(workload="  preset: burst\n  args: {n: true}\n")),
        "workload.args.n",
        "must be a whole number",
    ),
    ("negative-seed", lesson(front(seed="-1")), "seed", "greater than or equal to 0"),
    ("seed-2-to-the-70", lesson(front(seed=str(2**70))), "seed", "less than or equal to 4294967295"),
    ("seed-is-a-bool", lesson(front(seed="true")), "seed", "valid integer"),
    (
        "at-least-nan",
        lesson(body=step(expect="- that: request.a.num_output_tokens\n  at_least: .nan\n")),
        S + ".expect[0].at_least",
        "finite number",
    ),
    (
        "times-infinite",
        lesson(
            body=step(expect="- that: request.a.num_output_tokens\n  at_least: {value_of: engine.step, times: .inf}\n")
        ),
        S + ".expect[0].at_least.times",
        "finite number",
    ),
    (
        "that-path-long",
        lambda: lesson(body=step(expect="- that: request.a." + "x" * 5000 + "\n  equals: 1\n")),
        S + ".expect[0].that",
        "at most 200 characters",
    ),
    (
        "unknown-config-key-1000-chars",
        lambda: lesson(front(config="  " + "k" * 1000 + ": 1\n")),
        "config.kkkk",
        "unknown EngineConfig field",
    ),
    (
        "unknown-action-key-1000-chars",
        lambda: lesson(body=step("- " + "q" * 1000 + ": 1\n")),
        S + ".actions[0].qqq",
        "unknown action",
    ),
    (
        "why-is-a-huge-list",
        lambda: lesson(body=step(expect=EXPECT_A + "running\n  why: [" + "1, " * 500 + "1]\n")),
        S + ".expect[0].why",
        "must be text",
    ),
    (
        "template-path-with-5000-segments",
        lambda: lesson(body=step(narration="{{ request.a.block_table" + ".0" * 5000 + " }}")),
        S + ".narration",
        "at most 200",
    ),
    ("front-matter-is-a-list", "---\n- a\n- b\n---\n\n" + step(), "front matter", "must be a YAML mapping"),
    ("key-8000-chars", lambda: lesson(front(config="  " + "k" * 8000 + ": 1\n")), "front matter", "not valid YAML"),
    ("front-matter-never-closes", lambda: "---\n" + front() + "x: y\n" * 20_000, "front matter", "no closing '---'"),
]


def _content(content: Content) -> str | bytes:
    return content() if callable(content) else content


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def _assert_short_one_line(error: LessonError, name: str) -> str:
    message = str(error)
    assert "\n" not in message and "\r" not in message, message[:500]
    assert len(message) <= len(error.path) + MAX_FIELD_CHARS + MAX_PROBLEM_CHARS + 40, len(message)
    assert name in error.path, message[:500]
    assert "Traceback" not in message
    return message


def test_the_good_lesson_of_the_catalogue_loads(tmp_path):
    assert load_lesson(_write(tmp_path / "01-ok.md", lesson())).id == "hostile"


@pytest.mark.parametrize("content, field, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hostile_lesson_is_one_short_lesson_error(tmp_path, content, field, words):
    path = _write(tmp_path / "02-hostile.md", _content(content))
    with pytest.raises(LessonError) as info:
        load_lesson(path)
    message = _assert_short_one_line(info.value, "02-hostile.md")
    assert info.value.field.startswith(field), message[:500]
    assert words in info.value.problem, message[:500]

    # The same file in a course folder: reported, and the good lessons around it still load.
    _write(tmp_path / "01-first.md", lesson(front(lesson_id="first")))
    _write(tmp_path / "03-third.md", lesson(front(lesson_id="third")))
    lessons, problems = read_course(tmp_path)
    assert [lesson.id for lesson in lessons] == ["first", "third"]
    assert len(problems) == 1 and Path(problems[0].path).name == "02-hostile.md"
    _assert_short_one_line(problems[0], "02-hostile.md")


# The hostile files of CASES that come in sizes, as (file content of size n, n): refused at every size from n to 4n
HOSTILE_SIZES: dict[str, tuple[Callable[[int], str], int]] = {
    "yaml-nested-deep-front-matter": (lambda n: lesson(front(extra="notes: " + "[" * n + "]" * n + "\n")), 12_500),
    "yaml-nested-deep-in-expect": (lambda n: lesson(body=step(expect=EXPECT_A + "[" * n + "]" * n + "\n")), 12_500),
    "actions-past-the-size-cap": (lambda n: lesson(body=step("- step: 1\n" * n)), 62_500),
    "actions-under-the-size-cap": (lambda n: lesson(body=step("- step: 1\n" * n)), 6_000),
    "huge-single-line-narration": (lambda n: lesson(body=step(narration="x" * n)), 50_000),
    "check-operand-long-list": (lambda n: lesson(body=step(expect=EXPECT_A + "[" + "0," * n + "0]\n")), 25_000),
    "yaml-value-long": (lambda n: lesson(body=step(expect=EXPECT_A + "x" * n + "\n")), 21_000),
    "hex-int-many-digits": (lambda n: lesson(front(config="  max_model_len: 0x" + "F" * n + "\n")), 2_000),
    "template-path-many-segments": (
        lambda n: lesson(body=step(narration="{{ request.a.block_table" + ".0" * n + " }}")),
        1_250,
    ),
    "key-long": (lambda n: lesson(front(config="  " + "k" * n + ": 1\n")), 2_000),
    "front-matter-never-closes": (lambda n: "---\n" + front() + "x: y\n" * n, 5_000),
}


@pytest.mark.parametrize("content, size", HOSTILE_SIZES.values(), ids=HOSTILE_SIZES)
def test_a_hostile_lesson_is_refused_in_time_linear_in_its_size(tmp_path, content, size):
    def written(n: int) -> Path:
        return _write(tmp_path / f"02-hostile-{n}.md", content(n))

    assert_growth(written, raising(load_lesson, LessonError), size)


def test_read_course_reports_anything_a_loader_raises_as_a_lesson_error(tmp_path):
    for name in ("01-a.md", "02-b.md", "03-c.md", "04-d.md"):
        _write(tmp_path / name, lesson(front(lesson_id=name[3])))
    failures = {
        "02-b.md": RecursionError("maximum recursion depth exceeded"),
        "03-c.md": MemoryError(),
        "04-d.md": KeyError("x" * 100_000),
    }

    def load(path: Path):
        if path.name in failures:
            raise failures[path.name]
        return load_lesson(path)

    lessons, problems = read_course(tmp_path, load=load)
    assert [lesson.id for lesson in lessons] == ["a"]
    assert [Path(p.path).name for p in problems] == ["02-b.md", "03-c.md", "04-d.md"]
    assert "RecursionError" in problems[0].problem and "MemoryError" in problems[1].problem
    for problem in problems:
        _assert_short_one_line(problem, problem.path)


def test_a_directory_or_a_missing_file_named_like_a_lesson(tmp_path):
    (tmp_path / "01-folder.md").mkdir()
    _write(tmp_path / "02-ok.md", lesson())
    lessons, problems = read_course(tmp_path)
    assert [lesson.id for lesson in lessons] == ["hostile"]
    assert len(problems) == 1 and "not a regular file" in problems[0].problem
    with pytest.raises(LessonError, match="no such lesson file"):
        load_lesson(tmp_path / "03-gone.md")


def test_a_file_that_grows_past_the_limit_is_not_read_whole(tmp_path):
    path = _write(tmp_path / "01-big.md", lesson() + "\n" + "x" * MAX_FILE_BYTES)
    with pytest.raises(LessonError, match="a lesson file has at most 256 KB") as info:
        load_lesson(path)
    assert info.value.field == ""


def test_crlf_old_mac_line_ends_and_a_byte_order_mark_are_fine(tmp_path):
    text = lesson(body=step(expect=EXPECT_A + "running\n"))
    for name, ending in (("01-crlf.md", "\r\n"), ("02-cr.md", "\r")):
        loaded = load_lesson(_write(tmp_path / name, text.replace("\n", ending)))
        assert loaded.steps[0].expect[0].operand == "running"
    assert load_lesson(_write(tmp_path / "03-bom.md", "\ufeff" + text)).id == "hostile"


def test_a_large_legal_lesson_loads_in_time_linear_in_its_steps(tmp_path):
    """The limits leave room: 100 steps with actions and checks, under the size and value budgets."""
    actions = "- step: 1\n" * 5
    expect = (EXPECT_A + "running\n") * 4

    def steps(n: int) -> Path:
        body = "".join(step(actions, expect, title=f"Step {i}") for i in range(n))
        return _write(tmp_path / f"01-big-{n}.md", lesson(body=body))

    path = steps(MAX_LESSON_STEPS)
    assert path.stat().st_size < MAX_FILE_BYTES
    loaded = load_lesson(path)
    assert len(loaded.steps) == MAX_LESSON_STEPS and len(loaded.steps[-1].actions) == 5
    assert_growth(steps, load_lesson, MAX_LESSON_STEPS // 4)


def test_messages_echo_values_short(tmp_path):
    """A value echoed in a message is cut short: a check's description, an operand's repr."""
    check = Check(that="request.a.text", op="equals", operand="z" * 100_000)
    assert len(check.describe()) < 400
    path = _write(tmp_path / "01-x.md", lesson(body=step("- step: [" + ", ".join(["x" * 500] * 10) + "]\n")))
    with pytest.raises(LessonError) as info:
        load_lesson(path)
    assert len(info.value.problem) < 200 and "number of engine steps" in info.value.problem


def test_parse_lesson_bounds_text_given_directly():
    from pykv.lessons import parse_lesson

    with pytest.raises(LessonError, match="a lesson file has at most 256 KB") as info:
        parse_lesson(lesson(body=step(narration="x" * 2_000_000)), "given.md")
    _assert_short_one_line(info.value, "given.md")
    # bounded before it is parsed: 10x the text past the size bound is refused as fast
    assert_growth(
        lambda n: lesson(body=step(narration="x" * n)),
        raising(lambda text: parse_lesson(text, "given.md"), LessonError),
        MAX_FILE_BYTES,
        factor=10,
        max_ratio=3,
    )


def twelve_steps(narration: Callable[[int], str]) -> Callable[[int], str]:
    """A lesson of 12 steps, each narrated ``narration(n)``."""
    return lambda n: lesson(body="".join(step(narration=narration(n), title=f"S{i}") for i in range(12)))


# (narration of size n, n): each loads at 4n, under the narration and file bounds
ODD_NARRATION = {
    "open-braces": (lambda n: "{{" * n, 2_499),  # was 40 s at 9999: a quadratic template regex
    "an-open-template": (lambda n: "{{ " + "a" * n, 4_750),
    "many-templates": (lambda n: "{{ engine.step }}" * n, 275),
    "many-fences": (lambda n: "```\n" * n + "text", 500),
}


@pytest.mark.parametrize("narration, size", ODD_NARRATION.values(), ids=ODD_NARRATION)
def test_odd_but_valid_narration_loads_in_time_linear_in_its_length(tmp_path, narration, size):
    def written(n: int) -> Path:
        return _write(tmp_path / f"01-odd-{n}.md", twelve_steps(narration)(n))

    assert len(load_lesson(written(4 * size)).steps) == 12
    assert_growth(written, load_lesson, size)


@pytest.mark.parametrize(
    "narration",
    [
        "See ![the grid](https://tracker.example/pixel.png).",
        "See ![x](//tracker.example/p.png)",
        "![x][pic]\n\n[pic]: https://tracker.example/p.png",
        '<img src="https://tracker.example/p.png">',
        "![x](data:image/png;base64,AAAA)",
    ],
)
def test_a_remote_image_in_a_lesson_is_refused_at_load(tmp_path, narration):
    path = _write(tmp_path / "02-remote.md", lesson(body=step(narration=narration)))
    with pytest.raises(LessonError) as info:
        load_lesson(path)
    assert "lessons stay offline" in info.value.problem and "line " in info.value.problem


def test_links_and_local_images_still_load(tmp_path):
    narration = "Read [the docs](https://docs.vllm.ai) and ![grid](grid.png)."
    assert load_lesson(_write(tmp_path / "02-ok.md", lesson(body=step(narration=narration)))).id == "hostile"
