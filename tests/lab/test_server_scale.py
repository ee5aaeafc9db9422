"""Verdict 9: the what-if says each lab fix at the server's scale (the lab's "--max-num-seqs 12 -> 6" is a ratio:
"your 128 -> about 64"), in the server's blocks and GiB of the model its log names, priced on that model."""

from __future__ import annotations

from pathlib import Path

from pykv.bridge import diagnose
from pykv.gpu_model import Target
from pykv.lab.server_replay import plan_replay
from pykv.lab.server_scale import at_server_scale
from pykv.lab.target_from_log import log_model
from pykv.lab.what_if import suggested_fixes

EXAMPLE = Path(__file__).parents[2] / "pykv" / "bridge" / "examples" / "v1-0.33-preemption-storm.log"


def test_the_log_names_its_model_and_it_maps_to_the_catalogue():
    d = diagnose(str(EXAMPLE))
    assert d.config.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert log_model(d.config.model).catalogue == "llama-3.1-8b"
    assert log_model("Qwen/Qwen2.5-7B-Instruct").catalogue == "qwen2.5-7b"
    assert log_model("/models/Meta-Llama-3.1-70B-Instruct-AWQ").catalogue == "llama-3.1-70b"
    assert log_model("Qwen/Qwen2.5-14B-Instruct").catalogue == "qwen2.5-14b"  # was priced as Llama-3.1-8B
    assert log_model("Qwen/Qwen2.5-72B-Instruct").catalogue is None  # never the 7B by a prefix
    mixtral = log_model("mistralai/Mixtral-8x7B-Instruct-v0.1")  # not in the catalogue: never priced as another unsaid
    assert mixtral.catalogue is None and "mistralai/Mixtral-8x7B-Instruct-v0.1" in mixtral.note()
    assert "pick" in mixtral.note()
    assert log_model(None).note().startswith("the log does not name its model")


def test_a_v0_config_dump_names_its_model_too():
    line = (
        "INFO 06-16 21:20:00 llm_engine.py:161] Initializing an LLM engine (v0.6.3) with config: "
        "model='Qwen/Qwen2.5-14B-Instruct', speculative_config=None, tokenizer='Qwen/Qwen2.5-14B-Instruct', "
        "served_model_name=qwen, max_seq_len=8192\n"
    )
    stats = (
        "INFO 06-16 21:24:15 metrics.py:341] Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: "
        "20.0 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 5.0%, "
        "CPU KV cache usage: 0.0%.\n"
    )
    assert diagnose([(line + stats).encode()]).config.model == "Qwen/Qwen2.5-14B-Instruct"


def test_each_fix_is_said_at_the_servers_scale():
    d = diagnose(str(EXAMPLE))  # --max-num-seqs 128, --gpu-memory-utilization 0.9, 180,000 KV tokens
    plan = plan_replay(d, 512)
    memory, seqs = suggested_fixes(d, plan)
    assert "(--max-num-seqs 12 -> 6)" in seqs.label  # the lab's scaled knob
    assert at_server_scale(seqs, plan, d, None) == "your --max-num-seqs 128 -> about 64"
    est = Target(model="llama-3.1-8b").estimate()  # 128 KiB of KV per token
    ratio = memory.changes["num_gpu_blocks"] / plan.config.num_gpu_blocks
    said = at_server_scale(memory, plan, d, est)
    assert said.startswith(f"your 11,250 GPU blocks -> about {round(11_250 * ratio):,} (+{ratio - 1:.0%})")
    old_gib = 180_000 * est.kv_bytes_per_token_per_gpu / 2**30
    assert f"= {old_gib:,.1f} -> {old_gib * ratio:,.1f} GiB of Llama-3.1-8B KV per GPU" in said
    assert "--gpu-memory-utilization 0.90 -> about 0.9" in said and "on H100-SXM" in said
    d.config.max_num_seqs = None  # a log that prints no --max-num-seqs: its running peak, said as such
    assert at_server_scale(seqs, plan, d, None).startswith("your running peak of 128 -> about 64")


def test_the_review_pack_says_each_fix_at_the_servers_scale():
    from pykv.lab.what_if import ReplayOutcome
    from pykv.review_pack.page import render_html
    from pykv.review_pack.server import server_pack

    d = diagnose(str(EXAMPLE))
    plan = plan_replay(d, 512)
    fixes = suggested_fixes(d, plan)
    outcome = ReplayOutcome(10, True, 1, 2, 0.1, 1.0, 100.0, "modelled H100-SXM + llama-3.1-8b")
    page = render_html(server_pack(d, plan, fixes, [outcome] * 3, Target().estimate())).decode()
    assert "on your server your --max-num-seqs 128 -&gt; about 64" in page
    assert "GiB of Llama-3.1-8B KV per GPU" in page
