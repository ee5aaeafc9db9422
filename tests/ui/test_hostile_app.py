"""Hostile links and forms (issue 12, rows 22-30 and Markdown injection) through AppTest, on a random
checkpoint (PYKV_MODEL): the page opens, a plain-text warning says what was not used, no exception
element, and the session's config stays within the sidebar's limits."""

from __future__ import annotations

import re

import pytest
import torch
from app_helpers import messages, opened, shown_step
from streamlit.testing.v1 import AppTest

from pykv import EngineConfig
from pykv.border.config import knobs
from pykv.lab.lab import Lab
from pykv.ui import safe_text
from pykv.ui.session import budgets, seats, state

HUGE = "9" * 5000
LINKS = [
    "[session expired — log in](http://evil)",
    "![x](http://evil/t.png)",
    "`x`\n\n[log in](http://evil)",
    "<img src=http://evil/t.png>",
    "www.evil.example/login",
]


def no_model_hint(at: AppTest) -> bool:
    return not any("PYKV_MODEL" in m for m in messages(at))


def within_sidebar_limits(config: EngineConfig) -> bool:
    for spec in knobs("sidebar"):
        value = getattr(config, spec.name)
        if spec.maximum is not None and isinstance(value, int) and value > spec.maximum:
            return False
    return True


def rendered_markup(text: str) -> list[str]:
    """Link, image, autolink or HTML markup that Markdown would render in ``text`` (code spans are literal)."""
    outside = re.sub(r"`[^`\n]*`", "", text)
    return [m for m in ("](", "![", "http://", "www.", "<img") if m in outside]


# ---- rows 22 and 23: the step in a link ----------------------------------------------------------------


@pytest.mark.parametrize("step", ["²", "١٢", HUGE, "-3", "1e3"])
def test_a_bad_playground_step_warns_and_opens_at_step_zero(app, step):
    opened(app, step=step)
    assert shown_step(app) == 0 and not app.error and no_model_hint(app)
    warning = next(w.value for w in app.warning if "not a step number" in w.value)
    assert len(warning) < 300  # a 5,000-digit value is not echoed whole


@pytest.mark.parametrize("step", ["²", HUGE])
def test_a_bad_lesson_step_warns_and_opens_at_step_one(lessons_app, step):
    opened(lessons_app, lesson="small", step=step)
    assert any("not a step number" in w.value for w in lessons_app.warning) and not lessons_app.error
    assert lessons_app.session_state["lesson_players"]["small"].index == 0


# ---- rows 24 and 26: values beyond the sidebar's limits -------------------------------------------------


@pytest.mark.parametrize(
    "name, value",
    [
        ("num_cpu_blocks", "30000"),
        ("max_num_seqs", "300"),
        ("max_num_batched_tokens", "10000"),
        ("num_gpu_blocks", "30000"),
        ("num_gpu_blocks", "100000000"),
        ("num_gpu_blocks", "1" + "0" * 40),
        ("block_size", "100000"),
    ],
)
def test_url_values_beyond_the_sidebar_fall_back_before_anything_is_allocated(app, name, value):
    opened(app, **{name: value})
    lab = app.session_state["lab"]
    assert getattr(lab.config, name) == getattr(state.default_config(), name)
    assert within_sidebar_limits(lab.config) and not app.error and shown_step(app) == 0
    assert any(name in w.value and "default" in w.value for w in app.warning)


def test_several_bad_values_are_each_reported_and_good_ones_kept(app):
    opened(app, num_gpu_blocks="30000", max_num_seqs="4", num_cpu_blocks="x")
    lab = app.session_state["lab"]
    assert lab.config.max_num_seqs == 4 and lab.config.num_gpu_blocks == 64 and lab.config.num_cpu_blocks is None
    assert len([w for w in app.warning if "is not valid" in w.value]) == 2


