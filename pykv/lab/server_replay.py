"""A real server's pressure, replayed in the lab: from a diagnosis (start-up capacity, the running and waiting
counts it logged, KV usage, a request trace when there is one) a scaled-down lab config and workload under the
matching vLLM profile, on the shipped model.

What is kept, and how::

    pressure   rho = KV demand of the running requests at their final length / KV capacity, at the peak
               demand   = running x a request's final length   (from the trace; without one, twice the mean
               capacity = # GPU blocks x block size,            length the running requests held at the peak,
                          or V1's "KV cache size: N tokens"     i.e. rho = 2 x KV usage: midway on average)
    lab        R_lab = min(running, 12) running, W_lab = waiting scaled by R_lab / running (the queue that
               comes back after each preemption), each request L_lab = 96 tokens split as the server's
               input:output (half and half without a trace); the pool is sized so that
               R_lab x L_lab / (blocks x 16) = rho
    arrivals   the trace's arrival times squeezed onto lab steps (bursts stay bursts); without a trace, all at
               once when requests waited, else one every other step
    sharing    Mooncake/Bailian hash ids: requests with equal leading ids share the same leading lab blocks

What it cannot keep (said on screen): absolute sizes and times (a 96-token request stands for a 4,000-token
one), the model's compute, tensor parallelism, and any request mix the log does not show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pykv.border.config import EngineConfig, knob_named
from pykv.border.vllm_profiles import DEFAULT_PROFILE, PROFILES, Engine
from pykv.border.workload import Workload
from pykv.bridge import Diagnosis
from pykv.bridge.base.release_guess import release_key
from pykv.bridge.traces.reader import TraceRequest
from pykv.lab.replay_spec import SPEC_BLOCK_TOKENS, ReplaySpec, renumbered, spec_workload

ENGINES = {"v0": Engine.V0, "v1": Engine.V1}  # the bridge's engine names
LAB_BLOCK_SIZE = SPEC_BLOCK_TOKENS
LAB_REQUEST_TOKENS = 96  # one lab request (prompt + output), whatever the server's length
MAX_LAB_RUNNING = 12
MAX_LAB_REQUESTS = 32
MAX_LAB_BLOCKS = int(knob_named("num_gpu_blocks").maximum or 512)  # the app's limit: the replay's link must carry it
LAB_ARRIVAL_SPAN_STEPS = 60  # the trace's whole span, squeezed onto this many engine steps
# A swap pool that holds every lab request's whole KV never fills: a larger one (a server's CPU blocks in proportion
# to a tiny device pool, 1.48 M of them) would only cost memory
MAX_LAB_CPU_BLOCKS = MAX_LAB_REQUESTS * -(-LAB_REQUEST_TOKENS // LAB_BLOCK_SIZE)


@dataclass(frozen=True)
class ServerPressure:
    """What the diagnosis says about the server's KV pressure (None: not seen)."""

    capacity_tokens: int | None
    running: int
    waiting: int
    peak_kv_usage: float | None
    mean_input_tokens: float | None
    mean_output_tokens: float | None
    num_cpu_blocks: int | None
    num_gpu_blocks: int | None

    @property
    def rho(self) -> float:
        """The running requests' KV at their final length over the KV capacity, at the peak (above 1: they
        cannot all finish without preemption). Without the trace's lengths, a request's final length is taken
        as twice what the running requests held on average at the peak (midway through their lives on average):
        an assumption the page states."""
        if self.capacity_tokens and self.mean_input_tokens is not None:
            length = self.mean_input_tokens + (self.mean_output_tokens or 0)
            return self.running * length / self.capacity_tokens
        usage = self.peak_kv_usage if self.peak_kv_usage is not None else 1.0
        return 2 * usage


@dataclass(frozen=True)
class ReplayPlan:
    config: EngineConfig
    workload: Workload
    pressure: ServerPressure
    profile_reason: str
    keeps: list[str] = field(default_factory=list)
    cannot_keep: list[str] = field(default_factory=list)
    spec: ReplaySpec | None = None  # what rebuilds the workload (a Playground link carries it)

    @property
    def lab_rho(self) -> float:
        """The lab's running requests' KV at their final length over its pool."""
        length = max(len(r.prompt_token_ids or []) + r.max_tokens for r in self.workload.requests)
        return self.config.max_num_seqs * length / (self.config.num_gpu_blocks * self.config.block_size)


