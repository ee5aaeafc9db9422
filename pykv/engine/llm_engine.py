"""LLMEngine: add requests, step (schedule -> copy -> run -> postprocess), generate, snapshot."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import torch

from pykv.border.config import EngineConfig, show_value
from pykv.border.pcie import modelled_copy_seconds
from pykv.border.request import Request, RequestOutput, SamplingParams, sequence_id
from pykv.border.snapshot import Snapshot
from pykv.border.step_report import CopyOnWrite, OffloadTransfer, PreemptionView, StepReport
from pykv.border.vllm_profiles import Engine
from pykv.engine.kv.block_copy import CopyKind
from pykv.engine.kv.block_pool import BlockPool
from pykv.engine.kv.cache_engine import CacheEngine, CopyTiming
from pykv.engine.kv.kv_cache_manager import KVCacheManager
from pykv.engine.kv.sizing import check_pool_budget, engine_sizing
from pykv.engine.max_model_len import fit_max_model_len, fitted_because
from pykv.engine.model.attention import prepare_backend, resolve_backend
from pykv.engine.model.loader import LoadedModel, load_model
from pykv.engine.model_runner import ModelRunner, RunResult
from pykv.engine.observe.costs import CostLedger, RecomputeStats
from pykv.engine.observe.metrics import EngineMetrics, logger
from pykv.engine.observe.observer import StepObserver, StepOutcome
from pykv.engine.observe.snapshot_builder import build_snapshot
from pykv.engine.observe.totals import EngineTotals
from pykv.engine.parallel_sampling import check_n, fork_generators, group_output, sequence_ids
from pykv.engine.prompt_checks import Prompt, checked_priority, checked_request_id, token_ids_of
from pykv.engine.sched.scheduler import Scheduler, SchedulerOutput
from pykv.engine.sched.scheduler_v0 import V0Scheduler
from pykv.engine.sched.scheduler_v1 import V1Scheduler
from pykv_kernels.launch_record import LaunchRecord

SCHEDULERS: dict[Engine, type[Scheduler]] = {Engine.V0: V0Scheduler, Engine.V1: V1Scheduler}  # by engine generation


@dataclass(frozen=True)
class RecordedStep:
    """A step's report and what its forward pass launched (``LLMEngine.step_recording_kernels``)."""

    report: StepReport
    launches: tuple[LaunchRecord, ...]  # layer 0's kernel launches, in launch order; () on the torch backend


