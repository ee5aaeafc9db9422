"""The cost model over real schedules: preemption bills (the re-prefill's share of its steps and the delay
to the others), per-request modelled times, whole runs, the crossover, lesson paths, the CLI and the
GPU check's dry run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pykv.border.step_report import PreemptionView, ScheduledChunk, StepReport
from pykv.cli.main import main
from pykv.gpu_model import Chunk, estimate
from pykv.gpu_model.crossover import crossover_curves
from pykv.gpu_model.schedule import bills, modelled_view, request_times, run_totals
from pykv.lessons.format.errors import FieldError
from pykv.lessons.values.path_checks import Known
from pykv.lessons.values.paths import check_path

ROOT = Path(__file__).resolve().parents[2]


def report(step: int, chunks, preempted=(), swapped_in=()) -> StepReport:
    return StepReport(
        step=step,
        scheduled=[c.request_id for c in chunks],
        chunks=list(chunks),
        preempted=list(preempted),
        swapped_in=list(swapped_in),
        finished=[],
        num_batched_tokens=sum(c.num_new_tokens for c in chunks),
        forward_time_s=0.01,
        step_time_s=0.01,
        device="cpu",
    )


def preempt(step: int, rid: str, mode: str, tokens: int, blocks: int) -> PreemptionView:
    return PreemptionView(
        step=step,
        request_id=rid,
        mode=mode,
        num_blocks=blocks,
        num_tokens=tokens,
        num_bytes=0,
        device="cpu",
        swap_copies=1 if mode == "swap" else None,
    )


def test_a_recompute_bill_is_its_share_of_the_steps_and_the_others_wait_for_it():
    est = estimate()
    # step 1: c (416 tokens) preempted; step 2: b decodes beside c's re-prefill of 417 tokens (lesson 9)
    reports = [
        report(1, [ScheduledChunk("b", 30, 1, False)], [preempt(1, "c", "recompute", 416, 26)]),
        report(2, [ScheduledChunk("b", 31, 1, False), ScheduledChunk("c", 0, 417, True)]),
    ]
    (bill,) = bills(est, reports, 16)
    full = est.forward_cost([Chunk(31, 1), Chunk(0, 417)]).total
    without = est.forward_cost([Chunk(31, 1), Chunk(416, 1)]).total
    assert bill.modelled_ms == pytest.approx(full - without) and bill.modelled_ms > 1
    assert bill.delay_to_others_ms == pytest.approx(bill.modelled_ms)  # b alone waited it
    assert bill.others == ["b"] and bill.complete and bill.steps == [2]
    assert bill.seed_formula_ms == pytest.approx(416 * est.prefill_ms(2048) / 2048)


def test_a_chunked_re_prefill_and_a_swap_are_billed_over_every_step_that_paid():
    est = estimate("A100-80GB-SXM", "llama-2-7b", "fp16")
    chunked = [
        report(1, [], [preempt(1, "v", "recompute", 300, 19)]),
        report(2, [ScheduledChunk(r, 50, 1, False) for r in "xyz"] + [ScheduledChunk("v", 0, 200, True)]),
        report(3, [ScheduledChunk(r, 51, 1, False) for r in "xy"] + [ScheduledChunk("v", 200, 101, True)]),
    ]
    (bill,) = bills(est, chunked, 16)
    assert bill.steps == [2, 3] and bill.complete and bill.others == ["x", "y", "z"]
    assert bill.delay_to_others_ms == pytest.approx(3 * bill.step_ms[0] + 2 * bill.step_ms[1])
    swapped = [
        report(1, [ScheduledChunk("x", 9, 1, False)], [preempt(1, "v", "swap", 60, 4)]),
        report(2, [ScheduledChunk("x", 10, 1, False)]),
        report(3, [ScheduledChunk("x", 11, 1, False)], swapped_in=[preempt(1, "v", "swap", 60, 4)]),
    ]
    (swap,) = bills(est, swapped, 16)
    out, back = est.kv_copy_ms(64, "d2h"), est.kv_copy_ms(64, "h2d")  # four 16-token blocks each way
    assert swap.modelled_ms == pytest.approx(out + back) and swap.steps == [1, 3] and swap.complete
    assert swap.delay_to_others_ms == pytest.approx(out + back)  # x was in both steps
    totals = run_totals(est, swapped, 16, output_tokens=3)
    assert totals.swap_s == pytest.approx((out + back) * 1e-3) and totals.recompute_s == 0
    assert totals.modelled_s == pytest.approx(sum(est.step_ms(r, 16) for r in swapped) * 1e-3)


def test_a_swap_is_priced_in_its_whole_blocks_and_an_open_one_says_it_has_no_re_prefill():
    """V0's swap_blocks copies a block whole: a 33-token victim in blocks of 16 moves three blocks (48 tokens' worth),
    not 33 tokens' worth; a swap not yet back is waiting for its copy in, not for a re-prefill."""
    est = estimate()
    swapped = [report(1, [ScheduledChunk("x", 9, 1, False)], [preempt(1, "v", "swap", 33, 3)])]
    (bill,) = bills(est, swapped, 16)
    whole = 3 * 16 * est.kv_bytes_per_token_per_gpu
    assert bill.blocks == 3 and bill.kv_bytes == whole and bill.tokens == 33
    assert bill.modelled_ms == pytest.approx(est.copy_ms(whole, "d2h"))
    assert bill.modelled_ms > est.copy_ms(33 * est.kv_bytes_per_token_per_gpu, "d2h")  # its tokens alone: less
    assert not bill.complete and bill.note == "not swapped back in yet (the copy back in is billed when it happens)"
    with pytest.raises(ValueError, match="whole blocks"):  # never quietly priced per token
        bills(est, swapped, None)
    (recompute,) = bills(est, [report(1, [], [preempt(1, "v", "recompute", 33, 3)])], 16)
    assert recompute.note == "not re-prefilled yet (pending)"