def profile_for(diagnosis: Diagnosis) -> tuple[str, str]:
    """The lab profile for the recognised release, and why: of the profiles of the server's engine, the oldest whose
    release series (0.10, 0.33) is not older than any release the server may run (its rules the ones that server
    could have grown into), else the newest (an unknown or a newer release); the default where the engine is not
    recognised."""
    release = diagnosis.release
    engine = ENGINES.get(release.engine or "")
    if engine is None:
        p = PROFILES[DEFAULT_PROFILE]
        return p.name, f"the engine was not recognised: profile {p.label()}, the default"
    ours = sorted((p for p in PROFILES.values() if p.engine is engine), key=lambda p: release_key(p.release))
    series = release_key(release.high)[:2] if release.high is not None else None
    chosen = next((p for p in ours if series is not None and series <= release_key(p.release)[:2]), ours[-1])
    return chosen.name, f"the server runs vLLM's {engine} engine ({release.text}): profile {chosen.label()}"


def server_pressure(diagnosis: Diagnosis) -> ServerPressure:
    startup = diagnosis.startup[0] if diagnosis.startup else None
    capacity = None
    if startup is not None:
        block_size = startup.block_size or diagnosis.config.block_size or 16  # vLLM's default --block-size
        capacity = startup.kv_cache_tokens or (startup.num_gpu_blocks * block_size if startup.num_gpu_blocks else None)
    samples = diagnosis.samples
    running = max((s.running or 0 for s in samples), default=0) or (diagnosis.config.max_num_seqs or 0)
    waiting = max((s.waiting or 0 for s in samples), default=0)
    usage = max((s.gpu_kv_usage for s in samples if s.gpu_kv_usage is not None), default=None)
    requests = [r for t in diagnosis.traces for r in t.requests]
    mean_in = sum(r.input_tokens for r in requests) / len(requests) if requests else None
    outs = [r.output_tokens for r in requests if r.output_tokens is not None]
    mean_out = sum(outs) / len(outs) if outs else None
    return ServerPressure(
        capacity,
        max(running, 1),
        waiting,
        usage,
        mean_in,
        mean_out,
        startup.num_cpu_blocks if startup else None,
        startup.num_gpu_blocks if startup else None,
    )


