"""What the diagnosis read of the server's settings and capacity, each "not read" where the input did not say it:
a wrong parse (a 0.85 read as 0.9, a model mistaken) is spotted here, before any advice built on it is trusted."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pykv.bridge import Diagnosis

NOT_READ = "not read"


def config_rows(d: Diagnosis) -> list[tuple[str, str]]:
    """(setting, value as read) in the server's own flags; pure, for the page and the tests."""
    c, first = d.config, (d.startup[0] if d.startup else None)
    block_size = (first.block_size if first else None) or c.block_size
    return [
        ("--model", _text(getattr(c, "model", None))),
        ("--max-num-seqs", _int(c.max_num_seqs)),
        ("--gpu-memory-utilization", NOT_READ if c.gpu_memory_utilization is None else f"{c.gpu_memory_utilization:g}"),
        ("--swap-space", NOT_READ if c.swap_space_gib is None else f"{c.swap_space_gib:g} GiB"),
        ("--enable-prefix-caching", _flag(c.enable_prefix_caching)),
        ("--enable-chunked-prefill", _flag(c.enable_chunked_prefill)),
        ("--block-size", _int(block_size)),
        ("--max-model-len", _int(c.max_model_len)),
        ("--tensor-parallel-size", _int(c.tensor_parallel_size)),
        ("GPU blocks (# GPU blocks at start-up)", _int(first.num_gpu_blocks if first else None)),
        ("KV cache size (tokens)", _int(first.kv_cache_tokens if first else None)),
    ]


def render(d: Diagnosis) -> None:
    st.markdown("**The settings read** (check them: every piece of advice below is built on them)")
    rows = config_rows(d)
    st.dataframe(
        pd.DataFrame(rows, columns=["setting", "as read"]),
        hide_index=True,
        key="server_config_read",
        height=35 * (len(rows) + 1) + 3,  # every row shown: a hidden one is a setting nobody checks
    )


def _text(value: str | None) -> str:
    return NOT_READ if not value else value


def _int(value: int | None) -> str:
    return NOT_READ if value is None else f"{value:,}"


def _flag(value: bool | None) -> str:
    return NOT_READ if value is None else ("on" if value else "off")
