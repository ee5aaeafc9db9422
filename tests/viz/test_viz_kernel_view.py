"""The kernel view's figure, a pure function of a Snapshot and a KernelWalk (no Streamlit, no kernels)."""

from __future__ import annotations

from pykv import SamplingParams
from pykv.viz.kernel_view import KernelWalk, Tile, kernel_walk_figure


def test_walk_numbers_the_blocks_in_order_and_draws_tiles_prefix_and_diagonal(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=16)
    rid = engine.add_request(list(range(1, 12)), SamplingParams(max_tokens=2))
    report = engine.step()
    snap = engine.snapshot(report)
    table = next(r.block_table for r in snap.requests if r.request_id == rid)
    walk = KernelWalk(
        title="prefill · req 0 · KV head 0",
        request_id=rid,
        blocks=tuple(table),
        block_size=4,
        key_start=0,
        key_stop=11,
        causal_from=5,
        tiles=(Tile(0, 8, 8), Tile(8, 11, 8)),
    )
    fig = kernel_walk_figure(snap, walk)
    grid = fig.data[0]
    numbered = {(x, y): t for x, y, t in zip(grid.x, grid.y, grid.text) if t}
    cols = int(max(grid.x)) + 1
    assert numbered == {(b % cols, b // cols): str(i + 1) for i, b in enumerate(table)}
    assert "3 block(s) read" in fig.layout.title.text
    labels = [d.text[0] for d in fig.data[1:]]
    assert [f"b{b}" for b in table] == [t for t in labels if t.startswith("b")]
    assert "tile 0..7" in labels and "tile 8..10 + masked" in labels
    fills = {s.fillcolor for s in fig.layout.shapes if s.xref == "x2" and s.type == "rect"}
    assert {"#56B4E9", "#E69F00"} <= fills  # the cached prefix and the causal diagonal
    strip = [s for s in fig.layout.shapes if s.xref == "x2" and s.type == "rect" and s.line.dash != "dot"]
    assert all(s.layer == "below" for s in strip)  # the "b3" labels are drawn over their bars, not hidden
    assert fig.layout.margin.b >= 40  # the key positions' tick labels and title below them are not clipped


def test_store_walk_has_no_key_strip(make_engine):
    engine = make_engine(block_size=4, num_gpu_blocks=16)
    engine.add_request(list(range(1, 6)), SamplingParams(max_tokens=2))
    snap = engine.snapshot(engine.step())
    walk = KernelWalk("store · tokens 0..4 · all KV heads", None, (3, 1), 4, 0, 0, None, (), writes=True)
    fig = kernel_walk_figure(snap, walk)
    assert "2 block(s) written" in fig.layout.title.text and "xaxis2" not in fig.layout.to_plotly_json()
