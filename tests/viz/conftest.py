"""The figures' shared hand-made snapshot (its builders are in tests/hand_made.py)."""

from __future__ import annotations

import pytest
from hand_made import block, request, snapshot

from pykv.border.snapshot import Snapshot
from pykv.border.step_report import PreemptionView


@pytest.fixture
def snap() -> Snapshot:
    # 8 device blocks: 0,1 owned by req 0; 2 shared by req 0 and req 1 (ref 2); 3 cached; 4..7 free.
    blocks = (
        [
            block(0, ref=1, owners=["0"], logical=[0], hash_="aa" * 8, filled=16),
            block(1, ref=1, owners=["0"], logical=[1], filled=5),
            block(2, ref=2, owners=["0", "1"], logical=[2, 0], hash_="bb" * 8, filled=16),
            block(3, hash_="cc" * 8, filled=16),
        ]
        + [block(i) for i in range(4, 8)]
        + [block(0, pool="cpu", ref=1, owners=["2"], logical=[0], filled=16), block(1, pool="cpu")]
    )
    reqs = [
        request("0", table=[0, 1, 2]),
        request("1", table=[2]),
        request("2", "swapped", [0], "cpu", 1),
        request("3", "finished_length"),
    ]
    queues = {"waiting": [], "running": ["0", "1"], "swapped": ["2"]}
    pre = [
        PreemptionView(step=2, request_id="2", mode="swap", num_blocks=1, num_tokens=16, num_bytes=8192, device="cpu")
    ]
    return snapshot(blocks, reqs, queues, pre)
