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
