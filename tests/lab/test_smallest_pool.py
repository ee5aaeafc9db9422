"""The smallest clean pool, bisected over real runs (pykv.lab.smallest_pool): the bracket, and probes that run the
Lab's own workload and hand-added requests."""

from __future__ import annotations

from pykv import EngineConfig
from pykv.lab.lab import Lab
from pykv.lab.smallest_pool import PoolSearch, Probe, run_probe


def searched(start: int, answer: int, max_blocks: int = 512) -> list[int]:
    """The pools a search starting at ``start`` probes when every pool from ``answer`` on runs clean."""
    search = PoolSearch(EngineConfig(num_gpu_blocks=start), None, (), max_blocks)
    while (blocks := search.next_blocks()) is not None:
        search.record(Probe(blocks, blocks >= answer, 1, ""))
    assert search.answer == (answer if answer <= max_blocks else None)
    return [p.blocks for p in search.probes]


def test_the_search_doubles_until_clean_then_halves_to_neighbours():
    assert searched(64, 81) == [64, 128, 96, 80, 88, 84, 82, 81]  # lesson 2's storm: eight runs, 80 among them
    assert searched(64, 64) == [64, 32, 48, 56, 60, 62, 63]
    assert searched(2, 1) == [2, 1]  # down to one block, and no further
    assert searched(300, 600) == [300, 512]  # even the app's largest pool preempts: no answer, said so
    search = PoolSearch(EngineConfig(num_gpu_blocks=64), None, (), 512)
    search.record(Probe(64, False, 5, ""))
    assert search.probes_left() >= 2 and search.next_blocks() == 128


def test_a_probe_runs_the_labs_workload_and_its_hand_added_requests(random_llama, random_llama_path):
    lab = Lab(EngineConfig(model=str(random_llama_path), num_gpu_blocks=64), random_llama, "burst")
    lab.goto(2)
    lab.add_request("def fib(n):", 200, ignore_eos=True)  # one long request more, at step 2
    search = PoolSearch.of(lab, 512)
    assert search.same_run(lab) and not search.same_run(Lab(lab.config, random_llama, "storm"))
    lab.run_to_end()
    clean = run_probe(search, 64, random_llama)
    assert not lab.view.preemptions and clean == Probe(64, True, lab.head, clean.what)  # the Lab's run, step for step
    tight = run_probe(search, 12, random_llama)
    assert tight is not None and not tight.clean and "preempted at step" in tight.what
    assert run_probe(search, 64, random_llama, time_budget_s=0.0) is None  # out of time: nothing said
    assert "refuses" in run_probe(search, 1, random_llama).what  # V1: no room for one max_model_len request
