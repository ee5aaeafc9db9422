"""Drive vLLM V0's own scheduler (0.6.3.post1) through a list of cases; write one trace per case.

Run by the release's venv python (oracle/build_venvs.py), never by pykv's: it imports no pykv code.

    <venv>/bin/python oracle/drive_v0.py CASES.json TRACES.json

The scheduler is ``vllm.core.scheduler.Scheduler(scheduler_config, cache_config, None)`` fed ``SequenceGroup``s,
as vLLM's ``tests/core/test_scheduler.py`` drives it. After each ``schedule()`` the driver does what
``LLMEngine._process_model_outputs`` and ``SequenceGroupOutputProcessor`` (``engine/output_processor/
single_step.py``) do: ``update_num_computed_tokens`` by each scheduled chunk, append the sampled token (the one
pykv produced) to each sequence whose tokens are all computed, fork the ``n - 1`` other sequences of parallel
sampling on the first token (each child gets a sample, the parent the last one), stop at max_tokens with vLLM's
``StopChecker``, free finished sequences, then ``free_finished_seq_groups()``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
warnings.filterwarnings("ignore")

import vllm  # noqa: E402
from vllm.config import CacheConfig, SchedulerConfig  # noqa: E402
from vllm.core.scheduler import Scheduler  # noqa: E402
from vllm.engine.output_processor.stop_checker import StopChecker  # noqa: E402
from vllm.inputs import token_inputs  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.sequence import Logprob, Sequence, SequenceGroup, SequenceStatus  # noqa: E402

from oracle.trace import Case, StepTrace, Trace, dump_list, load_cases  # noqa: E402

RELEASE = vllm.__version__
EOS_TOKEN_ID = 2**30  # never produced: every case runs with ignore_eos on both sides
MODES = {"recompute": "recompute", "swap": "swap", "auto": None}


def build_scheduler(case: Case) -> Scheduler:
    c = case.config
    if c.watermark is not None and c.watermark != 0.01:
        raise NotImplementedError("vLLM 0.6.3.post1 has no watermark knob (the block manager's 0.01 is fixed)")
    scheduler_config = SchedulerConfig(
        max_num_batched_tokens=c.max_num_batched_tokens,
        max_num_seqs=c.max_num_seqs,
        max_model_len=c.max_model_len,
        enable_chunked_prefill=c.enable_chunked_prefill,
        preemption_mode=MODES[c.preemption_mode],
        policy="priority" if c.priority_scheduling else "fcfs",
    )
    cache_config = CacheConfig(
        block_size=c.block_size,
        gpu_memory_utilization=1.0,
        swap_space=0,
        cache_dtype="auto",
        enable_prefix_caching=c.enable_prefix_caching,
    )
    cache_config.num_gpu_blocks = c.num_gpu_blocks
    cache_config.num_cpu_blocks = c.num_cpu_blocks
    return Scheduler(scheduler_config, cache_config, None)


def run_case(case: Case) -> Trace:
    sched = build_scheduler(case)
    trace = Trace(side=f"vllm {RELEASE}", case=case.name)
    stop = StopChecker(case.config.max_model_len, lambda seq: None)
    counter = itertools.count()
    names: dict[int, str] = {}  # vLLM seq_id -> pykv's sequence name ("r", "r#1", ...)
    tokens = {}  # pykv's sequence name -> the tokens pykv produced
    for r in case.requests:
        for k, out in enumerate(r.output_token_ids):
            tokens[r.request_id if k == 0 else f"{r.request_id}#{k}"] = out
    pending = sorted(case.requests, key=lambda r: r.arrival_step)
    groups: dict[str, tuple[SequenceGroup, object]] = {}
    events: dict[str, list] = {"preempted": [], "swapped_in": []}
    real_preempt, real_swap_in = sched._preempt, sched._swap_in

    def seq_names(group: SequenceGroup, status=None) -> list[str]:
        return [names[s.seq_id] for s in sorted(group.get_seqs(status=status), key=lambda s: s.seq_id)]

    def preempt(seq_group, blocks_to_swap_out, preemption_mode=None):
        running = seq_names(seq_group, SequenceStatus.RUNNING)
        mode = real_preempt(seq_group, blocks_to_swap_out, preemption_mode)
        events["preempted"] += [[n, mode.name.lower()] for n in reversed(running)]
        return mode

    def swap_in(seq_group, blocks_to_swap_in):
        events["swapped_in"] += seq_names(seq_group, SequenceStatus.SWAPPED)
        return real_swap_in(seq_group, blocks_to_swap_in)

    sched._preempt, sched._swap_in = preempt, swap_in
    steps_done, arrival = 0, 0

    def sample(seq: Sequence, token: int) -> None:
        seq.append_token_id(token, {token: Logprob(0.0)})

    while pending or sched.has_unfinished_seqs():
        if steps_done >= case.max_steps:
            trace.error = f"stopped at max_steps={case.max_steps}"
            break
        while pending and pending[0].arrival_step <= steps_done:
            r = pending.pop(0)
            arrival += 1
            seq = Sequence(next(counter), token_inputs(list(r.prompt_token_ids)), case.config.block_size, EOS_TOKEN_ID)
            names[seq.seq_id] = r.request_id
            params = SamplingParams(
                n=r.n, max_tokens=r.max_tokens, ignore_eos=True, temperature=0.0 if r.n == 1 else 1.0
            )
            group = SequenceGroup(
                r.request_id, [seq], arrival_time=float(arrival), sampling_params=params, priority=r.priority
            )
            groups[r.request_id] = (group, r)
            sched.add_seq_group(group)
        events["preempted"], events["swapped_in"] = [], []
        _, outs, _ = sched.schedule()
        steps_done += 1
        scheduled, finished = [], []
        for g in outs.ignored_seq_groups:
            finished += seq_names(g)
        for ssg in outs.scheduled_seq_groups:
            g = ssg.seq_group
            prefill = g.is_prefill()
            for seq in sorted(g.get_seqs(status=SequenceStatus.RUNNING), key=lambda s: s.seq_id):
                scheduled.append(
                    [names[seq.seq_id], seq.data.get_num_computed_tokens(), ssg.token_chunk_size if prefill else 1]
                )
        for ssg in outs.scheduled_seq_groups:
            g = ssg.seq_group
            g.update_num_computed_tokens(ssg.token_chunk_size)
            if g.is_prefill():
                continue  # a chunk short of the prompt's end: nothing sampled (do_sample=False)
            params = g.sampling_params
            parents = sorted(g.get_seqs(status=SequenceStatus.RUNNING), key=lambda s: s.seq_id)
            new = []
            for parent in parents:
                name = names[parent.seq_id]
                if params.n > 1 and not parent.get_output_token_ids() and "#" not in name:
                    for k in range(1, params.n):  # the first token forks n - 1 children (samples[:-1])
                        child = parent.fork(next(counter))
                        names[child.seq_id] = f"{name}#{k}"
                        sample(child, tokens[f"{name}#{k}"][0])
                        new.append((child, parent))
                sample(parent, tokens[name][len(parent.get_output_token_ids())])
                new.append((parent, parent))
            for seq, _ in new:
                stop.maybe_stop_sequence(seq, 0, params)
            for seq, parent in new:
                if seq is not parent:
                    g.add(seq)
                    if not seq.is_finished():
                        sched.fork_seq(parent, seq)
            for seq, parent in new:
                if seq.is_finished():
                    finished.append(names[seq.seq_id])
                    sched.free_seq(seq)
        sched.free_finished_seq_groups()

        def queue(q, status=None) -> list[str]:
            return [
                n
                for g in q
                for n in (
                    seq_names(g, status)
                    if status
                    else [names[s.seq_id] for s in sorted(g.get_seqs(), key=lambda s: s.seq_id) if not s.is_finished()]
                )
            ]

        trace.steps.append(
            StepTrace(
                step=steps_done,
                scheduled=scheduled,
                preempted=list(events["preempted"]),
                swapped_in=list(events["swapped_in"]),
                waiting=queue(sched.waiting),
                running=queue(sched.running, SequenceStatus.RUNNING),
                swapped=queue(sched.swapped, SequenceStatus.SWAPPED),
                free_blocks=sched.block_manager.get_num_free_gpu_blocks(),
                finished=finished,
            )
        )
    modes = [p[1] for s in trace.steps for p in s.preempted]
    trace.num_preemptions = len(modes)
    trace.counters = {
        "steps": len(trace.steps),
        "preemptions": len(modes),
        "recompute": modes.count("recompute"),
        "swap": modes.count("swap"),
        "scheduled_tokens": sum(c[2] for s in trace.steps for c in s.scheduled),
    }
    return trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases")
    ap.add_argument("traces")
    ap.add_argument("--model-dir", help="unused (V0's scheduler needs no ModelConfig); accepted like drive_v1's")
    args = ap.parse_args()
    traces = []
    t0 = time.perf_counter()
    for case in load_cases(args.cases):
        try:
            traces.append(run_case(case))
        except Exception as e:  # one case's failure is that case's trace, not the batch's
            trace = Trace(side=f"vllm {RELEASE}", case=case.name)
            trace.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
            traces.append(trace)
    dump_list(traces, args.traces)
    print(f"vllm {RELEASE}: {len(traces)} cases in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
