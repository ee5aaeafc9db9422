"""The oracle: vLLM's own schedulers (0.6.3.post1, 0.10.2, 0.33.0; CPU only, no model) run beside pykv on the
same cases (oracle/cases.py), compared exactly, step by step (oracle/compare.py).

Needs the venvs of ``python oracle/build_venvs.py``; without them every test skips, unless
``PYKV_ORACLE_REQUIRED=1`` (CI), where they fail.

KNOWN_DIVERGENCES is the one table of cases that differ today because pykv does not yet follow a vLLM rule:
each is an xfail(strict=True), so a fix in pykv turns it into an XPASS failure and the only change is to
remove its entry.
"""

from __future__ import annotations

import os

import pytest

from oracle import cases as oracle_cases
from oracle import harness

# rule -> (reason: the vLLM rule pykv lacks, cited by release/file/function; the cases it breaks today)
KNOWN_DIVERGENCES: dict[str, tuple[str, list[str]]] = {
    "v0_batch_order": (
        "vLLM 0.6.3.post1 orders the batch prefills first, then decodes (vllm/core/scheduler.py "
        "_schedule_chunked_prefill: scheduled_seq_groups = prefills + running prefills + swapped-in prefills + "
        "running decodes + swapped-in decodes); pykv's V0Scheduler.schedule (pykv/scheduler_v0.py) emits chunks in "
        "the order it scheduled them", ["v0.6/spread", "v0.6/long_prompt"]),
    "v0_append_touches": (
        "vLLM 0.6.3.post1 lets a running sequence append only if every block the append touches is free: "
        "vllm/core/block_manager.py SelfAttnBlockSpaceManager.can_append_slots sums "
        "vllm/core/block/block_table.py BlockTable.get_num_blocks_touched_by_append_slots, which counts the "
        "partly filled last block too, so a decode preempts at 0 free blocks even when its block has room; "
        "pykv's KVCacheManager.allocate_slots asks only for new blocks",
        ["v0.6/burst", "v0.6/storm24", "v0.6/prefix_off", "v0.6/swap_storm", "v0.6/swap_chunked_off",
         "v0.6/parallel_n2", "v0.6/burst+batch_as_set", "v0.6/storm24+batch_as_set", "v0.6/prefix_off+batch_as_set",
         "v0.6/swap_storm+batch_as_set", "v0.6/swap_chunked_off+batch_as_set", "v0.6/parallel_n2+batch_as_set"]),
    "v0_prefix_hits_scheduled": (
        "vLLM 0.6.3.post1 schedules a prefix-cache hit's tokens as part of the prefill and charges them to the "
        "token budget (vllm/core/scheduler.py Scheduler._get_num_new_tokens: seq.get_num_new_tokens() counts the "
        "uncomputed tokens, and the cached ones are not marked computed before scheduling); pykv's "
        "V0Scheduler._schedule_prefills skips the hit blocks and does not charge them",
        ["v0.6/prefix_on", "v0.6/prefix_on+batch_as_set"]),
    "v0_priority_chunked": (
        "vLLM 0.6.3.post1 applies the priority policy only without chunked prefill (vllm/core/scheduler.py "
        "Scheduler._schedule_default calls _schedule_priority_preemption; _schedule_chunked_prefill keeps the "
        "waiting queue in arrival order); pykv's Scheduler._order_waiting (pykv/scheduler.py) sorts it by "
        "priority under every profile", ["v0.6/priority", "v0.6/priority+batch_as_set"]),
}


def _all() -> list:
    return [v for c in oracle_cases.all_cases() for v in oracle_cases.variants(c)]


CASES = _all()


def _xfail_reason(name: str):
    return next((reason for reason, names in KNOWN_DIVERGENCES.values() if name in names), None)


def _params():
    for case in CASES:
        reason = _xfail_reason(case.name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(case.name, marks=marks, id=case.name)


@pytest.fixture(scope="module")
def comparisons():
    missing = harness.missing_venvs({c.config.profile for c in CASES})
    if missing:
        message = f"the oracle's vLLM venvs are missing ({', '.join(missing)}): run python oracle/build_venvs.py"
        if os.environ.get("PYKV_ORACLE_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return harness.run_both(CASES)


def test_known_divergences_name_real_cases():
    names = {c.name for c in CASES}
    for rule, (reason, listed) in KNOWN_DIVERGENCES.items():
        assert reason and set(listed) <= names, f"{rule}: names a case that does not exist"


@pytest.mark.parametrize("name", list(_params()))
def test_case_matches_vllm(comparisons, name):
    result = comparisons[name]
    assert not result.theirs.error, result.theirs.error
    assert result.matched, result.report()
