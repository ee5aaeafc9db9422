"""A Lab's whole run as another engine needs it: the config the engine runs, every request (the workload's and
those added by hand) as token ids under the id pykv gives it, in the order pykv adds them, and the max_model_len
pykv fitted. What ``pykv.real_vllm.case`` turns into the real engine's case.

The order is the engine's, step by step (``Lab._apply_manual`` and ``WorkloadRunner.admit_arrivals``)::

    step k ran -> the requests added by hand at step k -> (next step) the workload's arrivals at k -> step k+1

so a request added by hand at step k goes before a workload request arriving at k (both wait for step k + 1), and
the workload's arrivals keep their file order. A workload request without an id gets the engine's automatic one:
the number of requests added before it, or the next number no request has taken (``LLMEngine._free_request_id``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pykv.border.config import EngineConfig
from pykv.border.workload import WorkloadRequest
from pykv.engine.kv.sizing import engine_sizing
from pykv.engine.max_model_len import fit_max_model_len
from pykv.engine.model.loader import LoadedModel, load_model
from pykv.engine.parallel_sampling import sequence_ids
from pykv.lab.lab import Lab


@dataclass(frozen=True)
class LabRun:
    config: EngineConfig  # as the engine runs it: num_gpu_blocks resolved where gpu_memory_utilization sizes it
    requests: tuple[WorkloadRequest, ...]  # token ids, the engine's ids, in the order the engine adds them
    max_model_len: int  # the one pykv runs with (fitted to the pool when the config leaves it unset)


def lab_run(lab: Lab) -> LabRun:
    """The run ``lab`` holds (its config, workload and hand-added requests), ready for another engine."""
    loaded: LoadedModel = lab.loaded or load_model(lab.config.model, lab.config.device, lab.config.dtype)
    config = lab.config
    sizing = engine_sizing(config, loaded.config)
    if config.gpu_memory_utilization is not None:
        config = config.replace(num_gpu_blocks=sizing.num_gpu_blocks)
    max_model_len, _ = fit_max_model_len(config, loaded.config.max_position_embeddings, sizing.bytes_per_block)
    return LabRun(config, _requests_in_order(lab, loaded), max_model_len)


def _requests_in_order(lab: Lab, loaded: LoadedModel) -> tuple[WorkloadRequest, ...]:
    # (step, 0: by hand | 1: the workload's, position): the order the engine adds them in
    queued: list[tuple[int, int, int, WorkloadRequest]] = []
    for i, m in enumerate(lab.manual):
        queued.append(
            (
                m.step,
                0,
                i,
                WorkloadRequest(
                    prompt_token_ids=loaded.encode(m.prompt),
                    max_tokens=m.max_tokens,
                    arrival_step=m.step,
                    request_id=m.request_id,
                    ignore_eos=m.ignore_eos,
                    priority=m.priority,
                    n=m.n,
                ),
            )
        )
    for i, r in enumerate(lab.workload.requests if lab.workload else []):
        ids = r.prompt_token_ids if r.prompt_token_ids is not None else loaded.encode(r.prompt or "")
        queued.append((r.arrival_step, 1, i, r.model_copy(update={"prompt": None, "prompt_token_ids": list(ids)})))
    queued.sort(key=lambda q: q[:3])
    taken: set[str] = set()
    out = []
    for added, (*_, r) in enumerate(queued):
        rid = r.request_id if r.request_id is not None else _automatic_id(added, taken, r.n)
        taken.update(sequence_ids(rid, r.n))
        out.append(r if r.request_id == rid else r.model_copy(update={"request_id": rid}))
    return tuple(out)


def _automatic_id(index: int, taken: set[str], n: int) -> str:
    """``LLMEngine._free_request_id`` with no prefix: the first number from ``index`` up whose ids are all free."""
    while any(i in taken for i in sequence_ids(str(index), n)):
        index += 1
    return str(index)