# ---- row 25: a device this server lacks -----------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a host without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:7", "tpu"])
def test_a_missing_device_warns_and_uses_the_default(app, device):
    opened(app, device=device)
    assert app.session_state["lab"].config.device == "cpu" and shown_step(app) == 0
    assert any("device" in w.value for w in app.warning) and not app.error and no_model_hint(app)


# ---- row 27: a slow replay has a budget and says so -----------------------------------------------------


def test_a_deep_link_replay_stops_at_its_budget_and_says_so(app, monkeypatch):
    monkeypatch.setattr(state, "DEEP_LINK_BUDGET_S", 0.0)
    opened(app, step="40")
    lab = app.session_state["lab"]
    assert lab.cursor < 40 and shown_step(app) == lab.cursor and not app.error
    assert any("stopped early" in w.value and "time budget" in w.value for w in app.warning)


def test_an_interpreted_triton_link_opens_and_says_where_it_stopped(app, monkeypatch):
    monkeypatch.setattr(state, "DEEP_LINK_BUDGET_S", 0.5)
    opened(app, attention_backend="triton", step="40")
    lab = app.session_state["lab"]
    assert lab.config.attention_backend == "triton" and lab.cursor < 40 and shown_step(app) == lab.cursor
    # Stopped by its budget (or, where Triton's CPU interpreter itself fails, by that failure): either way said
    assert any("stopped" in w.value and f"step {lab.cursor}" in w.value for w in app.warning)
    assert not app.error


def test_replay_and_runs_stop_when_the_session_is_gone(random_llama, random_llama_path):
    lab = Lab(EngineConfig(model=str(random_llama_path)), random_llama, "storm")
    calls = iter(range(100))
    assert lab.goto(40, should_stop=lambda: next(calls) >= 3) == 3 and lab.stopped_early == "its session ended"
    assert not lab.run_to_end(should_stop=lambda: True) and lab.cursor == 4 and "session" in lab.stopped_early
    assert lab.goto(2) == 2 and lab.stopped_early is None


# ---- row 28: a combination the engine refuses -----------------------------------------------------------


def test_chunked_prefill_off_with_a_tiny_budget_is_the_engines_message(app):
    opened(app, enable_chunked_prefill="false", max_num_batched_tokens="8")
    assert shown_step(app) == 0 and not app.error and no_model_hint(app)
    assert app.session_state["lab"].config == state.default_config()
    assert any("not used" in w.value and "chunked prefill" in w.value for w in app.warning)


# ---- row 30: runs that stop at their budget say so ------------------------------------------------------


@pytest.mark.parametrize(
    "button, budget, what",
    [
        ("run_end", "RUN_TO_END_BUDGET_S", "Run to end"),
        ("next_preemption", "NEXT_PREEMPTION_BUDGET_S", "Next preemption"),
    ],
)
def test_a_run_stopped_by_its_budget_says_so(app, monkeypatch, button, budget, what):
    monkeypatch.setattr(budgets, budget, 0.0)
    opened(app)
    app.button(key=button).click().run()
    assert not app.exception and not app.session_state["lab"].at_end()
    assert any(w.value.startswith(f"{what} stopped early") and "time budget" in w.value for w in app.warning)


def test_a_session_past_its_compute_allowance_is_told_so(app, monkeypatch):
    opened(app)
    monkeypatch.setattr(budgets, "SESSION_COMPUTE_S", 0.0)
    app.button(key="run_end").click().run()
    assert not app.exception and shown_step(app) == 0
    assert any("did not run" in w.value and "engine time" in w.value for w in app.warning)


# ---- session memory: the app-wide engine cap ------------------------------------------------------------


def test_a_new_session_beyond_the_app_wide_cap_gets_a_clear_message(app, monkeypatch):
    monkeypatch.setattr(seats, "MAX_ENGINE_SESSIONS", 0)
    opened(app)
    assert "lab" not in app.session_state and no_model_hint(app)
    assert any("limit for engines" in e.value for e in app.error)


