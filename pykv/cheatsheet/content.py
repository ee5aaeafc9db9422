"""What the cheat sheet says, as data: the tuning order (lesson 11), symptoms and fixes (lessons 10, 12
and the rest) and, per EngineConfig knob that is a vLLM flag, the flag and what the course showed of
its effect on preemption. Which knobs exist, what each does and which releases have it come from
EngineConfig's table (``pykv.border.config.knobs``); only what the table cannot know is written here.

A citation names a lesson by id and a step by title, so renumbering lessons or steps keeps the links
right (the page resolves them against the course it is given).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cite:
    lesson: str  # the lesson's id
    step: str | None = None  # a step's title (None: the lesson's first step)


@dataclass(frozen=True)
class Row:
    """One line of a table: its cells (Markdown-free text; `backticks` mark code) and the steps that show it."""

    cells: tuple[str, ...]
    cites: tuple[Cite, ...]


@dataclass(frozen=True)
class KnobNote:
    """What EngineConfig's table cannot say about a knob that is a vLLM flag."""

    flag: str
    preemption: str  # its effect on preemption, as the course showed it
    cites: tuple[Cite, ...] = ()
    does: str | None = None  # None: the first clause of the knob's help
    versions: str | None = None  # None: the releases of the profiles that have the knob
    note: str = ""  # added after the releases


L02, L03, L04 = "what-triggers-preemption", "recompute-is-a-rollback", "swap-versus-recompute"
L07, L08, L09 = "chunked-prefill-is-no-checkpoint", "prefix-caching-makes-recompute-cheap", "the-cost-bill"
L10, L11, L12 = "the-preemption-storm", "tuning-in-order", "troubleshooting-from-logs-and-metrics"
L13, L14 = "one-storm-three-releases", "the-recompute-tax"

TUNING_RULE = "Change one knob, rerun, compare with the previous run; keep the change only if it helped."
TUNING_ORDER: tuple[Row, ...] = (
    Row(
        (
            "KV memory first",
            "`--gpu-memory-utilization` (more GPUs, a smaller KV dtype): the one change that only helps",
        ),
        (Cite(L11, "1. Pool size"), Cite(L10, "The fix: capacity or lower concurrency")),
    ),
    Row(
        (
            "Concurrency to match",
            "`--max-num-seqs` = what the pool holds at full length; the requests past it were going to be preempted",
        ),
        (Cite(L11, "2. max_num_seqs"), Cite(L10, "More concurrency, no more progress")),
    ),
    Row(
        (
            "Swap space",
            "only on V0 and only while preemptions remain: it changes their price (bytes copied, not tokens "
            "recomputed) and does not end the storm; "
            "V1 has none (0.10.2 swaps only when `--preemption-mode` sends it back to V0)",
        ),
        (Cite(L11, "3. Swap space"), Cite(L04, "The bill, side by side")),
    ),
    Row(
        ("Prefix caching", "when prompts share a prefix: less prefill and less memory (on by default in V1)"),
        (Cite(L11, "4. Prefix caching"), Cite(L08, "The re-prefill skips the cached blocks")),
    ),
    Row(
        (
            "Chunked prefill last",
            "latency shaping: the same prefill work spread over steps; on 0.10.2 it can add preemptions",
        ),
        (Cite(L11, "5. Chunked prefill"), Cite(L07, "Over and over")),
    ),
    Row(
        ("Re-check", "prefix caching frees memory, so the concurrency cap may go back up"),
        (Cite(L11, "Re-check the earlier knobs"),),
    ),
)

SYMPTOM_COLUMNS = ("Symptom in logs / metrics", "Cause", "What to change")
SYMPTOMS: tuple[Row, ...] = (
    Row(
        (
            "`vllm:num_preemptions_total` keeps rising, KV cache usage pinned near 100%, requests far slower than "
            "their length explains",
            "more requests admitted than the pool holds at full length: a storm",
            "more KV memory; else lower `--max-num-seqs` to what the pool holds",
        ),
        (Cite(L10, "More concurrency, no more progress"), Cite(L10, "The fix: capacity or lower concurrency")),
    ),
    Row(
        (
            "KV cache usage near 100%, no preemptions",
            "nothing: the cache is meant to be full",
            "nothing; alert on preemptions, not on usage",
        ),
        (Cite(L12, "The stats line"),),
    ),
    Row(
        (
            "slow requests, and no `is preempted by PreemptionMode` line in a V1 log",
            "V1 (0.10.2, 0.33.0) writes no line per preemption",
            "read `vllm:num_preemptions_total` (or 0.33's `vllm:request_num_preemptions`): no V1 stats line counts "
            "them, its `Preemptions: N` is never printed",
        ),
        (Cite(L12, "A preemption, and not a word in the log"), Cite(L12, "The stats line never counts it")),
    ),
    Row(
        (
            "`vllm:num_preemptions_total` flat during a slowdown, then a jump",
            "V1 counts a preemption when the victim next produces a token",
            'read its increase over a window, against steps; never as "now"',
        ),
        (Cite(L10, "The storm, and a quiet log"), Cite(L12, "When vLLM 0.33 counts it")),
    ),
    Row(
        (
            "0.6.3's warning reads `total_num_cumulative_preemption=51`",
            "V0 warns on the 1st, 51st, 101st... preemption only",
            "count with the metric, not the log",
        ),
        (Cite(L12, "... and its preemption warning"), Cite(L13, "The second passes in silence, and V0 admits anyway")),
    ),
    Row(
        (
            "prompt throughput normal during a storm (V1)",
            "V1 counts each prompt once; re-prefills never show",
            "watch preemptions and request times (pykv: `pykv:prefill_tokens_total`)",
        ),
        (Cite(L10, "More concurrency, no more progress"), Cite(L13, "The same counters, different numbers")),
    ),
    Row(
        (
            "prefix-cache hits below what the shared prompt should give; one client never shares",
            "its prompt differs early: a trailing space, CRLF, a date near the top",
            "diff the tokens, fix the client or template, verify with the hit counter",
        ),
        (
            Cite(L12, "The prefix cache hits less than it should"),
            Cite(L12, "Two prompts that look identical"),
            Cite(L12, "Fix and verify"),
        ),
    ),
    Row(
        (
            "a short shared system prompt never hits",
            "only full blocks are shared; the last prompt token is always recomputed",
            "a longer shared prefix, or a smaller `--block-size`",
        ),
        (Cite(L08, "The floor: a prefix shorter than one block is never hit"),),
    ),
    Row(
        (
            "long prompts preempted again and again, no output yet (0.10.2)",
            "0.10.2 admits on the first chunk alone; a victim restarts from its first chunk",
            "upgrade (0.33.0 waits until the whole input fits), or more KV memory",
        ),
        (Cite(L07, "Over and over"), Cite(L07, "vLLM 0.33 and 0.6 refuse the first chunk")),
    ),
    Row(
        (
            "every request's token late in the step after a preemption",
            "the victim's re-prefill shares their step",
            "fewer preemptions first; prefix caching or a CPU offload tier shrink the re-prefill",
        ),
        (Cite(L09, "The re-prefill, and who waits for it"), Cite(L14, "The tax")),
    ),
    Row(
        (
            "`Aborted due to the lack of CPU swap space` (0.6.3)",
            "the swap pool cannot hold the victim",
            "raise `--swap-space`, or lower concurrency",
        ),
        (Cite(L04, "When the swap pool is too small"),),
    ),
)

