"""The lesson loader: good files parse into Lessons; every malformed file gives one clear message
naming the file and the field (a LessonError, never a traceback)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pykv.lessons import LessonError, load_course, load_lesson
from pykv.lessons.course.loader import read_course
from pykv.lessons.format.step_blocks import (
    AddRequest,
    Check,
    Configure,
    RunAction,
    RunUntil,
    StepAction,
    Tokenize,
    ValueOf,
)

FIXTURE = Path(__file__).parents[1] / "lesson_fixtures" / "example.md"

FRONT = """\
id: small
title: Small
summary: A small lesson.
seed: 0
config:
  num_gpu_blocks: 12
  block_size: 4
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}
"""
BODY = """\
## First

Some narration.

```actions
- step: 1
```

```expect
- that: request.a.status
  equals: running
```
"""


def write(tmp_path: Path, front: str = FRONT, body: str = BODY, name: str = "01-small.md") -> Path:
    path = tmp_path / name
    path.write_text(f"---\n{textwrap.dedent(front)}---\n\n{textwrap.dedent(body)}")
    return path


def error_for(tmp_path: Path, front: str = FRONT, body: str = BODY) -> str:
    path = write(tmp_path, front, body)
    with pytest.raises(LessonError) as info:
        load_lesson(path)
    message = str(info.value)
    assert message.startswith(str(path)) or message.startswith("01-small.md") or "01-small.md" in message.split(":")[0]
    assert "Traceback" not in message
    return message


S = "steps[0] (The step)"  # the field prefix of step_with's step


def step_with(actions: str = "- step: 1\n", expect: str = "", narration: str = "Narration.") -> str:
    body = f"## The step\n\n{narration}\n\n```actions\n{actions}```\n"
    return body + (f"\n```expect\n{expect}```\n" if expect else "")


# ---- good files ---------------------------------------------------------------------------------


def test_the_example_lesson_loads_with_every_part():
    lesson = load_lesson(FIXTURE)
    assert (lesson.id, lesson.title, lesson.seed) == ("example-lesson", "An example lesson", 0)
    assert lesson.config == {"num_gpu_blocks": 12, "block_size": 4, "max_num_seqs": 4}
    assert [s.title for s in lesson.steps] == [
        "Prefill writes every prompt token",
        "Run to the first preemption",
        "Add a request, then run to the end",
    ]
    first, second, third = lesson.steps
    assert first.actions == [StepAction(count=1)] and first.notes == "Ask the room how many blocks that is."
    assert "```python" in first.narration and "```actions" not in first.narration and "```expect" not in first.narration
    assert first.expect[0] == Check(
        that="request.a.num_computed_tokens",
        op="equals",
        operand=ValueOf(value_of="request.a.num_prompt_tokens"),
        why="prefill computed K/V for every prompt token",
    )
    assert second.actions == [RunUntil(until="preemption")] and second.notes is None
    kinds = [type(a) for a in third.actions]
    assert kinds == [AddRequest, RunUntil, RunAction, Tokenize]
    assert third.actions[2].config == {"num_gpu_blocks": 64}
    assert [r.request_id for r in lesson.build_workload().requests] == ["a", "b"]


def test_minimal_lesson_and_preset_request_ids(tmp_path):
    front = FRONT.replace(
        """  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}
""",
        "  preset: burst\n  args: {n: 3, max_tokens: 4}\n",
    )
    body = step_with(expect="- that: request.2.status\n  equals: running\n")
    lesson = load_lesson(write(tmp_path, front, body))
    assert [r.request_id for r in lesson.build_workload().requests] == ["0", "1", "2"]
    assert lesson.steps[0].expect[0].that == "request.2.status"


def test_actions_of_every_kind_parse(tmp_path):
    actions = """\
