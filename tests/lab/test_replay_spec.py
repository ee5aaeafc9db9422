"""Verdict 9: a replay travels. Its workload is rebuilt exactly from the link's ``replay=`` token (a fresh session has
nothing else), the token is short, and a damaged or hostile token is one ValueError, never a traceback or a bomb."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import pytest

from pykv.bridge import diagnose
from pykv.lab.replay_spec import MAX_TOKEN_CHARS, decode, encode, spec_workload
from pykv.lab.server_replay import plan_replay
from pykv.review_pack.deep_link import replay_query

EXAMPLES = Path(__file__).parents[2] / "pykv" / "bridge" / "examples"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"
VOCAB = 512
SPEC = {"v": 1, "seed": 0, "vocab": 512, "prompt_len": 48, "output_len": 48, "arrivals": [0]}


def test_the_link_rebuilds_the_storm_replay_exactly():
    plan = plan_replay(diagnose(str(EXAMPLES / "v1-0.33-preemption-storm.log")), VOCAB)
    token = encode(plan.spec)
    assert len(token) < 300  # 19 requests of 48 prompt tokens each travel as a seed and their shape
    rebuilt = spec_workload(decode(token))
    assert rebuilt.model_dump() == plan.workload.model_dump()  # every token id, length and arrival step
    link = replay_query(plan.config, token, 7)
    assert "preset=none" in link and "step=7" in link and f"replay={token}" in link
    assert f"num_gpu_blocks={plan.config.num_gpu_blocks}" in link and "max_num_seqs=12" in link


def test_shared_trace_blocks_and_arrivals_travel():
    rows = [(0, 3000, 1000, [11, 12, 13]), (0, 3000, 1000, [11, 12, 14]), (60000, 3000, 1000, [11, 12, 15])]
    trace = "".join(
        f'{{"timestamp": {t}, "input_length": {i}, "output_length": {o}, "hash_ids": {h}}}\n' for t, i, o, h in rows
    )
    plan = plan_replay(diagnose([(FIXTURES / "v1_0_33_0_format.log").read_bytes(), trace.encode()]), VOCAB)
    assert plan.spec.prefixes and plan.spec.prefixes[0][0] == 0  # renumbered: the trace's hash ids stay home
    rebuilt = spec_workload(decode(encode(plan.spec)))
    assert rebuilt.model_dump() == plan.workload.model_dump()
    assert rebuilt.requests[0].prompt_token_ids[:16] == rebuilt.requests[-1].prompt_token_ids[:16]


def _token(body: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(body)).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        "not base64 at all!!",
        "AAAA",
        _token(b"[1, 2, 3]"),
        _token(
            json.dumps({"v": 1, "seed": 0, "vocab": 512, "prompt_len": 48, "output_len": 48, "arrivals": []}).encode()
        ),
        _token(
            json.dumps(
                {"v": 1, "seed": 0, "vocab": 512, "prompt_len": 48, "output_len": 99999, "arrivals": [0]}
            ).encode()
        ),
        _token(b"[" * 50_000),
        _token(b" " * 2_000_000),  # a zip bomb: 2 MB of spaces in a 2.6 KB token, under the length cap
        "A" * (MAX_TOKEN_CHARS + 1),
    ],
)
def test_a_bad_token_is_one_value_error(token):
    with pytest.raises(ValueError, match="replay"):
        decode(token)


def test_a_zip_bomb_stops_at_the_decompression_cap_not_the_length_cap():
    spec = {"v": 1, "seed": 0, "vocab": 512, "prompt_len": 48, "output_len": 48, "arrivals": [0]}
    assert decode(_token(json.dumps(spec).encode())).seed == 0
    bomb = _token(b" " * 2_000_000 + json.dumps(spec).encode())  # valid JSON after 2 MB of whitespace
    assert len(bomb) < MAX_TOKEN_CHARS  # it passes the length check: only the bounded inflate stops it
    with pytest.raises(ValueError, match="damaged or not a pykv replay"):
        decode(bomb)


def test_a_calm_servers_pool_stays_within_what_a_link_carries():
    from pykv.border.config import knob_named
    from pykv.review_pack.deep_link import link_caveats

    calm = (
        "INFO 06-16 21:24:15 metrics.py:341] Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 20.0 "
        "tokens/s, Running: 200 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.0%, CPU KV cache "
        "usage: 0.0%.\n"
    )
    plan = plan_replay(diagnose([calm.encode()]), VOCAB)
    assert plan.config.num_gpu_blocks == knob_named("num_gpu_blocks").maximum
    assert not [n for n in link_caveats(plan.config) if "limits" in n]
    assert any("capped at 512 blocks" in c for c in plan.cannot_keep)
