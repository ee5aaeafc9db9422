"""The Playground with a victim policy, V1's CPU offloading tier and parallel sampling: the tier is drawn beside the
device pool, the narration says why a victim was chosen, what was loaded, what forked and what was copied on
write, and bad values are one-line messages."""

from __future__ import annotations

import json

import pytest
from app_helpers import ADD, narration, ok, shown_step

from pykv.engine.kv.kv_cache_manager import hash_block_tokens


def test_the_tier_is_drawn_and_a_victim_comes_back_through_it(app):
    for name, value in dict(
        vllm_profile="v0.33", num_gpu_blocks="12", num_offload_blocks="32", preemption_victim="lcf"
    ).items():
        app.query_params[name] = value
    ok(app.run())
    lab = app.session_state["lab"]
    assert lab.config.num_offload_blocks == 32 and lab.config.preemption_victim == "lcf"
    assert app.session_state["cfg_preemption_victim"] == "lcf"
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in app.get("plotly_chart")]
    assert "CPU tier · 0/32 stored" in titles, titles
    app.button(key="next_preemption").click().run()
    text = narration(ok(app))
    assert "was chosen because it has the fewest computed tokens" in text
    assert lab.engine.kv.offload.num_stored_blocks > 0
    # Run the session's lab to the first load (the Lab is the page's domain object), then let the page draw it.
    lab.run_until(lambda snap: snap.report is not None and any(c.num_loaded_tokens for c in snap.report.chunks))
    app.run()
    text = narration(app)
    assert "from the CPU offloading tier instead of recomputing" in text, text
    assert "loaded (CPU tier → device)" in text and "modelled over PCIe" in text
    assert shown_step(app) > 1 and not app.error
    # vLLM 0.33 stores prompt blocks only: every tier block is a full prompt block of the request that stored it.
    engine = lab.engine
    prompts = {rid: o.prompt_token_ids for rid, o in engine.outputs.items()} | {
        rid: r.prompt_token_ids for rid, r in engine.scheduler.requests.items()
    }
    stored = [b for b in engine.kv.cpu_pool.blocks if b.block_hash is not None]
    assert stored and all(
        b.block_hash in prompt_block_hashes(prompts[b.computed_by], engine.config.block_size) for b in stored
    )
    tier_chart = next(c for c in app.get("plotly_chart") if "CPU tier" in c.proto.spec)
    assert "eviction order: 0 (0 = evicted next: the oldest request's tail)" in tier_chart.proto.spec


def prompt_block_hashes(prompt: list[int], block_size: int) -> list[int]:
    hashes: list[int] = []
    for i in range(len(prompt) // block_size):
        hashes.append(hash_block_tokens(hashes[-1] if hashes else None, prompt[i * block_size : (i + 1) * block_size]))
    return hashes


@pytest.mark.parametrize(
    "name, value", [("preemption_victim", "oldest"), ("num_offload_blocks", "0"), ("num_offload_blocks", "x")]
)
def test_bad_policy_or_tier_values_in_the_url_warn_and_keep_the_default(app, name, value):
    app.query_params["vllm_profile"] = "v0.33"
    app.query_params[name] = value
    ok(app.run())
    lab = app.session_state["lab"]
    assert getattr(lab.config, name) == ("last" if name == "preemption_victim" else None)
    shown = (name, name.replace("_", "\\_"))  # markdown escapes the underscores
    assert any(n in w.value for w in app.warning for n in shown) and shown_step(app) == 0 and not app.error


def test_a_request_with_n_sequences_forks_and_copies_on_write_in_the_playground(app):
    app.query_params["preset"] = "none"
    ok(app.run())
    app.text_area(key="new_prompt").set_value("def add(a, b):")
    app.number_input(key="new_n").set_value(3)
    app.number_input(key="new_priority").set_value(2)
    app.button(key=ADD).click().run()
    lab = app.session_state["lab"]
    assert [(m.n, m.priority) for m in lab.manual] == [(3, 2)]
    app.button(key="step").click().run()
    assert "forked 2 sequence(s) (m1#1, m1#2) on its first token" in narration(ok(app))
    app.button(key="step").click().run()
    assert "(copy on write)" in narration(ok(app))  # a 16-token block: the prompt's last one is partial
    app.button(key="back").click().run()  # replaying from the log keeps n and the priority
    app.button(key="step").click().run()
    assert {r.request_id for r in lab.view.requests} >= {"m1", "m1#1", "m1#2"}


def test_at_the_first_swap_out_only_the_cpu_blocks_that_changed_are_outlined(app):
    """Issue 28 item 15: v0.6, swap, Next preemption: the CPU grid outlines the blocks the swap filled, not every
    free block (each moved one place up the free queue), and the review pack's grid agrees."""
    import json

    from pykv.review_pack.run import changed_blocks

    for key, value in {
        "vllm_profile": "v0.6",
        "preemption_mode": "swap",
        "num_cpu_blocks": "64",
        "num_gpu_blocks": "24",
    }.items():
        app.query_params[key] = value
    ok(app.run())
    app.button(key="next_preemption").click().run()
    lab = ok(app).session_state["lab"]
    snap = lab.view
    used = {b.block_id for b in snap.blocks if b.pool == "cpu" and b.state != "free"}
    assert used and snap.report.preempted and snap.report.preempted[0].mode == "swap"
    cpu_grid = json.loads(next(c for c in app.get("plotly_chart") if "CPU" in c.proto.spec).proto.spec)
    outlined = [
        t
        for t in cpu_grid["data"]
        if t.get("name") == "changed this step" or (t.get("marker", {}).get("line", {}).get("width", 0) > 1)
    ]
    changed = {bid for pool, bid in changed_blocks(lab.previous, snap) if pool == "cpu"}
    assert changed == used  # the swapped-out request's blocks, and no free one
    assert len(changed) < 64 and all(len(t.get("x", [])) <= len(used) for t in outlined)


@pytest.mark.parametrize(
    "profile, victim, warned", [("v0.10", "lcf", True), ("v0.10", "last", False), ("v0.33", "lcf", False)]
)
def test_the_sidebar_warns_where_a_victim_policy_can_change_tokens(app, profile, victim, warned):
    app.query_params["vllm_profile"], app.query_params["preemption_victim"] = profile, victim
    ok(app.run())
    warnings = [w.value for w in app.sidebar.warning if "never computed" in w.value]
    assert bool(warnings) == warned, warnings
    if warned:
        assert "vLLM 0.10.2" in warnings[0] and "0.11.1" in warnings[0]
