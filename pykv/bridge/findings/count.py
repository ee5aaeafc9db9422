"""How many preemptions what was read can show, and the one line that says so (CLI, page, review pack).

Three states: "counted" (a count, a floor: V0's warnings, vllm:num_preemptions_total, the per-request histogram's
sum), "not counted" (what was read cannot count them: a V1 log alone), "not visible" (the release cannot show them:
before 0.4.3 vLLM has neither the warning, core/scheduler.py `_preempt`, nor the counter, engine/metrics.py; both
arrive in 0.4.3). A counter read once is a floor since start-up; read twice, its rise is the window's count.
"""

from __future__ import annotations

from pykv.bridge.base.release_guess import ReleaseGuess
from pykv.bridge.findings.evidence import Evidence

FIRST_VISIBLE = "0.4.3"  # vllm/core/scheduler.py warning + vllm/engine/metrics.py vllm:num_preemptions_total
COUNTER = "vllm:num_preemptions_total"
HISTOGRAM_SUM = "vllm:request_num_preemptions_sum"
UNCOUNTED = "not counted (a V1 log has no count: give /metrics, vllm:num_preemptions_total)"
UNCOUNTED_OTHER = "not counted (nothing read counts them: give the whole log or /metrics, vllm:num_preemptions_total)"
NOT_VISIBLE = (
    "not visible in this release: vLLM before 0.4.3 prints no preemption warning and has no preemption counter "
    "(upgrade to 0.4.3 or later: it warns on every 50th preemption and counts them on /metrics)"
)


def release_shows_preemptions(release: ReleaseGuess) -> bool:
    """False only when the whole range is before 0.4.3 (a straddling range may show them)."""
    return release.engine == "v1" or release.at_least(FIRST_VISIBLE) is not False


def countable(release: ReleaseGuess, stats_count: bool, metric_names: set[str] | None) -> tuple[bool, bool]:
    """(counted, visible): whether what was read counts preemptions, and whether this release can show them.
    ``stats_count``: a stats line carried "Preemptions: N" (a patched or later build)."""
    names = metric_names or set()
    if COUNTER in names or HISTOGRAM_SUM in names:
        return True, True
    if not release_shows_preemptions(release):
        return False, False
    return release.engine == "v0" or stats_count, True


def state(ev: Evidence) -> str:
    return "counted" if ev.preemptions_counted else "not counted" if ev.preemptions_visible else "not visible"


def preemption_text(ev: Evidence) -> str:
    """'at least 4,821 since start-up (vllm:num_preemptions_total, read once ...)' and the like."""
    if not ev.preemptions_visible:
        return NOT_VISIBLE
    if not ev.preemptions_counted:
        return UNCOUNTED if ev.release.engine == "v1" else UNCOUNTED_OTHER
    window = ev.window_preemptions()
    since = ev.since_start
    finished = ev.finished_since_start
    floor = ev.since_start_floor()
    parts = []
    if floor is not None and floor >= window:
        source = COUNTER if since is not None and since >= floor else f"the sum of {HISTOGRAM_SUM[:-4]}"
        read = "read once: a rate needs two readings" if ev.metric_readings <= 1 else "its last reading"
        head = f"at least {floor:,} since start-up ({source}, {read})"
        if ev.metric_readings > 1:
            where = "over the scrapes read" if ev.sample_unit == "scrape" else "in what was read"
            parts.append(f"{window:,} {where}")
        if since is not None and finished is not None and since >= floor:
            parts.append(f"finished requests account for {finished:,} ({HISTOGRAM_SUM[:-4]}'s sum)")
        return head + ("; " + "; ".join(parts) if parts else "")
    if ev.warnings:
        return f"at least {window:,} (V0's warning, total_num_cumulative_preemption: it prints every 50th)"
    if ev.release.engine == "v0" and not window and not ev.startup:
        return (
            "no warning in what was read (V0 warns on the 1st, 51st, ... preemption: a stretch of log without its "
            "start-up can hide up to 49)"
        )
    return f"at least {window:,}"
