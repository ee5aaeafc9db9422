"""LLMEngine: add requests, step (schedule -> run -> postprocess), generate, snapshot."""

from __future__ import annotations

import time
from typing import Optional, Sequence, Union

import torch

from pykv.attention import resolve_backend
from pykv.block_pool import BlockPool
from pykv.cache_engine import CacheEngine
from pykv.config import EngineConfig
from pykv.kv_cache_manager import KVCacheManager
from pykv.loader import LoadedModel, load_model
from pykv.model_runner import ModelRunner
from pykv.request import Request, RequestOutput, SamplingParams
from pykv.scheduler import Scheduler
from pykv.snapshot import StepReport, Snapshot
from pykv.snapshot_builder import build_snapshot

Prompt = Union[str, Sequence[int]]


class LLMEngine:
    """A vLLM-style engine over one paged KV pool.

    ``loaded`` lets several engines share one read-only model (the app does, across sessions).
    """

    def __init__(self, config: EngineConfig, loaded: Optional[LoadedModel] = None) -> None:
        if config.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError("device='cuda' was asked for but this machine has no CUDA GPU; use device='cpu'.")
        self.config = config
        self.loaded = loaded or load_model(config.model, config.device, config.dtype)
        model_cfg = self.loaded.config
        self.max_model_len = min(config.max_model_len or model_cfg.max_position_embeddings, model_cfg.max_position_embeddings)
        self.kv = KVCacheManager(BlockPool(config.num_gpu_blocks), config.block_size, config.enable_prefix_caching)
        self.scheduler = Scheduler(config, self.kv, self.max_model_len)
        self.cache = CacheEngine(model_cfg, config.num_gpu_blocks, config.block_size, config.dtype, config.device)
        self.backend = resolve_backend(config.attention_backend, config.device)
        self.runner = ModelRunner(self.loaded, self.cache, self.kv, self.backend, config.device)
        self.step_count = 0  # steps taken so far; changed by step() only
        self.outputs: dict[str, RequestOutput] = {}  # finished requests, in finishing order
        self._num_added = 0

    # ---- requests -------------------------------------------------------------------------

    def _make_request(self, prompt: Prompt, params: SamplingParams, request_id: Optional[str], offset: int = 0) -> Request:
        """Tokenize and check one prompt; ``offset`` places it among prompts queued together."""
        token_ids = self.loaded.encode(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
        if not token_ids:
            raise ValueError("The prompt is empty (no tokens); give at least one character or token id.")
        vocab = self.loaded.config.vocab_size
        if any(not 0 <= t < vocab for t in token_ids):
            raise ValueError(f"Prompt token ids must lie in [0, {vocab}); got {min(token_ids)}..{max(token_ids)}.")
        if len(token_ids) >= self.max_model_len:
            raise ValueError(
                f"The prompt has {len(token_ids)} tokens but max_model_len is {self.max_model_len}; shorten it."
            )
        need = min(len(token_ids) + params.max_tokens - 1, self.max_model_len)
        if not self.config.enable_chunked_prefill and need > self.config.max_num_batched_tokens:
            raise ValueError(
                f"With chunked prefill off, a request must fit in one step's budget even when re-prefilled after a "
                f"preemption: prompt ({len(token_ids)}) + max_tokens ({params.max_tokens}) needs {need} tokens but "
                f"max_num_batched_tokens is {self.config.max_num_batched_tokens}. Raise the budget or enable chunked prefill."
            )
        index = self._num_added + offset
        request_id = str(index) if request_id is None else str(request_id)
        if request_id in self.scheduler.requests or request_id in self.outputs:
            raise ValueError(f"Request id {request_id!r} is already in use; pick another.")
        generator = None
        if params.temperature > 0:
            seed = params.seed if params.seed is not None else self.config.seed * 1_000_003 + index
            generator = torch.Generator().manual_seed(seed)
        return Request(
            request_id, token_ids, params, arrival_step=self.step_count,
            eos_token_ids=self.loaded.eos_token_ids, generator=generator,
        )

    def add_request(self, prompt: Prompt, params: Optional[SamplingParams] = None, request_id: Optional[str] = None) -> str:
        """Queue a prompt (text or token ids); returns its request id."""
        request = self._make_request(prompt, params or SamplingParams(), request_id)
        self._num_added += 1
        self.scheduler.add_request(request)
        return request.request_id

    def abort_request(self, request_id: str) -> bool:
        request = self.scheduler.abort(str(request_id))
        if request is not None:
            self.outputs[request.request_id] = self._output(request)
        return request is not None

    def has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished_requests()

    # ---- one step -------------------------------------------------------------------------

    def step(self) -> StepReport:
        """Schedule -> run the model -> append tokens, finish requests."""
        t0 = time.perf_counter()
        self.step_count += 1
        out = self.scheduler.schedule(self.step_count)
        result = self.runner.run(out, self.scheduler.requests)
        done = out.ignored + self.scheduler.update_from_output(out, result.sampled, self.step_count)
        finished = [self._output(r) for r in done]
        self.outputs.update((o.request_id, o) for o in finished)
        return StepReport(
            step=self.step_count,
            scheduled=[c.request_id for c in out.chunks],
            chunks=out.chunks,
            preempted=out.preempted,
            finished=finished,
            num_batched_tokens=out.num_scheduled_tokens,
            forward_time_s=result.forward_s,
            step_time_s=time.perf_counter() - t0,
            device=self.config.device,
        )

    def _output(self, request: Request) -> RequestOutput:
        return RequestOutput(
            request_id=request.request_id,
            prompt_token_ids=list(request.prompt_token_ids),
            output_token_ids=list(request.output_token_ids),
            text=self.loaded.decode(request.output_token_ids),
            finish_reason=request.status.finish_reason,
            num_preemptions=request.num_preemptions,
            message=request.finish_message,
        )

    # ---- convenience ----------------------------------------------------------------------

    def generate(
        self, prompts: Union[Prompt, Sequence[Prompt]], params: Union[SamplingParams, Sequence[SamplingParams], None] = None
    ) -> list[RequestOutput]:
        """Run prompts to completion; outputs in prompt order. All prompts are checked before any is queued."""
        if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        if params is None or isinstance(params, SamplingParams):
            params = [params or SamplingParams()] * len(prompts)
        if len(params) != len(prompts):
            raise ValueError(f"Got {len(params)} SamplingParams for {len(prompts)} prompts; give one, or one per prompt.")
        requests = [
            self._make_request(prompt, p, f"gen-{self._num_added + i}", offset=i)
            for i, (prompt, p) in enumerate(zip(prompts, params))
        ]
        for request in requests:
            self._num_added += 1
            self.scheduler.add_request(request)
        ids = [r.request_id for r in requests]
        while any(i not in self.outputs for i in ids):
            self.step()
        return [self.outputs[i] for i in ids]

    def snapshot(self) -> Snapshot:
        return build_snapshot(self)

    def check_invariants(self) -> None:
        self.scheduler.check_invariants()
