"""What a review pack keeps of a run while it runs: what the pack draws, not every step's copy of every request.

A Snapshot holds the whole device pool (one view per block) and every request's token ids and text so far, so a
history of whole snapshots grows with steps x (blocks + requests x output length): 250 requests of 3,000 tokens over
3,000 steps came to 8.65 GiB and died. The pack draws whole snapshots at a few steps only (the block grids at the
first GRID_PREEMPTIONS steps that preempted, each beside the step before it, and at the last step; step 0, whose
pools say whether there is a CPU pool; the last snapshot's requests, bill and JSON); at every other step it reads the
queues, the step's report, the metrics and each request's counts (``timeline``, ``engine_times``,
``request_times``, the log lines). ``PackHistory`` slims each step to that once it knows the step is not drawn in
full::

    step:      0   1   2   3   4   5   6   ...   k-1   k (head)
    kept:     [F] [s] [s] [F] [F] [s] [s]  ...   [F]   [F]     F: whole, s: slim (blocks, preemption records,
                           ^   ^ a step that preempted, and the one before it      token ids and text dropped)

A step is decided once the step after it exists (it may be the one before a preempting step); the last two stay
whole until the run ends. A slim request view equal to the one the step before kept is that same object, so a
finished or waiting request costs one pointer a step.
"""

from __future__ import annotations

from dataclasses import replace

from pykv.border.snapshot import RequestView, Snapshot

GRID_PREEMPTIONS = 4  # block grids drawn at the first this-many steps that preempted (review_pack.run)
WHOLE_KEPT = 2 * GRID_PREEMPTIONS + 3  # whole snapshots kept at most: each pick and the step before it, 0, the last 2

# What the history holds, measured with tracemalloc (CPU, Python 3.11): a BlockView ~385 B, a slim RequestView
# ~390 B (a request unchanged since the step before costs a pointer), an output token in a whole snapshot ~44 B (its
# id in a list, its text). A step's report adds about a chunk per running request (~150 B).
BLOCK_VIEW_BYTES, TOKEN_BYTES, REQUEST_VIEW_BYTES, REQUEST_STEP_BYTES = 400, 45, 400, 550


def history_estimate(requests: int, steps: int, blocks: int, output_tokens: int) -> int:
    """Bytes a pack's history may come to (beside the engine and its KV pools), known before the run: WHOLE_KEPT
    whole snapshots of ``blocks`` block views and ``output_tokens`` tokens (every request's max_tokens x n), and a
    slim view of every request at every step."""
    whole = blocks * BLOCK_VIEW_BYTES + output_tokens * TOKEN_BYTES + requests * REQUEST_VIEW_BYTES
    return WHOLE_KEPT * whole + requests * steps * REQUEST_STEP_BYTES


def preempted(snapshot: Snapshot) -> bool:
    return bool(snapshot.report and snapshot.report.preempted)


class PackHistory:
    """Slims ``snapshots`` (a Lab's list, grown by one step at a time) in place; ``observe()`` after each step."""

    def __init__(self, snapshots: list[Snapshot], grid_preemptions: int = GRID_PREEMPTIONS) -> None:
        self.snapshots = snapshots
        self.grid_preemptions = grid_preemptions
        self.picks: list[int] = []  # the first steps that preempted (drawn in full, with the step before each)
        self.decided = 0  # snapshots[:decided] are final (whole or slim)
        self.scanned = 0  # snapshots[:scanned] were looked at for preemptions
        self._last_views: dict[str, RequestView] = {}  # request id -> its slim view at the last slimmed step

    def observe(self) -> None:
        """Take note of the steps added since the last call, and slim every step now known not to be drawn."""
        snaps = self.snapshots
        for k in range(self.scanned, len(snaps)):
            if len(self.picks) < self.grid_preemptions and preempted(snaps[k]):
                self.picks.append(k)
        self.scanned = len(snaps)
        while self.decided < len(snaps) - 2:  # the last two stay whole: the head and the one before it
            k = self.decided
            if k != 0 and k not in self.picks and k + 1 not in self.picks:
                snaps[k] = self.slim(snaps[k])
            self.decided += 1

    def slim(self, snapshot: Snapshot) -> Snapshot:
        views = []
        for r in snapshot.requests:
            view = replace(r, output_token_ids=[], text="", block_table=[])
            last = self._last_views.get(r.request_id)
            if last == view:
                view = last
            else:
                self._last_views[r.request_id] = view
            views.append(view)
        return replace(snapshot, blocks=[], preemptions=[], requests=views)
