"""LLMEngine: add requests, step (schedule -> copy -> run -> postprocess), generate, snapshot."""

from __future__ import annotations

import time
from typing import Optional, Sequence, Union

import torch

from pykv.attention import resolve_backend
from pykv.block_pool import BlockPool
from pykv.cache_engine import CacheEngine
from pykv.config import MAX_POOL_BLOCKS, EngineConfig, show_value
from pykv.costs import CostLedger, PreemptionCost
from pykv.kv_budget import check_pool_budget, kv_pool_budget
from pykv.kv_cache_manager import KVCacheManager
from pykv.loader import LoadedModel, load_model
from pykv.max_model_len import fit_max_model_len, fitted_because
from pykv.metrics import EngineMetrics, logger
from pykv.model_runner import ModelRunner, RunResult
from pykv.observer import StepObserver, StepOutcome
from pykv.prompt_checks import Prompt, checked_request_id, token_ids_of
from pykv.request import Request, RequestOutput, SamplingParams
from pykv.scheduler import SchedulerOutput
from pykv.scheduler_v0 import V0Scheduler
from pykv.scheduler_v1 import V1Scheduler
from pykv.snapshot import Snapshot
from pykv.snapshot_builder import build_snapshot
from pykv.step_report import StepReport


class LLMEngine:
    """A vLLM-style engine over one paged device KV pool and one CPU swap pool.

    ``loaded`` lets several engines share one read-only model (the app does, across sessions).
    The engine keeps no history: ``step()`` returns its StepReport, and whoever wants to step back
    (the lab) keeps ``snapshot(report)`` of each step.
    """

    def __init__(self, config: EngineConfig, loaded: Optional[LoadedModel] = None) -> None:
        if config.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError("device='cuda' was asked for but this machine has no CUDA GPU; use device='cpu'.")
        self.config = config
        self.loaded = loaded or load_model(config.model, config.device, config.dtype)
        model_cfg = self.loaded.config
        self.bytes_per_block = CacheEngine.bytes_per_block(model_cfg, config.block_size, config.dtype)
        if config.gpu_memory_utilization is not None:
            config = config.replace(num_gpu_blocks=self._blocks_from_gpu_memory(config))
            self.config = config
        self.max_model_len, self.startup_lines = fit_max_model_len(config, model_cfg.max_position_embeddings,
                                                                   self.bytes_per_block)
        self._max_model_len_note = fitted_because(config, self.max_model_len, model_cfg.max_position_embeddings)
        for line in self.startup_lines:
            logger.info(line)
        num_cpu_blocks = config.num_cpu_blocks
        if num_cpu_blocks is None:
            num_cpu_blocks = int(config.swap_space * 2**30) // self.bytes_per_block
        check_pool_budget(config, self.bytes_per_block, num_cpu_blocks)  # before any block or tensor is allocated
        self.kv = KVCacheManager(BlockPool(config.num_gpu_blocks), config.block_size, config.enable_prefix_caching,
                                 cpu_pool=BlockPool(num_cpu_blocks))
        scheduler_class = V0Scheduler if config.profile.is_v0 else V1Scheduler
        self.scheduler = scheduler_class(config, self.kv, self.max_model_len)
        self.cache = CacheEngine(model_cfg, config.num_gpu_blocks, num_cpu_blocks, config.block_size, config.dtype,
                                 config.device, config.swap_copy)
        self.backend = resolve_backend(config.attention_backend, config.device)
        self.runner = ModelRunner(self.loaded, self.cache, self.kv, self.backend, config.device)
        self.ledger = CostLedger(self.bytes_per_block, config.device, config.pcie_bandwidth_gbps,
                                 config.pcie_copy_overhead_us)
        self.metrics = EngineMetrics(config.profile)
        self.observer = StepObserver(self.metrics, config)
        self.step_count = 0  # steps taken so far; changed by step() only
        self.outputs: dict[str, RequestOutput] = {}  # finished requests, in finishing order
        self._num_added = 0

    def _blocks_from_gpu_memory(self, config: EngineConfig) -> int:
        """vLLM's sizing: the share of GPU memory left for KV after the weights, in whole blocks."""
        free, total = torch.cuda.mem_get_info(config.device)
        budget = config.gpu_memory_utilization * total - (total - free)
        blocks = min(int(budget // self.bytes_per_block), MAX_POOL_BLOCKS,
                     kv_pool_budget(config.device) // self.bytes_per_block)
        if blocks < 1:
            raise ValueError(f"gpu_memory_utilization={config.gpu_memory_utilization} leaves no room for one KV block; "
                             "raise it.")
        return blocks

    # ---- requests -------------------------------------------------------------------------

    def _make_request(self, prompt: Prompt, params: Optional[SamplingParams], request_id: Optional[str],
                      offset: int = 0, auto_prefix: str = "", reserved: frozenset[str] = frozenset()) -> Request:
        """Check and tokenize one prompt; ``offset`` places it among prompts queued together, ``reserved`` holds
        their ids (an automatic id skips every id in use, the caller's own ones included)."""
        params = SamplingParams() if params is None else params
        if not isinstance(params, SamplingParams):
            raise ValueError(f"params must be a SamplingParams (or None for the defaults), got {show_value(params)} "
                             f"({type(params).__name__}).")
        token_ids = token_ids_of(prompt, self.loaded.encode, self.max_model_len, self._max_model_len_note)
        if not token_ids:
            raise ValueError("The prompt is empty (no tokens); give at least one character or token id.")
        vocab = self.loaded.config.vocab_size
        if any(not 0 <= t < vocab for t in token_ids):
            raise ValueError(f"Prompt token ids must lie in [0, {vocab}); got {min(token_ids)}..{max(token_ids)}.")
        # 0.33 also refuses a prompt of exactly max_model_len: no room for one output token (_validate_prompt_len).
        full = len(token_ids) == self.max_model_len and self.config.vllm_profile == "v0.33"
        if len(token_ids) > self.max_model_len or full:
            raise ValueError(f"The prompt has {len(token_ids)} tokens but max_model_len is {self.max_model_len}"
                             f"{self._max_model_len_note}"
                             f"{' and vLLM 0.33 keeps room for one output token' if full else ''}; shorten it.")
        index = self._num_added + offset
        if request_id is None:
            request_id = self._free_request_id(auto_prefix, index, reserved)
        else:
            request_id = checked_request_id(request_id)
            if request_id in self.scheduler.requests or request_id in self.outputs or request_id in reserved:
                raise ValueError(f"Request id {request_id!r} is already in use; pick another.")
        generator = None
        if params.temperature > 0:
            seed = params.seed if params.seed is not None else (self.config.seed * 1_000_003 + index) % 2**63
            generator = torch.Generator().manual_seed(seed)
        return Request(request_id, token_ids, params, arrival_step=self.step_count,
                       eos_token_ids=self.loaded.eos_token_ids, generator=generator, arrival_time=time.perf_counter())

    def _free_request_id(self, prefix: str, index: int, reserved: frozenset[str]) -> str:
        """The first ``prefix + n`` (n from ``index`` up) that no request, queued or finished, has taken."""
        while True:
            request_id = f"{prefix}{index}"
            if request_id not in self.scheduler.requests and request_id not in self.outputs \
                    and request_id not in reserved:
                return request_id
            index += 1

    def check_request(self, prompt: Prompt, params: Optional[SamplingParams] = None,
                      request_id: Optional[str] = None) -> None:
        """Raise the ValueError ``add_request`` would raise, changing nothing."""
        self._make_request(prompt, params, request_id)

    def add_request(self, prompt: Prompt, params: Optional[SamplingParams] = None,
                    request_id: Optional[str] = None) -> str:
        """Queue a prompt (text or token ids); returns its request id."""
        request = self._make_request(prompt, params, request_id)
        self._num_added += 1
        self.scheduler.add_request(request)
        return request.request_id

    def abort_request(self, request_id: str) -> bool:
        request = self.scheduler.abort(str(request_id))
        if request is not None:
            self._record_finished(request)
        return request is not None

    def has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished_requests()

    # ---- one step -------------------------------------------------------------------------

    def step(self) -> StepReport:
        """Schedule -> copy swapped blocks -> run the model -> append tokens, finish, account."""
        t0 = time.perf_counter()
        self.step_count += 1
        out = self.scheduler.schedule(self.step_count)
        preempted, swapped_in = self._copy_blocks(out)  # before the forward reuses freed device blocks
        result = self.runner.run(out, self.scheduler.requests)
        done = self.scheduler.update_from_output(out, result.sampled, self.step_count, time.perf_counter())
        self.ledger.on_forward(out.chunks, result.forward_s, self.step_count)
        finished = [self._record_finished(r) for r in out.ignored + out.aborted + done]
        log_lines = self.observer.after_step(
            self._outcome(out, result, preempted, swapped_in, finished, time.perf_counter() - t0))
        return StepReport(
            step=self.step_count, scheduled=[c.request_id for c in out.chunks], chunks=out.chunks,
            preempted=[c.view() for c in preempted], swapped_in=[c.view() for c in swapped_in],
            finished=finished, num_batched_tokens=out.num_scheduled_tokens, forward_time_s=result.forward_s,
            step_time_s=time.perf_counter() - t0, device=self.config.device, log_lines=log_lines,
        )

    def _outcome(self, out: SchedulerOutput, result: RunResult, preempted: list[PreemptionCost],
                 swapped_in: list[PreemptionCost], finished: list[RequestOutput], step_time_s: float) -> StepOutcome:
        sched, kv = self.scheduler, self.kv
        return StepOutcome(
            step=self.step_count, chunks=out.chunks, num_sampled=len(result.sampled), preempted=preempted,
            swapped_in=swapped_in, finished=finished, recompute=self.ledger.make_recompute_stats(),
            prefix=kv.make_prefix_cache_stats(), total_preemptions=sched.num_preemptions,
            output_events=sched.take_output_events(), step_time_s=step_time_s,
            num_running=len(sched.running), num_waiting=len(sched.waiting), num_swapped=len(sched.swapped),
            gpu_usage=kv.pool.usage(), cpu_usage=kv.cpu_pool.usage() if kv.cpu_pool.num_blocks else 0.0,
        )

    def _copy_blocks(self, out: SchedulerOutput) -> tuple[list[PreemptionCost], list[PreemptionCost]]:
        preempted = []
        for event in out.preempted:
            mapping = out.swap_out.get(event.request_id)
            timing = self.cache.swap_out(mapping) if mapping else None
            preempted.append(self.ledger.on_preempt(event, timing))
        swapped_in = []
        for request_id, mapping in out.swap_in.items():
            swapped_in.append(self.ledger.on_swap_in(request_id, self.cache.swap_in(mapping), self.step_count))
        return preempted, swapped_in

    def _record_finished(self, request: Request) -> RequestOutput:
        self.ledger.on_finished(request.request_id)
        ttft = None if request.first_token_time is None else request.first_token_time - request.arrival_time
        output = RequestOutput(
            request_id=request.request_id, prompt_token_ids=list(request.prompt_token_ids),
            output_token_ids=list(request.output_token_ids), text=self.loaded.decode(request.output_token_ids),
            finish_reason=request.status.finish_reason, status=request.status.value,
            num_preemptions=request.num_preemptions,
            message=request.finish_message, arrival_step=request.arrival_step,
            first_token_step=request.first_token_step, finish_step=self.step_count, ttft_s=ttft,
            latency_s=time.perf_counter() - request.arrival_time,
        )
        self.outputs[request.request_id] = output
        if request.finish_message:
            logger.warning("Request %s: %s", request.request_id, request.finish_message)
        return output

    # ---- convenience ----------------------------------------------------------------------

    def generate(
        self, prompts: Union[Prompt, Sequence[Prompt]],
        params: Union[SamplingParams, Sequence[SamplingParams], None] = None
    ) -> list[RequestOutput]:
        """Run prompts to completion; outputs in prompt order. All prompts are checked before any is queued."""
        sequences = (list, tuple, range)
        if isinstance(prompts, str) or (isinstance(prompts, sequences) and prompts
                                        and not isinstance(prompts[0], sequences + (str, bytes, bytearray))):
            prompts = [prompts]  # one prompt: text, or token ids (each checked below)
        if not isinstance(prompts, sequences):
            raise ValueError(f"prompts must be text, a list of token ids, or a list of those; got "
                             f"{show_value(prompts)} ({type(prompts).__name__}).")
        if params is None or isinstance(params, SamplingParams):
            params = [params or SamplingParams()] * len(prompts)
        if not isinstance(params, (list, tuple)) or not all(isinstance(p, SamplingParams) for p in params):
            raise ValueError(f"params must be a SamplingParams, or a list with one per prompt; got "
                             f"{show_value(params)} ({type(params).__name__}).")
        if len(params) != len(prompts):
            raise ValueError(f"Got {len(params)} SamplingParams for {len(prompts)} prompts; "
                             "give one, or one per prompt.")
        requests: list[Request] = []
        for i, (prompt, p) in enumerate(zip(prompts, params)):
            reserved = frozenset(r.request_id for r in requests)
            requests.append(self._make_request(prompt, p, None, offset=i, auto_prefix="gen-", reserved=reserved))
        for request in requests:
            self._num_added += 1
            self.scheduler.add_request(request)
        ids = [r.request_id for r in requests]
        while any(i not in self.outputs for i in ids):
            self.step()
        return [self.outputs[i] for i in ids]

    def snapshot(self, report: Optional[StepReport] = None) -> Snapshot:
        """The engine's whole state now (a copy); ``report`` adds this step's events."""
        return build_snapshot(
            step=self.step_count, device=self.config.device, vllm_profile=self.config.vllm_profile,
            bytes_per_block=self.bytes_per_block, kv=self.kv,
            scheduler=self.scheduler, outputs=self.outputs.values(), ledger=self.ledger,
            metrics=self.metrics.as_dict(), decode=self.loaded.decode, report=report)

    def check_invariants(self) -> None:
        self.scheduler.check_invariants()
