"""The oracle's fixed cases: per vLLM profile, small workloads (pykv's presets where they fit) that each run in
well under a second on either side, covering recompute and swap, chunked prefill on and off, prefix caching on
and off, priorities, the watermark, bursts and staggered arrivals, a long prompt and parallel sampling.

A case's name is ``<profile>/<what>``. Building them needs pykv's tokenizer (``oracle.pykv_side``)."""

from __future__ import annotations

import random

from oracle import build_venvs, pykv_side
from oracle.trace import Case, CaseConfig, CaseRequest

PROFILES = pykv_side.profiles_of(build_venvs.RELEASES)  # the profiles proved here: those whose release has a venv


def _requests(
    preset: str, seed: int = 0, priorities: list[int] | None = None, seqs: int = 1, **kwargs
) -> list[CaseRequest]:
    reqs = []
    for i, (ids, max_tokens, arrival) in enumerate(pykv_side.preset(preset, seed=seed, **kwargs)):
        prio = priorities[i % len(priorities)] if priorities else 0
        reqs.append(CaseRequest(f"r{i}", ids, max_tokens, arrival, priority=prio, n=seqs))
    return reqs


def _swapped_mid_prefill() -> list[CaseRequest]:
    """Four decoding requests (one of 15 prompt tokens, three of 10, d3 ending after 5 outputs) and x, 121 prompt
    tokens, arriving at step 1: at 16 tokens a block, 13 blocks hold x's whole-prompt reservation beside them with
    one to spare; at step 3 d0 takes it for its 17th token, V0's worst-case append check (a free block per sequence)
    then fails for d1, and V0 swaps out x, the tail of the running queue, mid-prefill (60 of its 121 tokens)."""

    def ids(start: int, n: int) -> list[int]:
        return list(range(start, start + n))

    return [
        CaseRequest("d0", ids(100, 15), 30),
        CaseRequest("d1", ids(200, 10), 30),
        CaseRequest("d2", ids(300, 10), 30),
        CaseRequest("d3", ids(400, 10), 5),
        CaseRequest("x", ids(1000, 121), 8, arrival_step=1),
    ]


def _case(
    profile: str, what: str, requests: list[CaseRequest], normalise: tuple[str, ...] = (), note: str = "", **config
) -> Case:
    return Case(
        name=f"{profile}/{what}",
        config=CaseConfig(profile=profile, **config),
        requests=requests,
        normalise=list(normalise),
        note=note,
    )