def test_the_seat_reserves_pools_and_history_before_allocation(random_llama, random_llama_path):
    from pykv.lab.lab import memory_estimate

    small = memory_estimate(EngineConfig(model=str(random_llama_path)), random_llama)
    big = memory_estimate(
        EngineConfig(model=str(random_llama_path), num_gpu_blocks=512, num_cpu_blocks=4096, vllm_profile="v0.6"),
        random_llama,
    )
    assert 0 < small < big
    registry = seats.Seats()
    seat = registry.claim(None, small)
    assert registry.in_use() == (1, small)
    del seat
    assert registry.in_use()[0] == 0  # a dropped session frees its seat


# ---- Markdown injection -----------------------------------------------------------------------------------


@pytest.mark.parametrize("link", LINKS)
def test_link_values_are_never_rendered_as_markdown_in_the_playground(app, link):
    opened(app, preset=link, step=link, device=link, num_gpu_blocks=link)
    shown = messages(app)
    assert len(shown) >= 3 and shown_step(app) == 0
    for text in shown:
        assert not rendered_markup(text), text


@pytest.mark.parametrize("link", LINKS[:2])
def test_link_values_are_never_rendered_as_markdown_in_the_lessons_page(lessons_app, link):
    opened(lessons_app, lesson="small", step=link)
    assert any("not a step number" in w.value for w in lessons_app.warning)
    for text in messages(lessons_app):
        assert not rendered_markup(text), text
    lessons_app.query_params["lesson"] = link
    opened(lessons_app)
    assert lessons_app.error
    for text in messages(lessons_app):
        assert not rendered_markup(text), text


def test_plain_escapes_every_markdown_construct():
    text = safe_text.plain("got '[log in](http://evil)' and ![x](http://evil/t.png) **b** :red[x] <b>")
    outside_code = re.sub(r"`[^`]*`", "", text)
    assert not rendered_markup(text) and "**" not in text and ":red[" not in outside_code and "<b>" not in text
    assert safe_text.code("a`b\n\nc" + "d" * 200).count("`") == 2 and len(safe_text.code("d" * 5000)) < 70


# ---- issue 29 #3: one link must not take the engine budget --------------------------------------------------


def test_one_session_is_held_to_a_small_share_of_the_budget():
    # the link: ?vllm_profile=v0.6&preemption_mode=swap&block_size=256&num_gpu_blocks=512&num_cpu_blocks=4096
    wanted = 2_432 * 2**20
    with pytest.raises(seats.ServerFull, match="one session may hold at most"):
        seats.Seats().claim(None, wanted)
    assert seats.SESSION_ENGINE_BYTES <= seats.APP_ENGINE_BYTES // 16
    assert seats.Seats().claim(None, 131 * 2**20).bytes == 131 * 2**20  # the default session still fits


def test_the_app_budget_is_sized_from_the_machine():
    from pykv.ui.session.engine_budget import app_engine_bytes, session_engine_bytes

    assert app_engine_bytes(4 * 2**30) == 2 * 2**30 and app_engine_bytes(512 * 2**30) == 64 * 2**30
    assert app_engine_bytes(2**30) == 2**30  # at least 1 GiB
    assert session_engine_bytes(2 * 2**30) == 128 * 2**20 and session_engine_bytes(64 * 2**30) == 512 * 2**20


def test_the_2_3_gb_link_opens_with_a_message_and_allocates_nothing_big(app):
    held_before = seats.seats().in_use()[1]  # the seats are the process's: earlier tests' sessions may hold some
    opened(
        app, vllm_profile="v0.6", preemption_mode="swap", block_size="256", num_gpu_blocks="512", num_cpu_blocks="4096"
    )
    assert any("one session may hold at most" in m for m in messages(app)), messages(app)
    assert seats.seats().in_use()[1] - held_before <= seats.SESSION_ENGINE_BYTES
