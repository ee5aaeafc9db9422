"""pykv's side of the oracle: run a case in pykv, return its trace and fill in the tokens it produced.

Every import of pykv lives in this module (pykv's internal layout may change; fix it here only). It uses the
public names and reads the engine's queues and pool through ``engine.scheduler`` and ``engine.kv``.
"""

from __future__ import annotations

import dataclasses
import time

from oracle.trace import Case, StepTrace, Trace

_LOADED = None  # one read-only model shared by every engine of this process


def _loaded():
    global _LOADED
    if _LOADED is None:
        from pykv import load_model

        _LOADED = load_model("tiny", "cpu", "float32")
    return _LOADED


def model_folder() -> str:
    """The shipped model's folder (the vLLM drivers read its config.json only)."""
    from pykv import default_model_path

    return str(default_model_path())


def offload_tier(num_blocks: int, block_size: int):
    """pykv's offloading tier over a pool of its own (oracle/tier.py drives it beside vLLM's manager)."""
    from pykv.engine.kv.block_pool import BlockPool
    from pykv.engine.kv.offload_tier import OffloadTier

    return OffloadTier(BlockPool(num_blocks), block_size)


def vllm_profile(name: str):
    """pykv's profile of that name (``VllmProfile``): what the release differs in, read by the cases and the
    harness instead of the profile's name."""
    from pykv.border.vllm_profiles import PROFILES

    return PROFILES[name]


def profiles_of(releases: tuple[str, ...]) -> tuple[str, ...]:
    """The names of pykv's profiles whose release is among ``releases``, in the profile table's order."""
    from pykv.border.vllm_profiles import PROFILES

    return tuple(name for name, p in PROFILES.items() if p.release in releases)


def runs_v0_engine(name: str) -> bool:
    from pykv.border.vllm_profiles import Engine

    return vllm_profile(name).engine is Engine.V0


def _scheduled(chunk, v0: bool) -> list:
    """A chunk as ``[id, start, tokens]``. V0 schedules a prefix-cache hit as part of the prefill (0.6.3.post1
    ``Scheduler._get_num_new_tokens``; its model runner skips the hit's compute), so its chunk starts before the hit."""
    cached = chunk.num_cached_tokens if v0 else 0
    return [chunk.request_id, chunk.start - cached, chunk.num_new_tokens + cached]


def engine_config(case: Case, log_every_step: bool = False):
    from pykv import EngineConfig

    c = case.config
    values = dict(
        vllm_profile=c.profile,
        block_size=c.block_size,
        num_gpu_blocks=c.num_gpu_blocks,
        max_num_seqs=c.max_num_seqs,
        max_num_batched_tokens=c.max_num_batched_tokens,
        max_model_len=c.max_model_len,
        enable_chunked_prefill=c.enable_chunked_prefill,
        enable_prefix_caching=c.enable_prefix_caching,
        preemption_mode=c.preemption_mode,
        preemption_victim="priority" if c.priority_scheduling else "last",
        attention_backend="torch",
    )
    if log_every_step:  # a stats line after every step, as the real engine's driver logs one
        values["log_stats_interval"] = 1
    if vllm_profile(c.profile).swaps:
        values["num_cpu_blocks"] = c.num_cpu_blocks
    if c.watermark is not None:
        values["watermark"] = c.watermark
    if c.num_offload_blocks is not None:
        values["num_offload_blocks"] = c.num_offload_blocks
    return EngineConfig(**values)


STATS_LINE_PREFIXES = ("Engine 000: ", "Avg prompt throughput", "Prefix cache hit rate")  # V1 and V0 stats lines
VOCAB = 4096  # the stand-in's tokens lie in [0, VOCAB), inside the shipped model's vocabulary


def stand_in_token(token_ids: list[int], k: int = 0) -> int:
    """The stand-in model's next token: a function of the sequence so far (as a greedy model is: equal prefixes
    continue equally, so prefix caching sees what it would) and of the sequence index ``k`` (parallel sampling)."""
    h = len(token_ids) * 1_000_003 + k * 7919
    for t in token_ids[-8:]:
        h = (h * 31 + t) % 2_147_483_647
    return h % VOCAB


class _StandInRunner:
    """Replaces the engine's ModelRunner when ``use_model=False``: same RunResult (a token for every chunk that
    reaches the end of its known tokens, the first tokens of forks), no forward pass. The scheduler, the KV
    cache manager and the cache engine's swap copies stay pykv's own: only the model's arithmetic is skipped,
    which the scheduler never reads (its tokens are fed to vLLM's side as they are)."""

    def __init__(self, run_result_class) -> None:
        self._result = run_result_class

    def run(self, out, requests, record_kernels: bool = False):
        sampled, forks = {}, {}
        for chunk in out.chunks:
            request = requests[chunk.request_id]
            if chunk.orphaned:
                continue  # vLLM 0.10.2's victim left in the batch: nothing computed, nothing sampled
            if chunk.start + chunk.num_new_tokens == request.num_tokens:
                sampled[chunk.request_id] = stand_in_token(request.all_token_ids)
                if request.pending_forks:
                    forks[chunk.request_id] = [
                        stand_in_token(request.all_token_ids, k) for k in range(1, request.pending_forks + 1)
                    ]
        return self._result(sampled, 0.0, forks)