- step: 3
- run_until: end
- run_until: {that: queue.waiting.length, equals: 0}
- add_request: {request_id: z, prompt: "x = 1", max_tokens: 2, ignore_eos: true}
- configure: {vllm_profile: "v0.6", num_gpu_blocks: 8, preemption_mode: swap, num_cpu_blocks: 8}
- run: {name: r1, config: {num_gpu_blocks: 32}, workload: {preset: storm, args: {n: 2, max_tokens: 4}}}
- tokenize: {name: t1, a: "abc", b: "abd"}
"""
    expect = (
        "- that: run.r1.steps\n  at_least: 1\n- that: tokens.t1.a.length\n  greater_than: 0\n"
        "- that: request.z.status\n  not_equals: waiting\n"
    )
    step = load_lesson(write(tmp_path, body=step_with(actions, expect))).steps[0]
    assert step.actions[0] == StepAction(count=3)
    assert step.actions[2].until == Check(that="queue.waiting.length", op="equals", operand=0)
    assert step.actions[3] == AddRequest(request_id="z", prompt="x = 1", max_tokens=2, ignore_eos=True)
    assert step.actions[4] == Configure(
        changes={"vllm_profile": "v0.6", "num_gpu_blocks": 8, "preemption_mode": "swap", "num_cpu_blocks": 8}
    )
    assert step.actions[0].describe() == "step 3" and step.actions[5].describe() == "side run r1 with num_gpu_blocks=32"


def test_the_course_loads_in_file_order_and_refuses_a_repeated_id(tmp_path):
    write(tmp_path, name="02-b.md", front=FRONT.replace("id: small", "id: second"))
    write(tmp_path, name="01-a.md")
    (tmp_path / "README.md").write_text("not a lesson")
    assert [lesson.id for lesson in load_course(tmp_path)] == ["small", "second"]
    write(tmp_path, name="03-c.md")
    with pytest.raises(LessonError, match=r"03-c\.md: id: 'small' is already the id of .*01-a\.md"):
        load_course(tmp_path)
    assert load_course(tmp_path / "nothing-here") == []


def test_reading_the_course_keeps_the_lessons_that_load(tmp_path):
    write(tmp_path, name="01-a.md")
    broken = FRONT.replace("id: small", "id: second").replace("block_size: 4", "block_size: 0")
    write(tmp_path, name="02-b.md", front=broken)
    write(tmp_path, name="03-c.md")
    write(tmp_path, name="04-d.md", front=FRONT.replace("id: small", "id: fourth"))
    lessons, problems = read_course(tmp_path)
    assert [lesson.id for lesson in lessons] == ["small", "fourth"]
    assert [Path(e.path).name for e in problems] == ["02-b.md", "03-c.md"]
    assert [e.field for e in problems] == ["config.block_size", "id"]


# ---- malformed files: each names the file and the field ------------------------------------------


@pytest.mark.parametrize(
    "front, body, field, words",
    [
        # bad YAML
        (FRONT + "title: [unclosed\n", BODY, "front matter", "not valid YAML"),
        (FRONT, step_with("- step: [1\n"), S + ".actions", "not valid YAML"),
        (
            FRONT,
            step_with(expect="- that: request.a.status\n  equals: a\n  equals: b\n"),
            S + ".expect",
            "written twice",
        ),
        # unknown fields
        (FRONT + "colour: blue\n", BODY, "colour", "unknown field; the front matter takes id, title, summary"),
        (
            FRONT,
            step_with("- add_request: {request_id: z, prompt: x, max_tokens: 2, colour: red}\n"),
            S + ".actions[0].add_request.colour",
            "unknown field",
        ),
        (FRONT.replace("seed: 0", "seed: 0\nconfig2: {}"), BODY, "config2", "unknown field"),
        # impossible configs
        (FRONT.replace("block_size: 4", "block_size: 0"), BODY, "config.block_size", "positive integer"),
        (FRONT.replace("block_size: 4", "preemption_mode: pause"), BODY, "config.preemption_mode", "must be one of"),
        (
            FRONT.replace("block_size: 4", 'vllm_profile: "v0.6"\n  preemption_mode: swap'),
            BODY,
            "config.preemption_mode",
            "needs a CPU swap pool",
        ),
        (
            FRONT.replace("block_size: 4", "preemption_mode: swap\n  num_cpu_blocks: 8"),
            BODY,
            "config.preemption_mode",
            "does not exist in vllm_profile='v0.33'",
        ),
        (FRONT.replace("block_size: 4", 'vllm_profile: "v0.7"'), BODY, "config.vllm_profile", "must be one of"),
        (FRONT.replace("block_size: 4", "blocks: 4"), BODY, "config.blocks", "unknown EngineConfig field"),
        (FRONT.replace("block_size: 4", "model: gpt2"), BODY, "config.model", "comes from the app"),
        (FRONT.replace("block_size: 4", "seed: 3"), BODY, "config.seed", "front matter"),
        (
            FRONT.replace("block_size: 4", "enable_prefix_caching: maybe"),
            BODY,
            "config.enable_prefix_caching",
            "must be true or false",
        ),
        (
            FRONT,
            step_with("- configure: {num_gpu_blocks: -1}\n"),
            S + ".actions[0].configure.num_gpu_blocks",
            "positive integer",
        ),
        (
            FRONT,
            step_with('- run: {name: r, config: {vllm_profile: "v0.6", preemption_mode: swap}}\n'),
            S + ".actions[0].run.config.preemption_mode",
            "swap pool",
        ),
        (
            FRONT,
            step_with("- configure: {preemption_mode: swap, num_cpu_blocks: 8}\n"),
            S + ".actions[0].configure.preemption_mode",
            "it is in vllm_profile='v0.6'",
        ),
        # workloads
        (
            FRONT.replace(
                'requests:\n    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}', "preset: hurricane"
            ),
            BODY,
            "workload.preset",
            "unknown preset 'hurricane'",
        ),
        (
            FRONT.replace(
                'requests:\n    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}',
                "preset: storm\n  args: {size: 3}",
            ),
            BODY,
            "workload.args.size",
            "takes no argument 'size'",
        ),
        (
            FRONT.replace(
                'requests:\n    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}',
                "preset: storm\n  args: {n: 0}",
            ),
            BODY,
            "workload.args",
            "give no requests",
        ),
        (
            FRONT.replace("max_tokens: 8}", "max_tokens: 0}"),
            BODY,
            "workload.requests[0].max_tokens",
            "greater than or equal",
        ),
        (
            FRONT + "    - {request_id: a, prompt: x, max_tokens: 2}\n",
            BODY,
            "workload.requests[1].request_id",
            "used twice",
        ),
        (FRONT.replace("requests:", "preset: storm\n  requests:"), BODY, "workload", "exactly one of"),
        # requests an expect (or another path) names but nothing defines
        (
            FRONT,
            step_with(expect="- that: request.zz.status\n  equals: running\n"),
            S + ".expect[0].that",
            "names request 'zz'",
        ),
        (
            FRONT,
            step_with(
                expect="- that: request.a.num_output_tokens\n  equals: {value_of: request.q.num_output_tokens}\n"
            ),
            S + ".expect[0].equals.value_of",
            "names request 'q'",
        ),
        (
            FRONT,
            step_with("- run_until: {that: block.zz.0.ref_cnt, equals: 2}\n"),
            S + ".actions[0].run_until.that",
            "names request 'zz'",
        ),
        (FRONT, step_with(narration="Look: {{ request.zz.status }}"), S + ".narration", "names request 'zz'"),
        (
            FRONT,
            step_with(expect="- that: request.z.status\n  equals: waiting\n") + "\n## Later\n\nAdd z.\n\n```actions\n"
            "- add_request: {request_id: z, prompt: x, max_tokens: 2}\n```\n",
            S + ".expect[0].that",
            "names request 'z'",
        ),
        (
            FRONT,
            step_with("- add_request: {request_id: a, prompt: x, max_tokens: 2}\n"),
            S + ".actions[0].add_request.request_id",
            "already used",
        ),
        (
            FRONT.replace(
                'requests:\n    - {request_id: a, prompt: "def add(x, y):", max_tokens: 8}',
                "preset: burst\n  args: {n: 2}",
            ),
            step_with(expect="- that: request.2.status\n  equals: running\n"),
            S + ".expect[0].that",
            "names request '2'",
        ),
        (
            FRONT,
            step_with(expect="- that: run.nope.steps\n  equals: 1\n"),
            S + ".expect[0].that",
            "no earlier 'run' action",
        ),
        # structure
        (FRONT, "Some text\n\n" + BODY, "body", "text before the first '## ' step"),
        (FRONT, "# A title\n\n" + BODY, "body", "text before the first"),
        (FRONT, BODY + "\n```actions\n- step: 2\n```\n", "steps[0] (First).actions", "a second ```actions block"),
        (FRONT, BODY + "\n```notes\na\n```\n\n```notes\nb\n```\n", "steps[0] (First).notes", "at most one notes block"),
        (FRONT, "## Empty\n\n```actions\n- step: 1\n```\n", "steps[0] (Empty).narration", "missing"),
        (FRONT, "", "body", "no steps"),
        (FRONT, "## S\n\nText.\n\n```actions\n- step: 1\n", "steps[0] (S).actions", "never closed"),
        # actions, operators, paths, filters
        (FRONT, step_with("- leap: 3\n"), S + ".actions[0].leap", "unknown action 'leap'"),
        (FRONT, step_with("- {step: 1, run_until: end}\n"), S + ".actions[0]", "exactly one key"),
        (FRONT, step_with("- step: many\n"), S + ".actions[0].step", "number of engine steps"),
        (FRONT, step_with("- step: 0\n"), S + ".actions[0].step", "1 to 3000"),
        (
            FRONT,
            step_with("- add_request: {request_id: a.b, prompt: x, max_tokens: 2}\n"),
            S + ".actions[0].add_request.request_id",
            "'a.b' may hold only letters",
        ),
        (FRONT, step_with("- run_until: forever\n"), S + ".actions[0].run_until", "preemption, end or a check"),
        (
            FRONT,
            step_with(expect="- that: request.a.status\n  equal: running\n"),
            S + ".expect[0].equal",
            "unknown operator 'equal'",
        ),
        (
            FRONT,
            step_with(expect="- that: request.a.status\n  equals: running\n  contains: r\n"),
            S + ".expect[0].that",
            "exactly one operator",
        ),
        (
            FRONT,
            step_with(expect="- that: request.a.num_output_tokens\n  at_least: many\n"),
            S + ".expect[0].at_least",
            "compares numbers",
        ),
        (
            FRONT,
            step_with(expect="- that: request.a.status\n  equals: {value_of: request.a.status, twice: 2}\n"),
            S + ".expect[0].equals.twice",
            "unknown field",
        ),
        (
            FRONT,
            step_with(expect="- that: reqest.a.status\n  equals: running\n"),
            S + ".expect[0].that",
            "unknown root 'reqest'",
        ),
        (
            FRONT,
            step_with(expect="- that: request.a.colour\n  equals: red\n"),
            S + ".expect[0].that",
            "request field 'colour' is unknown",
        ),
        (
            FRONT,
            step_with(expect="- that: preemptions.0.colour\n  equals: red\n"),
            S + ".expect[0].that",
            "field 'colour' is unknown",
        ),
        (
            FRONT,
            step_with(expect="- that: last_step.preempted.0.mode.x\n  equals: red\n"),
            S + ".expect[0].that",
            "is a single value",
        ),
        (
            FRONT,
            step_with(expect="- that: request.a.output_token_ids.first\n  equals: 1\n"),
            S + ".expect[0].that",
            "index it with a number",
        ),
        (
            FRONT,
            step_with(expect="- that: metric.vllm:preemptions\n  equals: 1\n"),
            S + ".expect[0].that",
            "metric 'vllm:preemptions' is unknown",
        ),
        (
            FRONT,
            step_with(expect="- that: pool.tpu.free\n  equals: 1\n"),
            S + ".expect[0].that",
            "pool 'tpu' is unknown",
        ),
        (FRONT, step_with(expect="- equals: 1\n"), S + ".expect[0].that", "missing"),
        (
            FRONT,
            step_with(narration="It took {{ last_step.step_time_s | seconds }}."),
            S + ".narration",
            "unknown filter 'seconds'",
        ),
        # front matter shape
        (FRONT.replace("id: small", "id: Small Lesson"), BODY, "id", "lowercase letters, digits and single dashes"),
        (FRONT.replace("title: Small\n", ""), BODY, "title", "missing"),
    ],
)
def test_a_malformed_lesson_names_the_file_and_the_field(tmp_path, front, body, field, words):
    message = error_for(tmp_path, front, body)
    assert f": {field}: " in message, message
    assert words in message, message


def test_front_matter_must_open_and_close(tmp_path):
    path = tmp_path / "01-x.md"
    path.write_text("## Just a step\n\nText.\n")
    with pytest.raises(LessonError, match=r"01-x\.md: front matter: the file must start with a '---' line"):
        load_lesson(path)
    path.write_text("---\nid: x\n")
    with pytest.raises(LessonError, match="front matter: no closing '---'"):
        load_lesson(path)
    with pytest.raises(LessonError, match=r"nope\.md: no such lesson file"):
        load_lesson(tmp_path / "nope.md")


def test_yaml_errors_give_the_file_line(tmp_path):
    path = write(tmp_path, body=step_with("- step: 1\n- add_request: {request_id: z, prompt: [x\n"))
    broken = next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if "[x" in line)
    with pytest.raises(LessonError, match=rf"actions: not valid YAML: .*\(line {broken}, column \d+\)"):
        load_lesson(path)


def test_a_lesson_error_is_a_value_error_with_its_parts(tmp_path):
    path = write(tmp_path, body=step_with("- leap: 3\n"))
    with pytest.raises(ValueError) as info:
        load_lesson(path)
    error = info.value
    assert isinstance(error, LessonError)
    assert error.field == S + ".actions[0].leap" and "unknown action" in error.problem
    assert error.path.endswith("01-small.md")


def test_loading_and_validating_the_course_imports_neither_the_engine_nor_torch():
    import subprocess
    import sys

    code = (
        "import sys; from pykv.lessons.course.loader import read_course; lessons, problems = read_course(); "
        "print(len(lessons), len(problems), 'pykv.engine.llm_engine' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2]
    )
    course = len(list((Path(__file__).parents[2] / "lessons").glob("[0-9][0-9]-*.md")))
    assert out.stdout.split() == [str(course), "0", "False", "False"], out.stderr
