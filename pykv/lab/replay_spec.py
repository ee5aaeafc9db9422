"""A server replay's workload as the few numbers that make it, and those numbers as one link parameter.

``plan_replay`` draws its requests from one seeded generator, so its workload is a function of: the seed, the
vocabulary drawn from, the prompt and output lengths, each request's arrival step and, from a trace, each request's
leading shared-block ids (renumbered 0, 1, 2... in order of first use: only which requests share a block matters).
Those travel in a Playground link as ``replay=<token>``: compact JSON, zlib, URL-safe base64 (a storm's 32 requests
take under 200 characters). The Playground rebuilds the identical workload from it in any browser session.

A token is untrusted input: its length, its decompressed size and every field are bounded before anything is built::

    token --b64--> bytes (<= MAX_TOKEN_CHARS) --zlib, bounded--> JSON (<= MAX_JSON_BYTES) --pydantic--> ReplaySpec
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import zlib
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pykv.border.workload import Workload, WorkloadRequest

SPEC_BLOCK_TOKENS = 16  # one shared trace block is one lab block of this many tokens
MAX_SPEC_REQUESTS = 64
MAX_SPEC_TOKENS = 512  # a lab request's prompt or output
MAX_SPEC_ARRIVAL = 1_000
MAX_SPEC_VOCAB = 10_000_000
MAX_TOKEN_CHARS = 8_000  # the link parameter (a browser and a proxy take URLs far longer)
MAX_JSON_BYTES = 64_000
REPLAY_PARAM = "replay"
WORKLOAD_NAME = "server-replay"


class ReplaySpec(BaseModel):
    """What rebuilds a replay's workload exactly (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    v: Literal[1] = 1
    seed: int = Field(ge=0, le=2**31 - 1)
    vocab: int = Field(ge=4, le=MAX_SPEC_VOCAB)
    prompt_len: int = Field(ge=1, le=MAX_SPEC_TOKENS)
    output_len: int = Field(ge=1, le=MAX_SPEC_TOKENS)
    arrivals: list[Annotated[int, Field(ge=0, le=MAX_SPEC_ARRIVAL)]] = Field(min_length=1, max_length=MAX_SPEC_REQUESTS)
    # per request, its leading shared blocks (renumbered); empty: no trace, every prompt its own
    prefixes: list[list[Annotated[int, Field(ge=0, le=MAX_SPEC_REQUESTS * MAX_SPEC_TOKENS)]]] = Field(
        default_factory=list, max_length=MAX_SPEC_REQUESTS
    )

    @model_validator(mode="after")
    def _shapes(self) -> "ReplaySpec":
        if self.prefixes and len(self.prefixes) != len(self.arrivals):
            raise ValueError("one prefix list per request")
        if any(len(p) * SPEC_BLOCK_TOKENS > self.prompt_len for p in self.prefixes):
            raise ValueError("a request's shared blocks are longer than its prompt")
        return self


def renumbered(prefixes: list[list[int]]) -> list[list[int]]:
    """Block ids as 0, 1, 2... in order of first use (the sharing kept, the trace's hash ids not carried)."""
    ids: dict[int, int] = {}
    return [[ids.setdefault(b, len(ids)) for b in p] for p in prefixes]


def spec_workload(spec: ReplaySpec) -> Workload:
    """The replay's requests: token ids drawn from ``Random(seed)`` in one fixed order (a shared block's tokens drawn
    at each use, kept at the first), each request ``prompt_len`` tokens then ``output_len`` generated."""
    rng = random.Random(spec.seed)
    blocks: dict[int, list[int]] = {}
    requests = []
    for i, arrival in enumerate(spec.arrivals):
        tokens: list[int] = []
        for block_id in spec.prefixes[i] if spec.prefixes else ():
            drawn = [rng.randrange(3, spec.vocab) for _ in range(SPEC_BLOCK_TOKENS)]
            tokens += blocks.setdefault(block_id, drawn)
        tokens += [rng.randrange(3, spec.vocab) for _ in range(spec.prompt_len - len(tokens))]
        requests.append(
            WorkloadRequest(prompt_token_ids=tokens, max_tokens=spec.output_len, arrival_step=arrival, ignore_eos=True)
        )
    return Workload(name=WORKLOAD_NAME, seed=spec.seed, requests=requests)


def encode(spec: ReplaySpec) -> str:
    """The link parameter: compact JSON, zlib, URL-safe base64 without padding."""
    raw = json.dumps(spec.model_dump(), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode(token: str) -> ReplaySpec:
    """A link's ``replay=`` back to its spec; ValueError (one line: what is wrong, what to do) for anything else."""
    bad = "the link's replay is damaged or not a pykv replay: open the replay again from the Your server page"
    if len(token) > MAX_TOKEN_CHARS:
        raise ValueError(f"the link's replay is {len(token):,} characters, over {MAX_TOKEN_CHARS:,}: {bad}")
    try:
        packed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_JSON_BYTES)
        if inflater.unconsumed_tail or not inflater.eof:
            raise ValueError("too large or cut short")
        return ReplaySpec.model_validate(json.loads(raw.decode()))
    except (binascii.Error, zlib.error, UnicodeDecodeError, RecursionError, ValueError, ValidationError):
        raise ValueError(bad) from None