def cases_for(profile: str) -> list[Case]:
    p = pykv_side.vllm_profile(profile)
    v0 = pykv_side.runs_v0_engine(profile)
    out = [
        _case(
            profile,
            "burst",
            _requests("burst", n=8, max_tokens=24),
            num_gpu_blocks=20,
            max_num_seqs=8,
            max_num_batched_tokens=128,
            note="8 at once, recompute, chunked",
        ),
        _case(
            profile,
            "storm24",
            _requests("storm", n=12, max_tokens=48),
            num_gpu_blocks=24,
            note="the storm preset at 24 blocks: lockstep outputs, many recompute preemptions",
        ),
        _case(
            profile,
            "spread",
            _requests("spread", n=8, max_tokens=32, every=3),
            num_gpu_blocks=16,
            max_num_seqs=4,
            max_num_batched_tokens=64,
            note="staggered arrivals, 64-token budget",
        ),
        _case(
            profile,
            "long_prompt",
            _requests("long_context", n=4, max_tokens=16),
            num_gpu_blocks=48,
            max_num_batched_tokens=64,
            note="a 300+ token prompt chunked over a 64-token budget",
        ),
        _case(
            profile,
            "prefix_on",
            _requests("shared_prefix", n=6, max_tokens=16),
            num_gpu_blocks=32,
            enable_prefix_caching=True,
            max_num_batched_tokens=128,
            note="a shared system prompt, prefix caching",
        ),
        _case(
            profile,
            "prefix_off",
            _requests("shared_prefix", n=6, max_tokens=16),
            num_gpu_blocks=32,
            max_num_batched_tokens=128,
            note="the same without prefix caching",
        ),
        _case(
            profile,
            "priority",
            _requests("burst", n=8, max_tokens=24, priorities=[3, 1, 2, 0]),
            num_gpu_blocks=20,
            priority_scheduling=True,
            note="priority scheduling, mixed priorities",
        ),
    ]
    if not v0:
        out.append(
            _case(
                profile,
                "priority_victims",
                _requests("spread", n=6, max_tokens=24, every=2, priorities=[5, 0, 9, 1]),
                num_gpu_blocks=12,
                max_num_batched_tokens=64,
                priority_scheduling=True,
                note="priority victims that were scheduled earlier in the step, and requests that preempt "
                "themselves: 0.33.0 takes the victim's chunk back and scans on past a self-preemption; "
                "0.10.2 leaves the chunk in the batch, skips the next request and ends the scan",
            )
        )
    if not p.chunked_prefill_always:  # 0.10.2 always chunks prefills
        out.append(
            _case(
                profile,
                "chunked_off",
                _requests("long_context", n=4, max_tokens=16),
                num_gpu_blocks=48,
                max_num_batched_tokens=512,
                enable_chunked_prefill=False,
                note="chunked prefill off: whole prompts only",
            )
        )
    if p.default_watermark is not None and not v0:  # V1's admission watermark (0.33.0)
        out.append(
            _case(
                profile,
                "watermark",
                _requests("burst", n=8, max_tokens=24),
                num_gpu_blocks=24,
                watermark=0.1,
                note="0.33's admission watermark at 10%: int(0.1 * 24) = 2 blocks (vLLM "
                "counts the null block in num_blocks)",
            )
        )
    if p.swaps:
        out += [
            _case(
                profile,
                "swap_storm",
                _requests("storm", n=12, max_tokens=48),
                num_gpu_blocks=24,
                num_cpu_blocks=64,
                preemption_mode="swap",
                note="swap preemption to a 64-block CPU pool",
            ),
            _case(
                profile,
                "swap_chunked_off",
                _requests("burst", n=8, max_tokens=32),
                num_gpu_blocks=20,
                num_cpu_blocks=64,
                preemption_mode="swap",
                enable_chunked_prefill=False,
                max_num_batched_tokens=256,
                note="swap, chunked prefill off",
            ),
            _case(
                profile,
                "parallel_n2",
                _requests("burst", n=4, max_tokens=16, seqs=2),
                num_gpu_blocks=20,
                num_cpu_blocks=64,
                preemption_mode="swap",
                note="n=2 parallel sampling, swap (V0 swaps a group)",
            ),
            _case(
                profile,
                "swap_mid_prefill",
                _swapped_mid_prefill(),
                num_gpu_blocks=13,
                num_cpu_blocks=64,
                preemption_mode="swap",
                max_num_batched_tokens=64,
                note="a 121-token prompt swapped out after its first 60-token chunk; 0.6.3 never chunks a swap-in "
                "(_schedule_swapped without enable_chunking), so its 61 tokens wait until a decode finishes",
            ),
        ]
    return out


def all_cases(profiles: tuple[str, ...] = PROFILES) -> list[Case]:
    return [c for p in profiles for c in cases_for(p)]


def random_case(profile: str, seed: int) -> Case:
    """A random small workload for the sweep (bench/oracle_sweep.py): arrivals, prompt lengths, outputs and the
    pool drawn from ``seed``."""
    rng = random.Random(seed)
    n = rng.randint(3, 10)
    bs = 16
    p = pykv_side.vllm_profile(profile)
    chunked = True if p.chunked_prefill_always else rng.random() < 0.7
    budget = rng.choice([64, 128, 256]) if chunked else 512
    reqs = []
    for i in range(n):
        length = rng.randint(4, 200)
        reqs.append(
            CaseRequest(
                f"r{i}",
                [rng.randrange(3, 4000) for _ in range(length)],
                rng.randint(4, 40),
                arrival_step=rng.choice([0, 0, rng.randint(0, 30)]),
            )
        )
    longest = max(len(r.prompt_token_ids) + r.max_tokens for r in reqs)
    blocks = max(-(-longest // bs) + 2, rng.randint(8, 40))
    usable = blocks - p.null_block  # V1 keeps block 0 back as its null block
    config = dict(
        block_size=bs,
        num_gpu_blocks=blocks,
        max_num_seqs=rng.choice([2, 4, 8]),
        max_num_batched_tokens=budget,
        enable_chunked_prefill=chunked,
        enable_prefix_caching=rng.random() < 0.3,
        max_model_len=min(usable * bs, budget if not chunked else 1024),
    )
    if p.swaps and rng.random() < 0.4:
        config.update(preemption_mode="swap", num_cpu_blocks=rng.choice([8, 64]))
    if p.prefix_chunks_whole_blocks and chunked and config["enable_prefix_caching"] and budget % bs:
        config["enable_prefix_caching"] = False
    for r in reqs:
        r.prompt_token_ids = r.prompt_token_ids[: config["max_model_len"] - 1]
    return _case(profile, f"random-{seed}", reqs, **config)
