"""The ``tokenize:`` action: two texts through the model's tokenizer, and where they part ways.

Prefix caching shares whole blocks only, so what matters is how many *full* blocks the two token
sequences have in common::

    a:  [t0 t1 t2 t3][t4 t5 t6 t7][t8 t9 ...        block_size = 4
    b:  [t0 t1 t2 t3][t4 t5 x6 ..                   first_difference = 6
         ^ shared ^   ^ differs                     full_blocks_shared = 6 // 4 = 1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pykv.engine.model.loader import LoadedModel


@dataclass(frozen=True)
class TokenDiff:
    a_text: str
    b_text: str
    a: list[int]  # token ids
    b: list[int]
    a_pieces: list[str]  # each token decoded on its own
    b_pieces: list[str]
    first_difference: int | None  # first index where they differ; None if the sequences are equal
    common_prefix_tokens: int
    block_size: int  # the config's block size when tokenized
    full_blocks_shared: int  # common_prefix_tokens // block_size


def tokenize_pair(loaded: LoadedModel, a: str, b: str, block_size: int) -> TokenDiff:
    ids_a, ids_b = loaded.encode(a), loaded.encode(b)
    common = 0
    while common < min(len(ids_a), len(ids_b)) and ids_a[common] == ids_b[common]:
        common += 1
    first = None if ids_a == ids_b else common
    return TokenDiff(
        a_text=a,
        b_text=b,
        a=ids_a,
        b=ids_b,
        a_pieces=[loaded.decode([t]) for t in ids_a],
        b_pieces=[loaded.decode([t]) for t in ids_b],
        first_difference=first,
        common_prefix_tokens=common,
        block_size=block_size,
        full_blocks_shared=common // block_size,
    )