KNOB_COLUMNS = ("vLLM flag (pykv knob)", "What it does", "Effect on preemption, as the course showed it", "Releases")
KNOB_NOTES: dict[str, KnobNote] = {
    "block_size": KnobNote(
        "--block-size",
        "sets the grain of prefix sharing: a prefix shorter than a block never hits",
        (Cite(L08, "The floor: a prefix shorter than one block is never hit"),),
    ),
    "num_gpu_blocks": KnobNote(
        "--num-gpu-blocks-override",
        "more blocks, fewer preemptions: 10 -> 30 usable blocks ended a storm (V1: N-1 usable)",
        (Cite(L11, "1. Pool size"), Cite(L10, "The fix: capacity or lower concurrency")),
    ),
    "gpu_memory_utilization": KnobNote(
        "--gpu-memory-utilization",
        "the GPU's way to more blocks, the tuning guide's first advice",
        (Cite(L11, "1. Pool size"),),
    ),
    "swap_space": KnobNote(
        "--swap-space",
        "recomputes become copies, the storm stays; too small: recompute or abort",
        (Cite(L04, "The bill, side by side"), Cite(L10, "A flag changes the bill, not the storm")),
        note="0.10.2: V0 engine only",
    ),
    "max_num_seqs": KnobNote(
        "--max-num-seqs",
        "past what the pool holds at full length: a storm and no gain; at it: none",
        (Cite(L10, "More concurrency, no more progress"), Cite(L11, "2. max_num_seqs")),
    ),
    "max_num_batched_tokens": KnobNote(
        "--max-num-batched-tokens",
        "sets the prefill chunk; the tuning guide lists lowering it against preemptions",
        (Cite(L07, "A long prompt, one chunk per step"), Cite(L11, "5. Chunked prefill")),
    ),
    "max_model_len": KnobNote(
        "--max-model-len", "caps how far a request grows, so its peak blocks (not shown in the course)"
    ),
    "preemption_mode": KnobNote(
        "--preemption-mode",
        "changes what a preemption costs, never when one comes",
        (Cite(L04, "The bill, side by side"), Cite(L03, "Restart from prefill over prompt + generated tokens")),
        does="recompute (drop the KV) or swap (copy it to CPU); 0.6.3's default swaps only n > 1 requests",
        versions="0.6.3",
        note="0.10.2: any value falls back to V0, which swaps",
    ),
    "preemption_victim": KnobNote(
        "--scheduling-policy",
        "picks who pays, not how many: least-computed-first cut the recompute tax to a quarter",
        (Cite(L02, "The trigger: no block for the next token"), Cite(L14, "Choose the victim that loses the least")),
        does="fcfs: the last of the running queue is the victim; priority: the worst priority (pykv adds lcf, sglang)",
    ),
    "kv_offloading_size": KnobNote(
        "--kv-offloading-size",
        "victims load their prompt blocks back, their output is recomputed; the count stays",
        (Cite(L14, "Keep them in CPU memory: V1's offloading tier"),),
        does="a CPU copy of each request's full prompt blocks",
        note="from 0.11.1; to 0.12 with --kv-offloading-backend native",
    ),
    "enable_prefix_caching": KnobNote(
        "--enable-prefix-caching",
        "a victim's cached blocks come back as hits: a cheaper re-prefill, sometimes fewer preemptions",
        (Cite(L08, "The re-prefill skips the cached blocks"), Cite(L10, "A flag changes the bill, not the storm")),
        note="on by default in V1",
    ),
    "enable_chunked_prefill": KnobNote(
        "--enable-chunked-prefill",
        "lowers a step's peak demand; on 0.10.2 it admits on a first chunk and adds mid-prefill preemptions",
        (Cite(L07, "Over and over"), Cite(L07, "vLLM 0.33 and 0.6 refuse the first chunk")),
        note="0.10.2 forces it on",
    ),
}
