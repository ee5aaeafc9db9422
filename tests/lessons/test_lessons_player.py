"""The lesson player on the shipped model: actions, value paths, operators, templates, side runs and
tokenizations, exact Back (after add_request and configure), and failed actions shown as failed checks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pykv import EngineConfig
from pykv.border.workload import make_workload
from pykv.lab.lab import Lab
from pykv.lessons import LessonPlayer, PathError, load_lesson, parse_lesson, replay, resolve
from pykv.lessons.format.step_blocks import Check, ValueOf
from pykv.lessons.values.checks import compare, evaluate, render
from pykv.lessons.values.paths import NOT_ARRIVED

FIXTURE = Path(__file__).parents[1] / "lesson_fixtures" / "example.md"
FRONT = """\
---
id: player
title: Player
summary: For the player tests.
seed: 0
config: {num_gpu_blocks: 12, block_size: 4, max_num_seqs: 4}
workload:
  requests:
    - {request_id: a, prompt: "def add(x, y):", max_tokens: 24, ignore_eos: true}
    - {request_id: b, prompt: "class Stack:", max_tokens: 24, ignore_eos: true, arrival_step: 1}
---
"""


def lesson_of(body: str):
    return parse_lesson(FRONT + "\n" + textwrap.dedent(body), "player.md")


def step(title: str, actions: str = "", expect: str = "", narration: str = "Narration.") -> str:
    text = f"## {title}\n\n{narration}\n"
    if actions:
        text += f"\n```actions\n{textwrap.dedent(actions)}```\n"
    if expect:
        text += f"\n```expect\n{textwrap.dedent(expect)}```\n"
    return text + "\n"


def fingerprint(state):
    """What must be exactly the same on Back: the very snapshots, the cursor and the check outcomes."""
    return (
        id(state.lab),
        state.lab.cursor,
        [id(s) for s in state.lab.snapshots],
        state.narration,
        [(c.description, c.passed, c.actual) for c in state.checks],
    )


# ---- the example lesson, end to end ---------------------------------------------------------------


def test_the_example_lesson_replays_with_every_check_passing(tiny):
    states = replay(load_lesson(FIXTURE), tiny)
    assert [s.index for s in states] == [0, 1, 2]
    for s in states:
        assert s.passed, (s.step.title, s.errors, s.failed_checks)
    first = states[0]
    assert first.lab.cursor == 1 and first.notes == "Ask the room how many blocks that is."
    assert "{{ this }}" in first.narration  # code blocks are not templated
    assert "ms." in first.narration and "{{" not in first.narration.split("```")[0]


# ---- paths ---------------------------------------------------------------------------------------


def test_paths_read_every_root(tiny):
    lesson = lesson_of(step("Go", "- step: 2\n- tokenize: {name: t, a: 'def add(x, y):', b: 'def add(x, z):'}\n"))
    scope = LessonPlayer(lesson, tiny).state.scope

    def r(path):
        return resolve(path, scope)

    assert r("engine.step") == 2 and r("engine.config.block_size") == 4 and r("engine.done") is False
    assert r("queue.running") == ["a", "b"] and r("queue.waiting.length") == 0 and r("queue.running.last") == "b"
    a = scope.view.request("a")
    assert r("request.a.status") == "running"
    assert r("request.a.num_blocks") == len(a.block_table) == r("request.a.block_table.length")
    assert r("request.a.output_token_ids") == a.output_token_ids and r("request.a.output_token_ids.length") == 2
    assert r("block.a.0.ref_cnt") == 1 and r("block.a.0.owners") == ["a"]
    assert r("block.a.0.block_id") == a.block_table[0]
    assert r("block.a.last.block_id") == a.block_table[-1] and r("block.a.0.tokens_filled") == 4
    assert r("pool.gpu.total") == 12 and r("pool.gpu.usable") == 11  # v0.33: block 0 is the null block
    assert r("pool.gpu.used") + r("pool.gpu.free") + r("pool.gpu.cached") == 11
    assert r("pool.cpu.total") == 0
    assert r("metric.vllm:num_requests_running") == 2 and r("metric.vllm:num_preemptions_total") == 0
    assert r("last_step.scheduled") == ["a", "b"] and r("last_step.step") == 2 and r("last_step.finished") == []
    assert r("preemptions") == [] and r("preemptions.length") == 0
    assert r("tokens.t.first_difference") == r("tokens.t.common_prefix_tokens") > 0
    assert r("tokens.t.full_blocks_shared") == r("tokens.t.common_prefix_tokens") // 4
    assert "".join(r("tokens.t.a_pieces")) == "def add(x, y):"


def test_paths_that_are_not_there_raise_a_clear_path_error(tiny):
    scope = LessonPlayer(lesson_of(step("Start", narration="Nothing ran yet.")), tiny).state.scope
    assert resolve("request.a.status", scope) == NOT_ARRIVED  # the workload defines it; step 0 has not added it
    for path, words in [
        ("request.a.num_blocks", "has not arrived yet"),
        ("last_step.scheduled", "no engine step has run"),
        ("preemptions.0.mode", "has only 0 items"),
        ("metric.vllm:nope", "no metric"),
        ("run.r.steps", "nothing saved as run.r"),
        ("request.zz.status", "there is no request 'zz'"),
        ("queue.running.x", "index it with a number"),
    ]:
        with pytest.raises(PathError, match=words):
            resolve(path, scope)


# ---- operators, value_of / times, templates ------------------------------------------------------


@pytest.mark.parametrize(
    "op, actual, expected, passed",
    [
        ("equals", 3, 3.0, True),
        ("equals", "0", 0, True),
        ("equals", ["0", "1"], [0, 1], True),
        ("equals", "a", "b", False),
        ("equals", 0.1 + 0.2, 0.3, True),
        ("not_equals", "running", "waiting", True),
        ("not_equals", 2, 2, False),
        ("at_least", 2, 2, True),
        ("at_least", 1, 2, False),
        ("at_most", 2, 2, True),
        ("greater_than", 2, 2, False),
        ("greater_than", 3, 2, True),
        ("less_than", 1, 2, True),
        ("contains", ["a", "b"], "b", True),
        ("contains", ["0", "1"], 1, True),
        ("contains", "finished_length", "finished", True),
        ("contains", {"k": 1}, "k", True),
        ("not_contains", ["a"], "b", True),
        ("not_contains", ["a"], "a", False),
        ("is_none", None, True, True),
        ("is_none", 0, True, False),
        ("is_none", 0, False, True),
    ],
)
def test_operators(op, actual, expected, passed):
    assert compare(op, actual, expected) == (passed, None)


def test_operators_that_cannot_compare_fail_and_say_why():
    assert compare("at_least", "running", 2) == (False, "at_least compares numbers; got 'running' and 2")
    passed, why = compare("contains", 5, 1)
    assert not passed and "needs a list" in why


def test_value_of_and_times(tiny):
    scope = LessonPlayer(lesson_of(step("Go", "- step: 3\n")), tiny).state.scope
    half = Check(
        that="request.a.num_output_tokens",
        op="at_least",
        operand=ValueOf(value_of="request.a.num_output_tokens", times=0.5),
    )
    double = Check(
        that="request.a.num_output_tokens",
        op="at_least",
        operand=ValueOf(value_of="request.a.num_output_tokens", times=2),
    )
    assert evaluate(half, scope).passed and evaluate(half, scope).expected == 1.5
    result = evaluate(double, scope)
    assert not result.passed and (result.actual, result.expected) == (3, 6) and result.error is None
    missing = evaluate(Check(that="request.a.status", op="equals", operand=ValueOf(value_of="metric.nope")), scope)
    assert not missing.passed and "no metric" in missing.error
    twice = ValueOf(value_of="request.a.status", times=2)
    text = evaluate(Check(that="request.a.status", op="at_least", operand=twice), scope)
    assert not text.passed and "'times' needs a number" in text.error


def test_templates_fill_values_with_filters_and_flag_what_is_missing(tiny):
    scope = LessonPlayer(lesson_of(step("Go", "- step: 1\n")), tiny).state.scope
    text, errors = render(
        "Step {{ engine.step }}, took {{ last_step.step_time_s | ms }}, queue {{queue.running}}, "
        "bytes {{ engine.config.block_size | bytes }}, done {{ engine.done }}.\n"
        "```\n{{ engine.step }}\n```\n{{ request.b.num_blocks }}",
        scope,
    )
    line, code = text.split("\n")[0], text.split("\n")[2]
    assert line.startswith("Step 1, took ") and " ms, queue [a], bytes 4 B, done no." in line
    assert code == "{{ engine.step }}"
    assert len(errors) == 1 and "request.b.num_blocks" in errors[0] and "not arrived yet" in errors[0]
    assert "⚠ request.b.num_blocks" in text
    _, errors = render("{{ request.a.status | ms }}", scope)
    assert "needs a number" in errors[0]


# ---- actions ---------------------------------------------------------------------------------------


def test_actions_step_run_until_and_conditions(tiny):
    lesson = lesson_of(
        step("Two steps", "- step: 2\n", "- that: engine.step\n  equals: 2\n")
        + step(
            "Until b has 3 tokens",
            "- run_until: {that: request.b.num_output_tokens, at_least: 3}\n",
            "- that: request.b.num_output_tokens\n  equals: 3\n",
        )
        + step(
            "Already true: no step",
            "- run_until: {that: queue.running, contains: a}\n",
            "- that: engine.step\n  equals: {value_of: engine.step}\n",
        )
        + step(
            "To the preemption",
            "- run_until: preemption\n",
            "- that: last_step.preempted.0.mode\n  equals: recompute\n- that: preemptions.length\n  equals: 1\n",
        )
        + step(
            "To the end",
            "- run_until: end\n- step: 5\n",
            "- that: engine.done\n  equals: true\n- that: request.a.status\n  equals: finished_length\n",
        )
    )
    player = LessonPlayer(lesson, tiny)
    cursors = []
    for _ in range(player.num_steps):
        assert player.state.passed, (player.state.step.title, player.state.errors, player.state.failed_checks)
        cursors.append(player.state.lab.cursor)
        if not player.next():
            break
    else:
        raise AssertionError(f"Next still moved on after the lesson's {player.num_steps} steps")
    assert cursors[0] == 2 and cursors[2] == cursors[1] and cursors[3] > cursors[2] and cursors[4] >= cursors[3]
    assert player.state.lab.at_end()


def test_run_and_tokenize_save_their_results(tiny):
    lesson = lesson_of(
        step(
            "Runs",
            """\
        - run: {name: base}
        - run: {name: swap, config: {vllm_profile: "v0.6", preemption_mode: swap, num_cpu_blocks: 16}}
        - run: {name: other, config: {num_gpu_blocks: 64}, workload: {preset: burst, args: {n: 2, max_tokens: 4}}}
        - tokenize: {name: t, a: "hello world", b: "hello world"}
        """,
            """\
        - that: run.base.preemptions
          at_least: 1
        - that: run.swap.preemption_records.0.mode
          equals: swap
        - that: run.swap.outputs.a
          equals: {value_of: run.base.outputs.a}
        - that: run.other.outputs.length
          equals: 2
        - that: tokens.t.first_difference
          is_none: true
        """,
        )
    )
    state = LessonPlayer(lesson, tiny).state
    assert state.passed, state.failed_checks
    base, swap = state.runs["base"], state.runs["swap"]
    assert base.config["log_stats_interval"] is None and base.config["num_gpu_blocks"] == 12 and base.device == "cpu"
    assert swap.swapped_bytes > 0 and swap.modelled_pcie_gen5_s > 0 and base.swapped_bytes == 0
    assert base.output_tokens == 48 and base.steps > 0 and base.wall_s > 0 and base.recomputed_tokens > 0
    assert state.lab.cursor == 0  # side runs leave the lesson's engine alone
    assert state.tokens["t"].common_prefix_tokens == len(state.tokens["t"].a)


def test_a_failed_action_is_a_failed_check_and_the_player_goes_on(tiny):
    lesson = lesson_of(
        step(
            "No preemption in a big pool",
            "- configure: {num_gpu_blocks: 64}\n- run_until: preemption\n- step: 1\n",
            "- that: engine.done\n  equals: true\n",
        )
        + step(
            "Too long a prompt",
            "- add_request: {request_id: long, prompt: '" + "x = 1\\n" * 2000 + "', max_tokens: 2}\n",
        )
        + step("Still usable", "- configure: {num_gpu_blocks: 12}\n- step: 1\n", "- that: engine.step\n  equals: 1\n")
    )
    player = LessonPlayer(lesson, tiny)
    first = player.state
    assert not first.passed and len(first.errors) == 1
    assert first.errors[0].startswith("actions[1] (run until preemption): the run ended at engine step")
    action, done = first.checks
    assert not action.passed and action.description == "action: run until preemption"
    assert "before any preemption" in action.error
    assert done.passed  # the expect checks are still evaluated
    assert player.next() and not player.state.passed and "max_model_len" in player.state.errors[0]
    assert player.next() and player.state.passed


# ---- exact Back ------------------------------------------------------------------------------------


def test_back_restores_the_exact_state_after_add_request_and_configure(tiny):
    lesson = lesson_of(
        step("One", "- step: 3\n")
        + step(
            "Add",
            "- add_request: {request_id: c, prompt: 'import os', max_tokens: 3}\n- step: 2\n",
            "- that: request.c.num_output_tokens\n  equals: 2\n",
        )
        + step("Read only", "- tokenize: {name: t, a: x, b: y}\n")
        + step(
            "Configure",
            "- configure: {num_gpu_blocks: 32, block_size: 8}\n- step: 1\n",
            "- that: request.c.status\n  equals: not_arrived\n- that: engine.config.block_size\n  equals: 8\n",
        )
        + step("More", "- step: 4\n", "- that: request.c.status\n  not_equals: not_arrived\n")
    )
    player = LessonPlayer(lesson, tiny)
    seen = []
    for _ in range(5):
        assert player.state.passed, (player.state.step.title, player.state.failed_checks)
        seen.append(fingerprint(player.state))
        player.next()
    states = player.states
    assert [s.lab.cursor for s in states] == [3, 5, 5, 1, 5]
    assert states[2].lab is states[1].lab  # a step without engine actions shows the same Lab
    assert states[3].lab.config.block_size == 8 and states[1].lab.config.block_size == 4
    assert "c" not in states[0].lab.view.queues["waiting"] and states[0].lab.head == 3
    while player.prev():
        assert fingerprint(player.state) == seen[player.index]
    assert player.goto(99) == 4 and fingerprint(player.state) == seen[4]
    # an earlier Lab whose engine went to a later step replays one when asked, leaving its history alone
    old = states[0].lab
    assert old.engine.step_count == 3 and [id(s) for s in old.snapshots] == seen[0][2]
    player.restart()
    assert player.index == 0 and len(player.states) == 1 and player.state.lab is not old


def test_player_takes_environment_fields_from_the_base_config_only(tiny):
    lesson = lesson_of(step("One", "- step: 1\n"))
    base = EngineConfig(num_gpu_blocks=999, max_num_seqs=1, attention_backend="torch")
    player = LessonPlayer(lesson, tiny, base)
    assert player.config.num_gpu_blocks == 12 and player.config.max_num_seqs == 4
    assert player.config.attention_backend == "torch" and player.config.seed == 0


# ---- the Lab additions the player relies on -------------------------------------------------------


def test_lab_fork_leaves_the_original_history_untouched(tiny):
    lab = Lab(EngineConfig(num_gpu_blocks=17, block_size=4), tiny, "burst")  # 16 usable
    lab.step(), lab.step()
    before = [id(s) for s in lab.snapshots]
    child = lab.fork()
    child.add_request("x = 1", 2, request_id="mine", ignore_eos=True)
    child.step()
    assert [id(s) for s in lab.snapshots] == before and lab.cursor == 2 and not lab.manual
    assert child.view.request("mine").status in ("waiting", "running") and child.manual[0].ignore_eos
    assert not lab.at_end() and lab.engine.step_count == 2  # replayed on demand
    with pytest.raises(ValueError, match="already in use"):
        child.add_request("y", 2, request_id="mine")
    assert child.add_request("z", 2) == "m1"
    workload = make_workload("burst", n=1)
    workload = workload.model_copy(update={"requests": [workload.requests[0].model_copy(update={"request_id": "q"})]})
    named = Lab(EngineConfig(), tiny, workload=workload)
    assert named.preset is None and named.workload is workload
    with pytest.raises(ValueError, match="already in use"):
        named.add_request("y", 2, request_id="q")  # not arrived yet, but the workload has it


def test_the_instructor_guide_example_loads_and_replays(tiny):
    guide = (Path(__file__).parents[2] / "lessons" / "README.md").read_text()
    example = guide.split("````markdown\n", 1)[1].split("\n````", 1)[0]
    states = replay(parse_lesson(example, "lessons/README.md"), tiny)
    assert len(states) == 2 and all(s.passed for s in states), [(s.errors, s.failed_checks) for s in states]


def test_an_action_past_its_time_budget_is_a_failed_action_that_says_why(tiny):
    lesson = lesson_of(step("Run", "- run_until: end\n") + step("Next", "- step: 1\n"))
    player = LessonPlayer(lesson, tiny, action_budget_s=0.0)  # the app gives each action a budget; 0 s: one step
    state = player.state
    assert not state.passed and any("time budget" in e and "run until end" in e for e in state.errors)
    assert state.lab.view.step == 1  # one step ran, then the budget stopped it
    assert player.next() and player.state.lab.view.step == 2  # the player stays usable


def test_a_shared_lesson_prefetches_the_next_step_in_the_background_and_gives_the_same_states(tiny):
    """A class's next step is played while the instructor talks; what it publishes is what a play on demand gives."""
    import time

    from pykv.lessons.run.shared import SharedLesson

    lesson = lesson_of(step("One", "- step: 2\n") + step("Two", "- step: 3\n") + step("Three", "- step: 1\n"))
    shared, plain = SharedLesson(lesson, tiny), SharedLesson(lesson, tiny)
    shared.state(0)
    shared.prefetch(1)
    deadline = time.monotonic() + 60
    while (len(shared._published) < 2 or shared._prefetch_lock.locked()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(shared._published) == 2 and not shared._prefetch_lock.locked()  # played without anyone asking for it
    shared.prefetch(5)  # past the lesson's end: nothing to play
    assert not shared._prefetch_lock.locked()
    for index in range(3):
        a, b = shared.state(index), plain.state(index)
        assert [s.step for s in a.lab.snapshots] == [s.step for s in b.lab.snapshots]
        assert [r.output_token_ids for r in a.lab.view.requests] == [r.output_token_ids for r in b.lab.view.requests]
