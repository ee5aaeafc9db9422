"""Two lessons end to end as the lab runs them on a CPU (``attention_backend="auto"``: interpreted Triton on layer 0,
torch on the others):
every check passes and every request's tokens, at every lesson step, equal the torch run's (the course replay
itself runs on torch, for speed: tests/lessons/test_course_replay.py)."""

from __future__ import annotations

import importlib.util

import pytest

from pykv.engine.model.attention import STEPWISE_CPU_ENV
from pykv.lessons import LessonPlayer, load_lesson
from pykv.lessons.course.loader import COURSE_DIR

if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

LESSONS = ["01-kv-cache-and-blocks.md", "03-recompute-is-a-rollback.md"]


def play(path, loaded, backend: str, monkeypatch) -> LessonPlayer:
    monkeypatch.setenv(STEPWISE_CPU_ENV, backend)
    player = LessonPlayer(load_lesson(path), loaded)
    player.goto(player.num_steps - 1)
    return player


def tokens(player: LessonPlayer) -> list[dict[str, list[int]]]:
    return [{r.request_id: list(r.output_token_ids) for r in s.lab.view.requests} for s in player.states]


@pytest.mark.parametrize("name", LESSONS)
def test_lesson_on_interpreted_triton_passes_and_matches_torch(name, tiny, monkeypatch):
    path = COURSE_DIR / name
    on_torch = play(path, tiny, "torch", monkeypatch)
    on_triton = play(path, tiny, "triton", monkeypatch)
    assert on_torch.state.lab.engine.backend.name == "torch"
    assert on_triton.state.lab.engine.backend.label == "triton (interpreted on CPU, first layer; torch on the others)"
    failed = [(s.index, c.description) for s in on_triton.states for c in s.failed_checks] + [
        (s.index, e) for s in on_triton.states for e in s.errors
    ]
    assert not failed, failed
    assert tokens(on_triton) == tokens(on_torch) and any(any(t.values()) for t in tokens(on_torch))
    launched = [launches for s in on_triton.states for launches in s.lab.kernel_launches.values()]
    assert launched and all(launch.traced or launch.phase == "store" for ls in launched for launch in ls)
