"""Drive vLLM V1's own scheduler (0.10.2 or 0.33.0) through a list of cases; write one trace per case.

Run by the release's venv python (oracle/build_venvs.py), never by pykv's: it imports no pykv code.

    <venv>/bin/python oracle/drive_v1.py CASES.json TRACES.json --model-dir DIR

How the scheduler is built follows vLLM's own tests (``tests/v1/core/utils.py`` ``create_scheduler`` of the
release): a ``VllmConfig`` from ``SchedulerConfig``, ``ModelConfig`` (reading only ``config.json`` of
``--model-dir``), ``CacheConfig`` and ``DeviceConfig(device="cuda")`` (a CUDA wheel on a machine without a GPU
cannot infer its device, and the CPU platform would rewrite the scheduler settings), one full-attention
``KVCacheGroupSpec`` of ``num_gpu_blocks`` blocks, and ``Scheduler(...)``. After each ``schedule()`` the driver
plays the model runner: a ``ModelRunnerOutput`` gives each request whose tokens are all computed its next token
(the one pykv produced at that position), nothing for a partial prefill; ``update_from_output`` finishes a
request at max_tokens.
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("PYTHONHASHSEED", "0")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import vllm  # noqa: E402
from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec  # noqa: E402
from vllm.v1.outputs import ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

from oracle.trace import Case, StepTrace, Trace, dump_list, load_cases  # noqa: E402

try:  # 0.33.0
    from vllm.utils.hashing import get_hash_fn_by_name  # noqa: E402
except ImportError:  # 0.10.2
    from vllm.utils import get_hash_fn_by_name  # noqa: E402

RELEASE = vllm.__version__
HASH_FN = get_hash_fn_by_name("sha256")  # the engine's default prefix_caching_hash_algo
EOS_TOKEN_ID = 2**30  # never produced: every case runs with ignore_eos on both sides
_HASH_READY = False


def _accepts(func, name: str) -> bool:
    return name in inspect.signature(func).parameters


def build_scheduler(case: Case, model_dir: str) -> Scheduler:
    c = case.config
    sched_kwargs = dict(
        max_num_seqs=c.max_num_seqs,
        max_num_batched_tokens=c.max_num_batched_tokens,
        max_model_len=c.max_model_len,
        enable_chunked_prefill=c.enable_chunked_prefill,
        policy="priority" if c.priority_scheduling else "fcfs",
    )
    if c.watermark is not None:
        sched_kwargs["watermark"] = c.watermark
    if _accepts(SchedulerConfig, "is_encoder_decoder"):
        sched_kwargs["is_encoder_decoder"] = False
    scheduler_config = SchedulerConfig(**sched_kwargs)
    model_kwargs = dict(
        model=model_dir, skip_tokenizer_init=True, max_model_len=c.max_model_len, dtype="float16", seed=0
    )
    if _accepts(ModelConfig, "use_async_output_proc"):  # 0.10.2
        model_kwargs["use_async_output_proc"] = False
    model_config = ModelConfig(**model_kwargs)
    cache_config = CacheConfig(
        block_size=c.block_size,
        gpu_memory_utilization=0.9,
        cache_dtype="auto",
        enable_prefix_caching=c.enable_prefix_caching,
        **({"swap_space": 0} if _accepts(CacheConfig, "swap_space") else {}),
    )
    vllm_config = VllmConfig(
        scheduler_config=scheduler_config,
        model_config=model_config,
        cache_config=cache_config,
        device_config=DeviceConfig(device="cuda"),
    )
    spec_kwargs = dict(block_size=c.block_size, num_kv_heads=1, head_size=1, dtype=torch.float32)
    if "use_mla" in getattr(FullAttentionSpec, "__dataclass_fields__", {}):  # 0.10.2
        spec_kwargs["use_mla"] = False
    spec = FullAttentionSpec(**spec_kwargs)
    kv_cache_config = KVCacheConfig(
        num_blocks=c.num_gpu_blocks, kv_cache_tensors=[], kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)]
    )
    cache_config.num_gpu_blocks = c.num_gpu_blocks
    kwargs = dict(
        vllm_config=vllm_config,
        kv_cache_config=kv_cache_config,
        log_stats=True,
        structured_output_manager=StructuredOutputManager(vllm_config),
    )
    if _accepts(Scheduler.__init__, "block_size"):  # 0.33
        kwargs["block_size"] = c.block_size
    return Scheduler(**kwargs)


def make_request(r, block_size: int, arrival: float) -> Request:
    global _HASH_READY
    if not _HASH_READY:
        init_none_hash(HASH_FN)
        _HASH_READY = True
    params = SamplingParams(max_tokens=r.max_tokens, ignore_eos=True, temperature=0.0)
    kwargs = dict(
        request_id=r.request_id,
        prompt_token_ids=list(r.prompt_token_ids),
        sampling_params=params,
        pooling_params=None,
        arrival_time=arrival,
        priority=r.priority,
        block_hasher=get_request_block_hasher(block_size, HASH_FN),
    )
    if _accepts(Request.__init__, "eos_token_id"):
        kwargs["eos_token_id"] = EOS_TOKEN_ID
    if _accepts(Request.__init__, "mm_features"):
        kwargs["mm_features"] = None
    return Request(**kwargs)


def _runner_output(req_ids: list[str], sampled: list[list[int]]) -> ModelRunnerOutput:
    kwargs = dict(req_ids=req_ids, req_id_to_index={r: i for i, r in enumerate(req_ids)}, sampled_token_ids=sampled)
    fields = getattr(ModelRunnerOutput, "__dataclass_fields__", {})
    for name, value in (
        ("logprobs", None),
        ("prompt_logprobs_dict", {}),
        ("pooler_output", []),
        ("spec_token_ids", None),
    ):
        if name in fields and fields[name].default is fields[name].default_factory is None:
            kwargs[name] = value
        elif name in fields and name not in kwargs:
            kwargs[name] = value
    return ModelRunnerOutput(**kwargs)


def run_case(case: Case, model_dir: str) -> Trace:
    if case.config.num_offload_blocks is not None:
        raise NotImplementedError("the offloading connector is not driven (see oracle/README.md)")
    sched = build_scheduler(case, model_dir)
    trace = Trace(side=f"vllm {RELEASE}", case=case.name)
    tokens = {r.request_id: r.output_token_ids[0] for r in case.requests}
    if any(r.n != 1 for r in case.requests):
        raise NotImplementedError("n > 1 under V1 fans out into child requests at add_request (not driven)")
    pending = sorted(case.requests, key=lambda r: r.arrival_step)
    freed_in_schedule: list[str] = []
    real_free = sched.kv_cache_manager.free
    in_schedule = [False]

    def free(request):  # inside schedule() a free is a preemption (finished requests are freed in update)
        if in_schedule[0]:
            freed_in_schedule.append(request.request_id)
        return real_free(request)

    sched.kv_cache_manager.free = free
    requests: dict[str, Request] = {}
    steps_done, arrival = 0, 0
    pool = sched.kv_cache_manager.block_pool
    while pending or sched.has_unfinished_requests():
        if steps_done >= case.max_steps:
            trace.error = f"stopped at max_steps={case.max_steps}"
            break
        while pending and pending[0].arrival_step <= steps_done:
            r = pending.pop(0)
            arrival += 1
            requests[r.request_id] = make_request(r, case.config.block_size, float(arrival))
            sched.add_request(requests[r.request_id])
        freed_in_schedule.clear()
        in_schedule[0] = True
        out = sched.schedule()
        in_schedule[0] = False
        steps_done += 1
        scheduled, req_ids, sampled = [], [], []
        for rid, n in out.num_scheduled_tokens.items():
            req = requests[rid]
            scheduled.append([rid, req.num_computed_tokens - n, n])
            req_ids.append(rid)
            if req.num_computed_tokens >= req.num_tokens:
                sampled.append([tokens[rid][len(req.output_token_ids)]])
            else:
                sampled.append([])
        preempted = [[rid, "recompute"] for rid in freed_in_schedule]
        finished = []
        results = sched.update_from_output(out, _runner_output(req_ids, sampled))
        for eco in results.values() if isinstance(results, dict) else [results]:
            for o in eco.outputs:
                if o.finish_reason is not None:
                    finished.append(o.request_id)
        waiting = [r.request_id for r in getattr(sched, "kv_holding_waiting", [])] + [
            r.request_id for r in sched.waiting
        ]
        trace.steps.append(
            StepTrace(
                step=steps_done,
                scheduled=scheduled,
                preempted=preempted,
                swapped_in=[],
                waiting=waiting,
                running=[r.request_id for r in sched.running],
                swapped=[],
                free_blocks=pool.get_num_free_blocks(),
                finished=finished,
            )
        )
    modes = [p for s in trace.steps for p in s.preempted]
    trace.num_preemptions = len(modes)
    trace.counters = {
        "steps": len(trace.steps),
        "preemptions": len(modes),
        "recompute": len(modes),
        "swap": 0,
        "scheduled_tokens": sum(c[2] for s in trace.steps for c in s.scheduled),
    }
    return trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases")
    ap.add_argument("traces")
    ap.add_argument("--model-dir", required=True, help="a folder holding the shipped model's config.json")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="pykv-oracle-model-")
    shutil.copy(Path(args.model_dir) / "config.json", Path(work) / "config.json")  # config.json only
    traces = []
    t0 = time.perf_counter()
    for case in load_cases(args.cases):
        try:
            traces.append(run_case(case, work))
        except Exception as e:  # one case's failure is that case's trace, not the batch's
            trace = Trace(side=f"vllm {RELEASE}", case=case.name)
            trace.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
            traces.append(trace)
    dump_list(traces, args.traces)
    print(f"vllm {RELEASE}: {len(traces)} cases in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