def run_case(case: Case, use_model: bool = False) -> tuple[Case, Trace]:
    """Run ``case`` in pykv (greedy, ignore_eos: every sequence makes exactly max_tokens tokens); return the case
    with ``output_token_ids`` and ``max_model_len`` filled in from the run, and pykv's trace. ``use_model``: run
    the shipped model's forward passes (a few ms a step for the tiny model) instead of the stand-in."""
    filled, trace, _ = run_case_observed(case, use_model, log_every_step=False)
    return filled, trace


def run_case_observed(case: Case, use_model: bool = False, log_every_step: bool = True) -> tuple[Case, Trace, dict]:
    """``run_case``, also returning what an operator would read: ``stats_lines`` (the stats lines logged after
    each step, one list per step: a line after every step), ``metrics`` (the /metrics body after the run) and
    ``preemptions_per_request`` (request id -> times preempted), ``step_ms`` (each step's wall time) and
    ``other_lines`` (every other log line, in order)."""
    from pykv import LLMEngine, SamplingParams

    engine = LLMEngine(engine_config(case, log_every_step), loaded=_loaded())
    if not use_model:
        from pykv.engine.model_runner import RunResult

        engine.runner = _StandInRunner(RunResult)
    trace = Trace(side=f"pykv {case.config.profile}", case=case.name)
    stats_lines: list[list[str]] = []
    other_lines: list[str] = []  # every other log line (V0's preemption warning, pykv's notes)
    step_ms: list[float] = []  # each engine.step(), wall clock, as the real engine's driver times LLMEngine.step()
    v0 = runs_v0_engine(case.config.profile)
    pending = sorted(case.requests, key=lambda r: r.arrival_step)
    sched, kv = engine.scheduler, engine.kv
    error: str | None = None
    while pending or engine.has_unfinished_requests():
        if engine.step_count >= case.max_steps:
            error = f"stopped at max_steps={case.max_steps}"
            break
        while pending and pending[0].arrival_step <= engine.step_count:
            r = pending.pop(0)
            params = SamplingParams(max_tokens=r.max_tokens, ignore_eos=True, n=r.n, temperature=0.0)
            engine.add_request(list(r.prompt_token_ids), params, r.request_id, priority=r.priority)
        t0 = time.perf_counter()
        report = engine.step()
        step_ms.append((time.perf_counter() - t0) * 1000)
        stats_lines.append([line for line in report.log_lines if line.startswith(STATS_LINE_PREFIXES)])
        other_lines += [line for line in report.log_lines if not line.startswith(STATS_LINE_PREFIXES)]
        trace.steps.append(
            StepTrace(
                step=report.step,
                scheduled=[_scheduled(c, v0) for c in report.chunks],
                preempted=[[p.request_id, p.mode] for p in report.preempted],
                swapped_in=[p.request_id for p in report.swapped_in],
                waiting=[r.request_id for r in sched.waiting],
                running=[r.request_id for r in sched.running],
                swapped=[r.request_id for r in sched.swapped],
                free_blocks=kv.pool.num_free_blocks(),
                finished=[o.request_id for o in report.finished],
            )
        )
    trace.error = error
    trace.num_preemptions = sched.num_preemptions
    modes = [p[1] for s in trace.steps for p in s.preempted]
    trace.counters = {
        "steps": len(trace.steps),
        "preemptions": len(modes),
        "recompute": modes.count("recompute"),
        "swap": modes.count("swap"),
        "scheduled_tokens": sum(c[2] for s in trace.steps for c in s.scheduled),
    }
    requests = []
    for r in case.requests:
        seqs = [r.request_id] + [f"{r.request_id}#{k}" for k in range(1, r.n)]
        outs = [list(engine.outputs[s].output_token_ids) if s in engine.outputs else [] for s in seqs]
        requests.append(dataclasses.replace(r, output_token_ids=outs))
    config = dataclasses.replace(case.config, max_model_len=engine.max_model_len)
    observed = {
        "stats_lines": stats_lines,
        "metrics": engine.metrics.exposition(),
        "step_ms": step_ms,
        "other_lines": other_lines,
        "preemptions_per_request": {
            r.request_id: engine.outputs[r.request_id].num_preemptions
            for r in case.requests
            if r.request_id in engine.outputs
        },
    }
    return dataclasses.replace(case, config=config, requests=requests), trace, observed


def prompt_tokens(texts: list[str]) -> list[list[int]]:
    """Token ids of prompts (pykv's shipped tokenizer), for cases built from pykv's workload presets."""
    loaded = _loaded()
    return [list(loaded.encode(t)) for t in texts]


def preset(name: str, seed: int = 0, **kwargs):
    """A pykv workload preset (pykv.workload.make_workload) as [(prompt_token_ids, max_tokens, arrival_step)]."""
    from pykv.border.workload import make_workload

    workload = make_workload(name, seed=seed, **kwargs)
    out = []
    for r in workload.requests:
        ids = list(r.prompt_token_ids) if r.prompt_token_ids is not None else prompt_tokens([r.prompt])[0]
        out.append((ids, r.max_tokens, r.arrival_step))
    return out


def run_real_engine(cases: list[dict], detail: bool = False, fresh: bool = True) -> list[dict]:
    """The cases (as JSON dicts) through vLLM's real CPU engine, in its own venv and process
    (pykv.real_vllm.runner; ``fresh``: run it even if the traces are cached); raises ``RealEngineUnavailable``
    with the reason where it cannot run."""
    from pykv.real_vllm import runner

    return runner.run_cases(cases, model_folder(), detail=detail, fresh=fresh)


def real_engine_installed() -> bool:
    from pykv.real_vllm import install

    return install.is_installed()
