"""vLLM's KV-cache events, decoded tolerantly and counted.

vLLM (from 0.9.0, ``--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq", ...}'``) publishes
what its prefix cache does on a ZMQ PUB socket. Each message is three frames (0.32.0
``vllm/distributed/kv_events.py``, ``ZmqEventPublisher._publisher_thread``):

    frame 0: topic (bytes, "" by default)
    frame 1: sequence number, 8 bytes big-endian (one per batch; a gap = batches this subscriber missed)
    frame 2: msgpack of a ``KVEventBatch``: ``[ts, [event, ...], data_parallel_rank?]`` (``array_like``)

An event is a tagged struct, ``BlockStored`` (block_hashes, parent_block_hash, token_ids, block_size, lora_id,
medium, ...), ``BlockRemoved`` (block_hashes, medium, ...) or ``AllBlocksCleared``. 0.32.0 encodes an event as a
map (``{"type": "BlockStored", "block_hashes": [...], ...}``); a release that makes the events ``array_like``
encodes ``["BlockStored", [...], ...]`` in field order. Both are read; fields keep being added across releases
(``extra_keys``, ``group_idx``, ``locality``, ``session_id`` in 0.32.0), so only the first few are read, by name
or position, and the rest ignored. An unknown tag is counted, never fatal; a message that is not a batch at all is
counted as undecodable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgpack

from pykv.bridge.base.errors import BridgeInputError
from pykv.bridge.base.numbers import MAX_EPOCH_S, bounded_float, bounded_int

MAX_BATCH_BYTES = 16 * 1024 * 1024  # one batch: a step's events (vLLM's own hwm is counted in batches, not bytes)
MAX_EVENTS = 1_000_000  # events read from one batch
MAX_UNKNOWN_TAGS = 20  # distinct unknown tags kept by name; more are counted under "(other)"


@dataclass(frozen=True)
class KVEvent:
    kind: str  # BlockStored, BlockRemoved, AllBlocksCleared, or an unknown tag as sent (cut to 60 characters)
    blocks: int = 0  # block hashes it names
    tokens: int = 0  # token ids a BlockStored carries
    medium: str | None = None  # "GPU", "CPU", ... (None: not said)


@dataclass(frozen=True)
class KVEventBatch:
    ts: float | None
    events: list[KVEvent]
    rank: int | None = None  # data_parallel_rank


def decode_batch(payload: bytes) -> KVEventBatch:
    """One batch from its msgpack bytes; BridgeInputError when the bytes are not a batch at all."""
    if len(payload) > MAX_BATCH_BYTES:
        raise BridgeInputError(f"a KV-event batch of {len(payload):,} bytes is over the cap of {MAX_BATCH_BYTES:,}")
    try:
        body = msgpack.unpackb(payload, raw=False, strict_map_key=False, use_list=True)
    except (ValueError, TypeError, msgpack.UnpackException, RecursionError) as exc:  # ExtraData is a ValueError
        raise BridgeInputError(f"not a msgpack KV-event batch ({type(exc).__name__})") from None
    if isinstance(body, dict):
        ts, events, rank = body.get("ts"), body.get("events"), body.get("data_parallel_rank")
    elif isinstance(body, list) and len(body) >= 2:
        ts, events, rank = body[0], body[1], body[2] if len(body) > 2 else None
    else:
        raise BridgeInputError("not a KV-event batch: expected [ts, events, ...]")
    if not isinstance(events, list):
        raise BridgeInputError("not a KV-event batch: its events are not a list")
    return KVEventBatch(
        bounded_float(ts, MAX_EPOCH_S),
        [decode_event(e) for e in events[:MAX_EVENTS]],
        bounded_int(rank, 1_000_000),
    )


def decode_event(raw: object) -> KVEvent:
    """One event, as a map with a "type" tag or an array whose first item is the tag; anything else is an unknown
    event named after its shape."""
    if isinstance(raw, dict):
        tag = raw.get("type")
        named = raw
        positional: list = []
    elif isinstance(raw, list) and raw and isinstance(raw[0], str):
        tag, named, positional = raw[0], {}, raw[1:]
    else:
        return KVEvent(f"(not an event: {type(raw).__name__})")
    if not isinstance(tag, str):
        return KVEvent("(no tag)")

    def pick(name: str, index: int) -> object:
        if name in named:
            return named[name]
        return positional[index] if index < len(positional) else None

    if tag == "BlockStored":
        medium = pick("medium", 5)
        return KVEvent(tag, _length(pick("block_hashes", 0)), _length(pick("token_ids", 2)), _text(medium))
    if tag == "BlockRemoved":
        return KVEvent(tag, _length(pick("block_hashes", 0)), 0, _text(pick("medium", 1)))
    if tag == "AllBlocksCleared":
        return KVEvent(tag)
    return KVEvent(tag[:60])


def _length(value: object) -> int:
    return len(value) if isinstance(value, (list, tuple)) else 0


def _text(value: object) -> str | None:
    return value[:20] if isinstance(value, str) else None


@dataclass
class KVEventCounts:
    """What a subscriber received, counted (the live view's "KV events" line)."""

    batches: int = 0
    block_stored: int = 0  # BlockStored events
    blocks_stored: int = 0  # the block hashes in them
    block_removed: int = 0
    blocks_removed: int = 0
    all_cleared: int = 0
    unknown: dict[str, int] = field(default_factory=dict)  # an unknown tag -> events
    undecodable: int = 0  # messages that were not a batch (or not three frames)
    missed: int = 0  # batches the sequence numbers say never arrived (a gap after the first one received)
    ranks: set[int] = field(default_factory=set)
    last_seq: int | None = None

    def add(self, batch: KVEventBatch, seq: int | None = None) -> None:
        self.batches += 1
        if batch.rank is not None:
            self.ranks.add(batch.rank)
        if seq is not None:
            if self.last_seq is not None and seq > self.last_seq + 1:
                self.missed += seq - self.last_seq - 1
            self.last_seq = seq if self.last_seq is None else max(seq, self.last_seq)
        for event in batch.events:
            if event.kind == "BlockStored":
                self.block_stored += 1
                self.blocks_stored += event.blocks
            elif event.kind == "BlockRemoved":
                self.block_removed += 1
                self.blocks_removed += event.blocks
            elif event.kind == "AllBlocksCleared":
                self.all_cleared += 1
            else:
                key = event.kind if event.kind in self.unknown or len(self.unknown) < MAX_UNKNOWN_TAGS else "(other)"
                self.unknown[key] = self.unknown.get(key, 0) + 1

    def add_message(self, frames: list[bytes]) -> None:
        """One ZMQ message as received (topic, sequence, payload); what is not a batch is counted, not raised."""
        if len(frames) != 3:
            self.undecodable += 1
            return
        seq = int.from_bytes(frames[1], "big", signed=True) if len(frames[1]) == 8 else None
        try:
            batch = decode_batch(frames[2])
        except BridgeInputError:
            self.undecodable += 1
            return
        self.add(batch, seq if seq is not None and seq >= 0 else None)

    def line(self) -> str:
        """'KV events: 41 batches, BlockStored 63 (120 blocks), BlockRemoved 12 (30 blocks), AllBlocksCleared 0'."""
        parts = [
            f"KV events: {self.batches:,} batches",
            f"BlockStored {self.block_stored:,} ({self.blocks_stored:,} blocks)",
            f"BlockRemoved {self.block_removed:,} ({self.blocks_removed:,} blocks)",
            f"AllBlocksCleared {self.all_cleared:,}",
        ]
        if self.unknown:
            parts.append("unknown " + ", ".join(f"{tag} {n:,}" for tag, n in sorted(self.unknown.items())))
        if self.undecodable:
            parts.append(f"{self.undecodable:,} undecodable")
        if self.missed:
            parts.append(f"{self.missed:,} missed (sequence gaps)")
        return ", ".join(parts)

    def to_json_dict(self) -> dict:
        return {
            "batches": self.batches,
            "BlockStored": self.block_stored,
            "blocks_stored": self.blocks_stored,
            "BlockRemoved": self.block_removed,
            "blocks_removed": self.blocks_removed,
            "AllBlocksCleared": self.all_cleared,
            "unknown": dict(self.unknown),
            "undecodable": self.undecodable,
            "missed": self.missed,
        }