def plan_replay(diagnosis: Diagnosis, vocab_size: int, seed: int = 0) -> ReplayPlan:
    """The lab run that keeps the server's pressure (see the module's docstring)."""
    p = server_pressure(diagnosis)
    profile, why = profile_for(diagnosis)
    running_lab = min(p.running, MAX_LAB_RUNNING)
    waiting_lab = min(round(p.waiting * running_lab / p.running), MAX_LAB_REQUESTS - running_lab)
    traced = sum(len(t.requests) for t in diagnosis.traces)
    count = min(traced, MAX_LAB_REQUESTS) if traced else running_lab + waiting_lab  # a trace: its requests
    share_in = (
        p.mean_input_tokens / (p.mean_input_tokens + p.mean_output_tokens)
        if p.mean_input_tokens and p.mean_output_tokens
        else 0.5
    )
    prompt_len = min(max(round(LAB_REQUEST_TOKENS * share_in), 8), LAB_REQUEST_TOKENS - 8)
    output_len = LAB_REQUEST_TOKENS - prompt_len
    rho = max(p.rho, 0.05)
    blocks = math.ceil(running_lab * LAB_REQUEST_TOKENS / rho / LAB_BLOCK_SIZE)
    blocks = max(blocks, math.ceil(LAB_REQUEST_TOKENS / LAB_BLOCK_SIZE) + 1)  # one request always fits
    capped = blocks > MAX_LAB_BLOCKS  # a calm server: a pool the app's links and sidebar cannot carry
    blocks = min(blocks, MAX_LAB_BLOCKS)
    knobs: dict = dict(
        vllm_profile=profile,
        block_size=LAB_BLOCK_SIZE,
        num_gpu_blocks=blocks,
        max_num_seqs=running_lab,
        max_num_batched_tokens=max(256, running_lab),
        enable_prefix_caching=bool(diagnosis.config.enable_prefix_caching),
        seed=seed,
    )
    keeps = [
        f"the running requests' KV at their final length over the KV capacity: {p.rho:.2f} on the server, "
        f"{running_lab * LAB_REQUEST_TOKENS / (blocks * LAB_BLOCK_SIZE):.2f} in the lab",
        f"{p.running} running at most become {running_lab}, with {count} requests in all"
        + (f" sampled from the trace's {traced:,}" if traced else f" ({p.waiting} waited on the server)"),
        f"input:output {share_in:.0%}:{1 - share_in:.0%} of each request"
        + ("" if p.mean_input_tokens else " (assumed: the log gives no lengths)"),
    ]
    if PROFILES[profile].swaps and p.num_cpu_blocks:
        cpu = max(1, round(p.num_cpu_blocks * blocks / (p.num_gpu_blocks or blocks)))
        capped = cpu > MAX_LAB_CPU_BLOCKS
        cpu = min(cpu, MAX_LAB_CPU_BLOCKS)
        knobs |= dict(preemption_mode="auto", num_cpu_blocks=cpu)
        keeps.append(
            f"the CPU swap pool in proportion to the device pool ({cpu} blocks"
            + (", capped: every lab request's KV fits in it" if capped else "")
            + "); V0 swaps only multi-sequence requests"
        )
    requests = _requests(diagnosis, count, prompt_len, output_len, vocab_size, seed)
    keeps.append(requests.arrivals_kept)
    workload = spec_workload(requests.spec)
    cannot = [
        "absolute lengths and times: a lab request is 96 tokens on the shipped model",
        "the server's compute, tensor parallelism and scheduler timings",
        "requests the log does not show (their lengths are the trace's, or guessed from KV usage)",
    ]
    if capped:
        cannot.append(
            f"the server's low pressure ({p.rho:.2f}): the lab's pool is capped at {MAX_LAB_BLOCKS} blocks, the "
            "app's limit, so the lab runs fuller than the server did"
        )
    if p.mean_input_tokens is None:
        cannot.append(
            "request lengths: without a trace, a request's final length is taken as twice the mean "
            "length the running requests held at the peak"
        )
    return ReplayPlan(EngineConfig(**knobs), workload, p, why, keeps, cannot, requests.spec)


@dataclass(frozen=True)
class _Requests:
    spec: ReplaySpec
    arrivals_kept: str


def _requests(
    diagnosis: Diagnosis, count: int, prompt_len: int, output_len: int, vocab_size: int, seed: int
) -> _Requests:
    """The replay's requests as a ReplaySpec (pykv.lab.replay_spec builds them, here and from a link)."""
    trace = [r for t in diagnosis.traces for r in t.requests]
    prefixes: list[list[int]] = []
    if trace:
        picked = (
            [trace[round(i * (len(trace) - 1) / max(count - 1, 1))] for i in range(count)] if count > 1 else trace[:1]
        )
        steps = _arrival_steps(picked)
        shared_blocks = max(prompt_len // LAB_BLOCK_SIZE - 1, 0)  # the last block stays the request's own
        prefixes = renumbered([list(r.prefix_block_ids or ())[:shared_blocks] for r in picked])
        kept = "arrivals: the trace's arrival times squeezed onto engine steps"
    else:
        waited = any((s.waiting or 0) > 0 for s in diagnosis.samples)
        steps = [0] * count if waited else [2 * i for i in range(count)]
        kept = (
            "arrivals: a burst (requests waited on the server)"
            if not any(steps)
            else "arrivals: one every other step (nothing waited on the server)"
        )
    if not any(prefixes):
        prefixes = []
    spec = ReplaySpec(
        seed=seed, vocab=vocab_size, prompt_len=prompt_len, output_len=output_len, arrivals=steps, prefixes=prefixes
    )
    return _Requests(spec, kept)


def _arrival_steps(picked: list[TraceRequest]) -> list[int]:
    times = [r.arrival_s or 0.0 for r in picked]
    start, span = min(times), (max(times) - min(times)) or 1.0
    return [round((t - start) / span * LAB_ARRIVAL_SPAN_STEPS) for t in times]
