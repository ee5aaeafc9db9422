"""The Playground as a vLLM engineer reads it (issue 48 items 4, 8, 9, 11): exact knobs, why the waiting queue
waits, a sidebar that says when it has unapplied changes, costs with their units."""

from __future__ import annotations

import re

from app_helpers import narration, ok, open_tab, shown_step


def test_preemption_costs_show_times_with_units_never_six_decimals(app):
    """Item 11: a swap's copy read `0.000005` (seconds, six decimals)."""
    for key, value in {"vllm_profile": "v0.6", "preemption_mode": "swap", "num_cpu_blocks": "24"}.items():
        app.query_params[key] = value
    app.query_params.update({"preset": "storm", "num_gpu_blocks": "24", "step": "12"})
    ok(app.run())
    assert app.session_state["lab"].view.preemptions, "the link reaches a preemption"
    costs = next(df.value for df in open_tab(app, "Preemption costs").dataframe if "swap out" in df.value.columns)
    swaps = costs[costs["mode"] == "swap"]
    assert len(swaps) and all(re.fullmatch(r"[\d,.]+ (µs|ms|s)", t) for t in swaps["swap out"]), swaps["swap out"]
    shown = [str(v) for v in costs.to_numpy().ravel()]
    assert not [v for v in shown if re.fullmatch(r"0\.0\d{4,}", v)], "a time in seconds to six decimals"


def test_a_stall_says_why_the_head_waits_and_next_admission_jumps_past_it(app):
    """Item 8: at 24 blocks on v0.33 the storm stalls for ~95 steps with 3 free blocks, and the narration read
    only "ran 2 requests"; it now gives the release's rule with its numbers, and Next admission ends the stall."""
    app.query_params.update({"preset": "storm", "num_gpu_blocks": "24", "vllm_profile": "v0.33", "step": "60"})
    ok(app.run())
    rule = r"req \d+ waits: vLLM 0\.33\.0 admits a request only once its whole input \(\d+ tokens\)"
    for _ in range(10):  # a step of the stall that did not preempt
        if re.search(rule, said := narration(app)):
            break
        app.button(key="step").click().run()
    assert re.search(rule, said), said
    needed, free = map(int, re.search(r"it needs (\d+) free blocks; (\d+) are free", said).groups())
    assert needed > free
    app.button(key="next_admission").click().run()
    step = shown_step(ok(app))
    said = [i.value.replace("\\", "") for i in app.info]
    assert step > 61 and any(re.search(rf"Step {step} admitted req \d+ \(waited \d+ steps\)", i) for i in said), said
    previous = app.session_state["lab"].snapshots[step - 1]
    assert previous.report.head_wait is not None, "the step before the admission still stalled"


def test_the_sidebar_says_what_is_unapplied_and_the_gib_box_follows_apply(app):
    """Item 9: the knobs gave no sign of edits not yet applied, and the "KV pool, GiB" box kept its old value after
    Apply, so Set pool then quietly rebuilt the old pool."""
    ok(app.run())
    assert not unapplied(app)
    app.number_input(key="cfg_num_gpu_blocks").set_value(32).run()
    assert ok(app).session_state["lab"].config.num_gpu_blocks == 64  # nothing applied yet ...
    assert "`num_gpu_blocks` `64` → `32`" in unapplied(app)  # ... and the sidebar says so
    assert app.slider(key="cfg_num_gpu_blocks_slider").value == 32  # the slider follows the box
    app.button(key="apply").click().run()
    assert ok(app).session_state["lab"].config.num_gpu_blocks == 32 and not unapplied(app)
    gib = app.number_input(key="target_pool_gib").value
    app.button(key="target_pool_set").click().run()  # the box shows the applied pool: Set pool keeps it
    assert ok(app).session_state["lab"].config.num_gpu_blocks == 32, f"Set pool rebuilt another pool from {gib} GiB"
    app.number_input(key="target_pool_gib").set_value(gib * 2).run()
    assert any("Unapplied" in w.value and "64 blocks" in w.value for w in app.sidebar.warning)


def unapplied(app) -> str:
    return "\n".join(w.value for w in app.sidebar.warning if "Unapplied changes" in w.value)


def test_a_learner_types_the_exact_pool_and_the_finder_bisects_real_runs(app, random_llama):
    """Item 4: lesson 2's answer is one pool size among 512 (the slider moved ~2.3 blocks a pixel): the box takes it
    exactly, and "Find the smallest pool" answers in a few real runs, both sides of its answer checked."""
    from pykv.border.workload import make_workload
    from pykv.lab.completed_run import run_to_completion

    app.query_params.update({"preset": "burst", "num_gpu_blocks": "32"})
    ok(app.run())
    app.button(key="pool_search_go").click().run()
    done = next(s.value for s in ok(app).sidebar.success if "Smallest pool with no preemption" in s.value)
    answer = int(re.search(r"\*\*(\d+) blocks\*\*", done).group(1))
    probes = [m.value for m in app.sidebar.markdown if m.value.startswith("- ")][0].splitlines()
    assert len(probes) <= 10 and any(f" {answer - 1} blocks: req" in p and "preempted" in p for p in probes), probes
    config = app.session_state["lab"].config
    for blocks, preempts in ((answer, False), (answer - 1, True)):  # the answer holds, run apart from the finder
        run = run_to_completion(config.replace(num_gpu_blocks=blocks), make_workload("burst", seed=0), random_llama)
        assert bool(run.engine.preemptions()) is preempts, blocks
    app.button(key="pool_search_apply").click().run()
    assert ok(app).session_state["lab"].config.num_gpu_blocks == answer
    app.number_input(key="cfg_num_gpu_blocks").set_value(answer - 1).run()  # one block less, typed exactly
    app.button(key="apply").click().run()
    assert ok(app).session_state["lab"].config.num_gpu_blocks == answer - 1
