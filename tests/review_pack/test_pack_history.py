"""Issue 50 #2: a review pack's memory grew with output length (every step kept every request's tokens and the whole
pool): it now keeps what the pack draws, whole snapshots at the steps it draws in full and counts elsewhere."""

from __future__ import annotations

import pickle

from pykv.border.workload import Workload, WorkloadRequest
from pykv.cli.main import _replay
from pykv.lab.lab import Lab, lab_config
from pykv.review_pack import record_from_lab, render_html, run_pack
from pykv.review_pack.history import GRID_PREEMPTIONS, preempted


def lab(model: str, max_tokens: int, blocks: int = 64, n: int = 4) -> Lab:
    requests = [
        WorkloadRequest(prompt_token_ids=[5 + i] * 8, max_tokens=max_tokens, ignore_eos=True, arrival_step=i)
        for i in range(n)
    ]
    config = lab_config(model=str(model), num_gpu_blocks=blocks, block_size=4, max_num_seqs=n)
    return Lab(config, workload=Workload(name="long", seed=0, requests=requests))


def test_a_step_kept_does_not_grow_with_the_tokens_made_so_far(random_llama_path):
    """Four requests of 200 tokens, 200 steps: step 190 once held ~10x the tokens (and text) of step 20, and every
    step a view of every block in the pool."""
    run = lab(random_llama_path, 200, blocks=256)
    _replay(run, 200)
    assert run.head == 200 and not any(preempted(s) for s in run.snapshots)
    early, late = (len(pickle.dumps(run.snapshots[k])) for k in (20, 190))
    assert late < 1.3 * early, (early, late)
    whole = len(pickle.dumps(run.snapshots[-1]))
    assert 5 * late < whole  # what a kept step no longer holds


def test_the_steps_the_pack_draws_in_full_stay_whole(random_llama_path):
    run = lab(random_llama_path, 60, blocks=24, n=6)  # a small pool: preemptions
    _replay(run, 400)
    snaps = run.snapshots
    picks = [k for k, s in enumerate(snaps) if preempted(s)][:GRID_PREEMPTIONS]
    assert picks, "the workload should preempt"
    whole = {0, len(snaps) - 1, len(snaps) - 2, *picks, *(k - 1 for k in picks)}
    for k, s in enumerate(snaps):
        assert bool(s.blocks) == (k in whole), k
    last = snaps[-1]
    assert all(len(r.output_token_ids) == r.num_output_tokens for r in last.requests)
    html = render_html(run_pack(record_from_lab(run))).decode()
    assert "Block grids" in html and f"Step {snaps[picks[0]].step}:" in html


def test_slim_views_of_an_unchanged_request_are_one_object(random_llama_path):
    run = lab(random_llama_path, 8, n=6)
    _replay(run, 100)
    slim = [{r.request_id: r for r in s.requests} for s in run.snapshots[1:-2] if not s.blocks]
    pairs = [
        (before[rid], view)
        for before, after in zip(slim, slim[1:])
        for rid, view in after.items()
        if view.status.startswith("finished") and rid in before and before[rid].status == view.status
    ]
    assert pairs and all(a is b for a, b in pairs)


def test_the_cli_refuses_a_pack_whose_history_would_be_too_big_up_front(random_llama_path, tmp_path, capsys):
    """Long outputs and a big pool: each whole snapshot kept holds every block's view and every token so far."""
    from pykv.cli.main import MAX_REPORT_HISTORY_BYTES, main
    from pykv.review_pack.history import history_estimate

    out = tmp_path / "review.html"
    args = ["report", "--model", str(random_llama_path), "--workload", "storm", "--num-requests", "1000"]
    assert main(args + ["--max-tokens", "60000", "--max-steps", "1000", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "history would hold about" in err and "GiB" in err and "lower --num-gpu-blocks, --max-tokens" in err
    assert not out.exists()
    assert history_estimate(1000, 1000, 64, 64_000) < MAX_REPORT_HISTORY_BYTES  # the old limit's case fits
    assert history_estimate(250, 3000, 60_000, 750_000) < MAX_REPORT_HISTORY_BYTES  # issue 50's, within every bound