class LLMEngine:
    """A vLLM-style engine over one paged device KV pool and one CPU swap pool.

    ``loaded`` lets several engines share one read-only model (the app does, across sessions).
    ``stepwise`` says the engine is looked at step by step (the lab): there ``attention_backend="auto"``
    runs the Triton kernels even on a CPU (``pykv.engine.model.attention.resolve_backend``).
    The engine keeps no history: ``step()`` returns its StepReport, and whoever wants to step back
    (the lab) keeps ``snapshot(report)`` of each step.
    """

    def __init__(self, config: EngineConfig, loaded: LoadedModel | None = None, stepwise: bool = False) -> None:
        if config.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError("device='cuda' was asked for but this machine has no CUDA GPU; use device='cpu'.")
        self.config = config
        prepare_backend(config.attention_backend, config.device, stepwise)  # before the load imports triton
        self.loaded = loaded or load_model(config.model, config.device, config.dtype)
        model_cfg = self.loaded.config
        self.sizing = engine_sizing(config, model_cfg)  # the pools, sized once (the app's seat reads the same)
        if config.gpu_memory_utilization is not None:
            config = config.replace(num_gpu_blocks=self.sizing.num_gpu_blocks)
            self.config = config
        self.max_model_len, self.startup_lines = fit_max_model_len(
            config, model_cfg.max_position_embeddings, self.sizing.bytes_per_block
        )
        self._max_model_len_note = fitted_because(config, self.max_model_len, model_cfg.max_position_embeddings)
        for line in self.startup_lines:
            logger.info(line)
        check_pool_budget(config, self.sizing)  # before any block or tensor is allocated
        device_pool = BlockPool(
            config.num_gpu_blocks,
            null_block=config.profile.null_block,
            free_unhashed_first=config.profile.free_unhashed_first,
        )
        self.kv = KVCacheManager(
            device_pool,
            config.block_size,
            config.enable_prefix_caching,
            cpu_pool=BlockPool(self.sizing.num_cpu_blocks),
            offload=self.sizing.num_offload_blocks is not None,
            share_full_blocks=config.profile.shares_full_blocks,
        )
        self.scheduler = SCHEDULERS[config.profile.engine](config, self.kv, self.max_model_len)
        self.cache = CacheEngine(
            model_cfg,
            self.sizing.num_gpu_blocks,
            self.sizing.num_cpu_blocks,
            config.block_size,
            config.dtype,
            config.device,
            config.swap_copy,
        )
        self.backend = resolve_backend(config.attention_backend, config.device, stepwise)
        self.runner = ModelRunner(self.loaded, self.cache, self.kv, self.backend, config.device)
        self.ledger = CostLedger(
            self.sizing.bytes_per_block, config.device, config.pcie_bandwidth_gbps, config.pcie_copy_overhead_us
        )
        self.metrics = EngineMetrics(config.profile, offloading_tier=self.sizing.num_offload_blocks is not None)
        self.observer = StepObserver(self.metrics, config)
        self.step_count = 0  # steps taken so far; changed by step() only
        self.outputs: dict[str, RequestOutput] = {}  # finished requests, in finishing order
        self._num_added = 0
        self._sequence_ids: set[str] = set()  # ids of the sequences parallel sampling will fork (reserved)

    @property
    def bytes_per_block(self) -> int:
        """One KV block's bytes, K and V of every layer (``self.sizing``)."""
        return self.sizing.bytes_per_block

    # ---- requests -------------------------------------------------------------------------

    def _make_request(
        self,
        prompt: Prompt,
        params: SamplingParams | None,
        request_id: str | None,
        offset: int = 0,
        auto_prefix: str = "",
        reserved: frozenset[str] = frozenset(),
        priority: int = 0,
    ) -> Request:
        """Check and tokenize one prompt; ``offset`` places it among prompts queued together, ``reserved`` holds
        their ids (an automatic id skips every id in use, the caller's own ones included)."""
        checked_priority(priority)
        params = SamplingParams() if params is None else params
        if not isinstance(params, SamplingParams):
            raise ValueError(
                f"params must be a SamplingParams (or None for the defaults), got {show_value(params)} "
                f"({type(params).__name__})."
            )
        token_ids = token_ids_of(prompt, self.loaded.encode, self.max_model_len, self._max_model_len_note)
        if not token_ids:
            raise ValueError("The prompt is empty (no tokens); give at least one character or token id.")
        vocab = self.loaded.config.vocab_size
        if any(not 0 <= t < vocab for t in token_ids):
            raise ValueError(f"Prompt token ids must lie in [0, {vocab}); got {min(token_ids)}..{max(token_ids)}.")
        # 0.33 also refuses a prompt of exactly max_model_len (VllmProfile.prompt_leaves_output_room).
        p = self.config.profile
        full = len(token_ids) == self.max_model_len and p.prompt_leaves_output_room
        if len(token_ids) > self.max_model_len or full:
            raise ValueError(
                f"The prompt has {len(token_ids)} tokens but max_model_len is {self.max_model_len}"
                f"{self._max_model_len_note}"
                f"{f' and vLLM {p.release} keeps room for one output token' if full else ''}; shorten it."
            )
        check_n(params, len(token_ids), self.config)
        index = self._num_added + offset
        if request_id is None:
            request_id = self._free_request_id(auto_prefix, index, reserved, params.n)
        else:
            request_id = checked_request_id(request_id)
            taken = [i for i in sequence_ids(request_id, params.n) if self._id_taken(i, reserved)]
            if taken:
                raise ValueError(
                    f"Request id {taken[0]!r} is already in use"
                    f"{' (by a sequence of parallel sampling)' if taken[0] in self._sequence_ids else ''}"
                    "; pick another."
                )
        generator, seed = (
            None,
            params.seed if params.seed is not None else (self.config.seed * 1_000_003 + index) % 2**63,
        )
        if params.temperature > 0:
            generator = torch.Generator().manual_seed(seed)
        return Request(
            request_id,
            token_ids,
            params,
            arrival_step=self.step_count,
            priority=priority,
            eos_token_ids=self.loaded.eos_token_ids,
            generator=generator,
            arrival_time=time.perf_counter(),
            fork_generators=fork_generators(params, seed),
        )

    def _id_taken(self, request_id: str, reserved: frozenset[str] = frozenset()) -> bool:
        return (
            request_id in self.scheduler.requests
            or request_id in self.outputs
            or request_id in reserved
            or request_id in self._sequence_ids
        )

    def _free_request_id(self, prefix: str, index: int, reserved: frozenset[str], n: int = 1) -> str:
        """The first ``prefix + n`` (n from ``index`` up) that no request, queued or finished, has taken (nor its
        sequences' ids)."""
        while True:
            request_id = f"{prefix}{index}"
            if not any(self._id_taken(i, reserved) for i in sequence_ids(request_id, n)):
                return request_id
            index += 1

    def check_request(
        self, prompt: Prompt, params: SamplingParams | None = None, request_id: str | None = None, priority: int = 0
    ) -> None:
        """Raise the ValueError ``add_request`` would raise, changing nothing."""
        self._make_request(prompt, params, request_id, priority=priority)

    def add_request(
        self, prompt: Prompt, params: SamplingParams | None = None, request_id: str | None = None, priority: int = 0
    ) -> str:
        """Queue a prompt (text or token ids); returns its request id. ``priority`` is vLLM's: lower runs first
        (read by ``preemption_victim="priority"``)."""
        request = self._make_request(prompt, params, request_id, priority=priority)
        self._queue(request)
        return request.request_id

    def _queue(self, request: Request) -> None:
        self._num_added += 1
        self._sequence_ids.update(sequence_ids(request.request_id, request.sampling_params.n)[1:])
        self.scheduler.add_request(request)

    def abort_request(self, request_id: str) -> bool:
        """Abort a request and, with parallel sampling, every sequence it forked (vLLM aborts the whole group)."""
        request_id = str(request_id)
        ids = [request_id] + [r.request_id for r in self.scheduler.requests.values() if r.parent_id == request_id]
        aborted = [r for r in map(self.scheduler.abort, ids) if r is not None]
        for request in aborted:
            self._record_finished(request)
        return bool(aborted)

    def has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished_requests()

    # ---- one step -------------------------------------------------------------------------

    def step(self) -> StepReport:
        """Schedule -> copy swapped blocks -> run the model -> append tokens, finish, account."""
        return self._step(record_kernels=False).report

    def step_recording_kernels(self) -> RecordedStep:
        """``step()``, keeping what its forward pass launched: the first layer's Triton kernel launches (none
        on the torch backend). The lab's kernel view reads them."""
        return self._step(record_kernels=True)

    def _step(self, record_kernels: bool) -> RecordedStep:
        t0 = time.perf_counter()
        self.step_count += 1
        out = self.scheduler.schedule(self.step_count)
        preempted, swapped_in, cow, offload = self._copy_blocks(out)  # before the forward reuses freed blocks
        result = self.runner.run(out, self.scheduler.requests, record_kernels)
        report = self._postprocess(out, result, preempted, swapped_in, cow, offload, t0)
        return RecordedStep(report, result.launches)

    def _postprocess(
        self,
        out: SchedulerOutput,
        result: RunResult,
        preempted: list[PreemptionView],
        swapped_in: list[PreemptionView],
        cow: list[CopyOnWrite],
        offload: list[OffloadTransfer],
        t0: float,
    ) -> StepReport:
        """Offload stores, append tokens and finish, bill the forward, observe; the step's report."""
        requests = self.scheduler.requests
        stores, refused = self.kv.offload_stores(
            [(requests[c.request_id], c.start + c.num_new_tokens) for c in out.chunks if not c.orphaned]
        )
        offload += self._offload_copy("store", stores)  # after the forward that computed them, before any is freed
        done = self.scheduler.update_from_output(
            out, result.sampled, self.step_count, time.perf_counter(), result.forks
        )
        self.ledger.on_forward(out.chunks, result.forward_s, self.step_count, result.forward_cpu_s)
        finished = [self._record_finished(r) for r in out.ignored + out.aborted + done]
        recompute = self.ledger.make_recompute_stats()
        log_lines = self.observer.after_step(
            self._outcome(
                out, result, preempted, swapped_in, finished, recompute, offload, refused, time.perf_counter() - t0
            )
        )
        return StepReport(
            step=self.step_count,
            scheduled=[c.request_id for c in out.chunks],
            chunks=out.chunks,
            preempted=preempted,
            swapped_in=swapped_in,
            finished=finished,
            num_batched_tokens=out.num_scheduled_tokens,
            forward_time_s=result.forward_s,
            step_time_s=time.perf_counter() - t0,
            device=self.config.device,
            log_lines=log_lines,
            recomputed_tokens=recompute.tokens,
            offload=offload,
            copy_on_write=cow,
            forked={rid: [sequence_id(rid, k) for k in range(1, len(t) + 1)] for rid, t in result.forks.items()},
            head_wait=out.head_wait,
        )

    def _outcome(
        self,
        out: SchedulerOutput,
        result: RunResult,
        preempted: list[PreemptionView],
        swapped_in: list[PreemptionView],
        finished: list[RequestOutput],
        recompute: RecomputeStats,
        offload: list[OffloadTransfer],
        offload_refused: int,
        step_time_s: float,
    ) -> StepOutcome:
        sched, kv = self.scheduler, self.kv
        return StepOutcome(
            step=self.step_count,
            chunks=out.chunks,
            num_sampled=len(result.sampled),
            preempted=preempted,
            swapped_in=swapped_in,
            finished=finished,
            recompute=recompute,
            offload=offload,
            offload_refused=offload_refused,
            prefix=kv.make_prefix_cache_stats(),
            total_preemptions=sched.num_preemptions,
            output_events=sched.take_output_events(),
            step_time_s=step_time_s,
            num_running=sched.num_queued(sched.running),
            num_waiting=sched.num_queued(sched.waiting),
            num_swapped=sched.num_queued(sched.swapped),
            gpu_usage=kv.pool.usage(),
            cpu_usage=kv.cpu_pool.usage() if kv.cpu_pool.num_blocks else 0.0,
        )

    def _copy_blocks(
        self, out: SchedulerOutput
    ) -> tuple[list[PreemptionView], list[PreemptionView], list[CopyOnWrite], list[OffloadTransfer]]:
        """Run the step's device copies in the order the scheduler decided them (a block one frees may be reused by
        the next), then bill them. A sequence whose blocks a sibling's copy already moved copies nothing. Loads
        from the offloading tier go into freshly allocated blocks that no other copy touches: they run last, as
        one measured transfer."""
        timings: dict[tuple[CopyKind, str], CopyTiming] = {}
        cow, loads = [], []
        for copy in out.block_copies:
            pairs = list(copy.pairs)
            if copy.kind is CopyKind.COPY_ON_WRITE:
                self.cache.copy_on_write(pairs)
                cow += [CopyOnWrite(copy.request_id, src, dst) for src, dst in pairs]
            elif copy.kind is CopyKind.OFFLOAD_LOAD:
                loads += pairs
            else:
                run = self.cache.swap_out if copy.kind is CopyKind.SWAP_OUT else self.cache.swap_in
                timings[(copy.kind, copy.request_id)] = run(pairs) if pairs else CopyTiming(0.0, 0, 0)
        preempted = [self.ledger.on_preempt(e, timings.get((CopyKind.SWAP_OUT, e.request_id))) for e in out.preempted]
        swapped_in = [
            self.ledger.on_swap_in(c.request_id, timings[(c.kind, c.request_id)], self.step_count)
            for c in out.block_copies
            if c.kind is CopyKind.SWAP_IN
        ]
        return preempted, swapped_in, cow, self._offload_copy("load", loads)

    def _offload_copy(self, direction: str, mapping: list[tuple[int, int]]) -> list[OffloadTransfer]:
        """Copy blocks between the device pool and the offloading tier, measured; [] when there is nothing to copy."""
        if not mapping:
            return []
        timing = self.cache.swap_out(mapping) if direction == "store" else self.cache.swap_in(mapping)
        modelled = modelled_copy_seconds(
            timing.num_bytes, timing.num_copies, self.config.pcie_bandwidth_gbps, self.config.pcie_copy_overhead_us
        )
        return [
            OffloadTransfer(direction, len(mapping), timing.num_bytes, timing.seconds, modelled, self.config.device)
        ]

    def _record_finished(self, request: Request) -> RequestOutput:
        self.ledger.on_finished(request.request_id)
        ttft = None if request.first_token_time is None else request.first_token_time - request.arrival_time
        output = RequestOutput(
            request_id=request.request_id,
            prompt_token_ids=list(request.prompt_token_ids),
            output_token_ids=list(request.output_token_ids),
            text=self.loaded.decode(request.output_token_ids),
            finish_reason=request.status.finish_reason,
            status=request.status.value,
            num_preemptions=request.num_preemptions,
            message=request.finish_message,
            arrival_step=request.arrival_step,
            first_token_step=request.first_token_step,
            finish_step=self.step_count,
            ttft_s=ttft,
            latency_s=time.perf_counter() - request.arrival_time,
            parent_id=request.parent_id,
        )
        self.outputs[request.request_id] = output
        if request.finish_message:
            logger.warning("Request %s: %s", request.request_id, request.finish_message)
        return output

    # ---- convenience ----------------------------------------------------------------------

    def generate(
        self,
        prompts: Prompt | Sequence[Prompt],
        params: SamplingParams | Sequence[SamplingParams] | None = None,
        priority: Sequence[int] | None = None,
    ) -> list[RequestOutput]:
        """Run prompts to completion; outputs in prompt order. All prompts are checked before any is queued.
        ``priority`` gives one priority per prompt, as vLLM's ``LLM.generate(priority=...)``."""
        sequences = (list, tuple, range)
        if isinstance(prompts, str) or (
            isinstance(prompts, sequences)
            and prompts
            and not isinstance(prompts[0], sequences + (str, bytes, bytearray))
        ):
            prompts = [prompts]  # one prompt: text, or token ids (each checked below)
        if not isinstance(prompts, sequences):
            raise ValueError(
                f"prompts must be text, a list of token ids, or a list of those; got "
                f"{show_value(prompts)} ({type(prompts).__name__})."
            )
        if params is None or isinstance(params, SamplingParams):
            params = [params or SamplingParams()] * len(prompts)
        if not isinstance(params, (list, tuple)) or not all(isinstance(p, SamplingParams) for p in params):
            raise ValueError(
                f"params must be a SamplingParams, or a list with one per prompt; got "
                f"{show_value(params)} ({type(params).__name__})."
            )
        if len(params) != len(prompts):
            raise ValueError(
                f"Got {len(params)} SamplingParams for {len(prompts)} prompts; give one, or one per prompt."
            )
        if priority is None:
            priority = [0] * len(prompts)
        if not isinstance(priority, (list, tuple)) or len(priority) != len(prompts):
            raise ValueError(
                f"priority must be a list with one integer per prompt ({len(prompts)}), got {show_value(priority)}."
            )
        requests: list[Request] = []
        for i, (prompt, p) in enumerate(zip(prompts, params)):
            reserved = frozenset(i for r in requests for i in sequence_ids(r.request_id, r.sampling_params.n))
            requests.append(
                self._make_request(
                    prompt, p, None, offset=i, auto_prefix="gen-", reserved=reserved, priority=priority[i]
                )
            )
        for request in requests:
            self._queue(request)
        groups = [(r.request_id, r.sampling_params.n) for r in requests]
        while any(group_output(self.outputs, rid, n) is None for rid, n in groups):
            assert self.has_unfinished_requests(), "a request's sequences neither finished nor remain"
            self.step()
        outputs = [group_output(self.outputs, rid, n) for rid, n in groups]
        return [o for o in outputs if o is not None]  # every one: the loop ran until none was None

    def preemptions(self) -> list[PreemptionView]:
        """Every preemption so far, in order, each with its cost as known now (frozen views)."""
        return list(self.ledger.records)

    def totals(self) -> EngineTotals:
        """The running totals since the engine started (what the Prometheus counters were set from)."""
        return self.observer.totals

    def snapshot(self, report: StepReport | None = None) -> Snapshot:
        """The engine's whole state now (a copy); ``report`` adds this step's events."""
        return build_snapshot(
            step=self.step_count,
            device=self.config.device,
            vllm_profile=self.config.vllm_profile,
            bytes_per_block=self.sizing.bytes_per_block,
            kv=self.kv,
            scheduler=self.scheduler,
            outputs=self.outputs.values(),
            ledger=self.ledger,
            metrics=self.metrics.as_dict(),
            decode=self.loaded.decode,
            report=report,
        )

    def check_invariants(self) -> None:
        self.scheduler.check_invariants()