def test_a_live_run_priced_on_a_target(make_engine):
    engine = make_engine(num_gpu_blocks=12, block_size=4, max_num_seqs=4)
    for prompt in ("def a(x):", "class B:", "import os\n"):
        engine.add_request(prompt)
    snaps = [engine.snapshot()]
    while engine.has_unfinished_requests() and len(snaps) < 200:
        snaps.append(engine.snapshot(engine.step()))
    est = estimate("L4", "qwen2.5-0.5b")
    view = modelled_view(est, snaps)
    times = [est.step_ms(s.report, 4) for s in snaps[1:]]
    assert view.clock_ms == pytest.approx(sum(times)) and view.target == "L4 + Qwen2.5-0.5B"
    per_request = request_times(snaps, times)
    assert set(per_request) == {r.request_id for r in snaps[-1].requests}
    assert all(t.ttft_ms > 0 and (t.tpot_ms is None or t.tpot_ms > 0) for t in per_request.values())
    assert modelled_view(est, snaps) == view  # deterministic


def test_the_crossover_on_a_target():
    curves = crossover_curves(estimate("H100-SXM", "llama-3.1-8b"), 16)
    assert curves.recompute_ms[0] < curves.swap_batched_ms[0]  # a short re-prefill rides on the decodes' weight reads
    assert curves.recompute_ms[-1] > curves.swap_batched_ms[-1]  # a long one costs more than its copies
    assert curves.batched_from is not None and 16 < curves.batched_from < 1024
    assert all(p >= b for p, b in zip(curves.swap_per_block_ms, curves.swap_batched_ms))


@pytest.mark.parametrize(
    "path, words",
    [
        ("modelled.preemptions.0.delay_to_others_ms", None),
        ("modelled.clock_ms", None),
        ("modelled.preemptions.0.colour", "field 'colour' is unknown"),
        ("modelled", "incomplete"),
        ("modelled.speed", "modelled field 'speed' is unknown"),
    ],
)
def test_lesson_paths_to_modelled_figures_are_checked_when_the_lesson_loads(path, words):
    if words is None:
        check_path(path, Known())
    else:
        with pytest.raises(FieldError, match=words):
            check_path(path, Known())


def test_the_estimate_command(capsys):
    assert main(["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--prefill", "2048"]) == 0
    out = capsys.readouterr().out
    ms = estimate().prefill_ms(2048)
    assert "modelled H100-SXM + Llama-3.1-8B" in out and f"{ms:.3f} ms" in out and "131,072 bytes" in out
    assert main(["estimate", "--gpu", "B200"]) == 2
    assert "error: Unknown GPU 'B200'; choose one of: A100-80GB-SXM" in capsys.readouterr().err
    assert main(["estimate", "--model", "llama-3.1-8b", "--pool-gib", "0.0001"]) == 2
    assert "less than one block" in capsys.readouterr().err
    assert main(["estimate", "--list"]) == 0 and "qwen2.5-0.5b" in capsys.readouterr().out


def test_the_gpu_checks_model_section_dry_runs_on_cpu():
    spec = importlib.util.spec_from_file_location("gpu_model_check", ROOT / "bench" / "gpu_model_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = []
    module.steps(lines.append, device="cpu", max_steps=3)
    assert "predicted: modelled H100-SXM + the shipped model (fp32)" in lines[0]
    assert any("median of" in line and "measured / predicted" in line for line in lines)


def test_on_a_real_gpu_the_measured_step_sits_beside_the_prediction_for_that_gpu(make_engine, random_llama_path):
    from pykv.gpu_model import ModelShape
    from pykv.lab.modelled_run import real_gpu_prediction
    from pykv.ui.views.panels.modelled_views import real_gpu_note

    def real_gpu_comparison(name, shape, dtype, snap):
        return real_gpu_note(real_gpu_prediction(name, shape, dtype, snap))

    engine = make_engine(num_gpu_blocks=16, block_size=4)
    engine.add_request("def a(x):")
    snap = engine.snapshot(engine.step())
    shape = ModelShape.from_file(Path(random_llama_path) / "config.json", "the shipped model")
    note = real_gpu_comparison("NVIDIA H100 80GB HBM3", shape, "float32", snap)
    predicted = estimate("H100-SXM", shape, "fp32").step_ms(snap.report, 4)
    assert f"measured {snap.report.step_time_s * 1e3:.2f} ms on NVIDIA H100 80GB HBM3" in note
    assert f"predicts {predicted:.2f} ms (modelled H100-SXM + the shipped model (fp32))" in note
    assert "no prediction" in real_gpu_comparison("Tesla T4", shape, "float32", snap)


def test_a_bill_of_0_or_near_0_says_why():
    """Issue 28 item 9: a pending, superseded or marginal bill carries a note wherever it is shown."""
    est = estimate()
    pending = bills(est, [report(1, [ScheduledChunk("b", 30, 1, False)], [preempt(1, "c", "recompute", 112, 7)])], 16)
    assert pending[0].modelled_ms == 0 and "pending" in pending[0].note
    again = bills(
        est,
        [
            report(1, [], [preempt(1, "c", "recompute", 112, 7)]),
            report(2, [ScheduledChunk("c", 0, 50, True)]),
            report(3, [], [preempt(3, "c", "recompute", 50, 4)]),
        ],
        16,
    )
    assert again[0].superseded and "preempted again" in again[0].note
    paid = bills(
        est,
        [
            report(1, [ScheduledChunk("b", 30, 1, False)], [preempt(1, "c", "recompute", 416, 26)]),
            report(2, [ScheduledChunk("b", 31, 1, False), ScheduledChunk("c", 0, 417, True)]),
        ],
        16,
    )
    assert paid[0].note is None  # an ordinary bill says nothing extra


def test_a_labs_run_is_priced_beside_it_once_per_step(random_llama, random_llama_path, monkeypatch):
    """Issue 44: the live views' pricing is a pure result beside the Lab, memoised by its history (not by id()):
    a rerun prices nothing, a step one step, a rewritten history from where it changed; a released history is
    never kept alive by the memo."""
    import gc
    import weakref

    from pykv import EngineConfig
    from pykv.border.workload import make_workload
    from pykv.gpu_model import Estimate
    from pykv.gpu_model.schedule import step_times_ms
    from pykv.lab.lab import Lab
    from pykv.lab.modelled_run import modelled_run

    lab = Lab(
        EngineConfig(model=str(random_llama_path), vllm_profile="v0.6", num_gpu_blocks=24, block_size=8),
        random_llama,
        workload=make_workload("storm", n=4, max_tokens=24),
    )
    lab.goto(30)
    est = estimate()
    priced = []
    step_ms = Estimate.step_ms
    monkeypatch.setattr(Estimate, "step_ms", lambda self, r, b=None: priced.append(r.step) or step_ms(self, r, b))

    run = modelled_run(lab, est)
    reports = [s.report for s in lab.snapshots[1:] if s.report is not None]
    assert list(run.step_ms) == step_times_ms(est, reports, 8) and len(run.step_ms) == 30
    assert list(run.bills) == bills(est, reports, 8) and run.bills, "the fixture must preempt"
    assert run.request_times == request_times(lab.snapshots, run.step_ms)
    assert run.this_step_ms == run.step_ms[-1] and run.clock_ms == sum(run.step_ms)

    priced.clear()
    assert modelled_run(lab, est).step_ms == run.step_ms and not priced  # a rerun prices nothing
    lab.back()
    assert modelled_run(lab, est).step_ms == run.step_ms[:-1] and not priced  # Back neither
    lab.step()
    lab.step()
    assert modelled_run(lab, est).step_ms[:30] == run.step_ms and priced == [31]  # one new step
    assert modelled_run(lab, estimate("L4")).label != run.label  # another target: its own prices

    lab.goto(10)
    priced.clear()
    lab.add_request("def late(x):", 8)  # replays steps 0 to 10 (new snapshots) and rewrites what came after
    lab.goto(14)
    again = modelled_run(lab, est)
    assert again.step_ms[:10] == run.step_ms[:10] and priced == list(range(1, 15))  # priced again, the same

    old = weakref.ref(lab.snapshots[5])
    lab.release()
    del run, again
    gc.collect()
    assert old() is None  # the memo held the released history weakly
    assert modelled_run(lab, est).step_ms == ()
