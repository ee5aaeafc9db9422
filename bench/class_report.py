"""The figures of a class load test (bench_class.py) and their tables.

A ``Round`` is one class size on a fresh server; a ``StepResult`` one instructor click. Goals (the class
mode issue): <= 50 ms of server CPU per follower per instructor click, p95 propagation <= 2 s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

GOAL_CPU_MS = 50.0
GOAL_P95_S = 2.0


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank); NaN for no values."""
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, -(-len(values) * q // 100) - 1))]


@dataclass
class StepResult:
    k: int  # the step the instructor moved to
    click_s: float  # the instructor's own click: sent -> its run finished
    latencies: list[float]  # per learner that saw it: click sent -> "step k of n" arrived
    failed: list[str]  # learners that did not see it in time (or failed)
    cpu_s: float  # server CPU over the step window, raw
    net_cpu_s: float  # minus the idle polling CPU over the same time
    window_s: float
    client_cpu_s: float  # this bench process's own CPU over the window (the clients)
    rss_mb: float
    stuck: bool = False  # the instructor's own click did not finish (the round stops here)

    def per_learner_ms(self, n: int) -> float:
        return self.net_cpu_s / max(n, 1) * 1e3

    def line(self, n: int) -> str:
        return (
            f"step {self.k:>2}: instructor click {self.click_s:5.2f} s · seen {len(self.latencies):>3}/{n} · "
            f"p50 {pct(self.latencies, 50):5.2f} s p95 {pct(self.latencies, 95):5.2f} s "
            f"max {max(self.latencies, default=float('nan')):5.2f} s · server CPU {self.cpu_s:5.2f} s raw, "
            f"{self.net_cpu_s:5.2f} s net = {self.per_learner_ms(n):5.1f} ms/learner · window "
            f"{self.window_s:4.1f} s · clients' CPU {self.client_cpu_s:4.1f} s · RSS {self.rss_mb:5.0f} MB"
        )


@dataclass
class Round:
    learners: int
    solo: bool = False
    code: str = ""
    rss_before: float = 0.0
    idle_before: float = 0.0  # server cores used with no session open
    join_s: float = 0.0
    joined: int = 0  # learners showing step 1
    polling: int = 0  # learners whose page follows (a run_every timer, or a held long poll)
    rss_joined: float = 0.0
    idle_cores: float = 0.0  # server cores used while the class sits on a step (the learners' polls)
    polls_per_s: float = 0.0
    steps: list[StepResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    polling_end: int = 0  # learners whose page still follows after the last step
    lost: int = 0  # learners that missed at least one step
    polls_sent: int = 0
    left: int = 0  # learners whose page left the class after class_end
    peak_rss: float = 0.0
    rss_after: float = 0.0
    after_s: float = 0.0
    samples: list[tuple[float, float, float]] = field(default_factory=list)  # (t, server cpu s, rss MB)
    server_log: str = ""

    @property
    def latencies(self) -> list[float]:
        return [x for s in self.steps for x in s.latencies]

    @property
    def missed(self) -> int:
        return sum(len(s.failed) for s in self.steps)

    def p95_all(self) -> float:
        """p95 over every learner x step, a learner that never showed a step (or never joined) counting as inf."""
        unseen = self.missed + (self.learners - self.joined) * max(len(self.steps), 1)
        return pct(self.latencies + [float("inf")] * unseen, 95)

    def per_learner_ms(self) -> float:
        """Net server CPU per instructor click per learner that follows (joined)."""
        done = [s for s in self.steps if not s.stuck]
        return sum(s.per_learner_ms(self.joined) for s in done) / max(len(done), 1)


def report(r: Round) -> str:
    mode = "solo players (no class UI)" if r.solo else f"class {r.code}"
    lat = r.latencies
    done = [s for s in r.steps if not s.stuck]
    lines = [
        f"{r.learners} learners + 1 instructor, {mode}, {len(r.steps)} instructor clicks",
        f"  joined: {r.joined}/{r.learners} showed step 1 in {r.join_s:.1f} s; {r.polling} follow "
        f"({r.polls_per_s:.1f} polls/s in all)",
        f"  server idle: {r.idle_before * 100:.1f} % of a core with no session; {r.idle_cores * 100:.1f} % with the "
        f"class open ({r.idle_cores / max(r.joined, 1) * 1e3:.1f} ms of CPU per joined learner per second)",
        f"  propagation (click -> learner shows the step), all steps: p50 {pct(lat, 50):.2f} s, "
        f"p95 {r.p95_all():.2f} s (missed steps count as inf), max {max(lat, default=float('nan')):.2f} s; "
        f"{r.missed} learner-steps missed "
        f"(goal p95 <= {GOAL_P95_S} s)",
        f"  server CPU per instructor click: {mean(s.cpu_s for s in done):.2f} s raw, "
        f"{mean(s.net_cpu_s for s in done):.2f} s net of idle polling = "
        f"{r.per_learner_ms():.1f} ms per learner (goal <= {GOAL_CPU_MS:.0f} ms)",
        f"  class_end: {r.left}/{r.learners} learner pages left the class within 3 s" if not r.solo else "",
        f"  after the last step: {r.polling_end}/{r.learners} learners still follow; {r.lost} missed "
        f"at least one step; {r.polls_sent} polls sent in all",
        f"  RSS: {r.rss_before:.0f} MB before, {r.rss_joined:.0f} MB with the class joined, peak {r.peak_rss:.0f} MB, "
        f"{r.rss_after:.0f} MB {r.after_s:.0f} s after closing every session ({r.rss_after - r.rss_before:+.0f} MB)",
        "  per step:",
        *("    " + s.line(r.joined) for s in r.steps),
        f"  server CPU / RSS over time (every ~5 s): {timeline(r.samples)}",
        f"  errors: {len(r.errors)}" + "".join(f"\n    {e[:300]}" for e in r.errors[:10]),
    ]
    lines += [f"    {f[:300]}" for s in r.steps for f in s.failed[:3]]
    lines = [line for line in lines if line]
    problems = [line for line in r.server_log.splitlines() if re.search(r"Error|Exception|Traceback|WARN", line)]
    if problems:  # the engine's own vLLM-style log lines (preemption warnings) are not problems
        lines.append("  server stderr, problems (last 5):\n    " + "\n    ".join(p[:300] for p in problems[-5:]))
    return "\n".join(lines)


def timeline(samples: list[tuple[float, float, float]], every_s: float = 5.0) -> str:
    out, last = [], None
    for t, cpu, rss in samples:
        if last is None or t - last[0] >= every_s:
            if last is not None:
                out.append(f"{(cpu - last[1]) / (t - last[0]) * 100:.0f}%/{rss:.0f}MB")
            last = (t, cpu, rss)
    return " ".join(out)


def summary_table(rounds: list[Round]) -> str:
    head = (
        f"{'learners':>8} {'joined':>6} {'p50':>6} {'p95':>6} {'max':>6} {'missed':>6} {'ms/learner':>10} "
        f"{'raw CPU/click':>13} {'idle cores':>10} {'peak RSS':>9} {'errors':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in rounds:
        lat = r.latencies
        raw = mean(s.cpu_s for s in r.steps if not s.stuck)
        worst = max(lat, default=float("nan"))
        lines.append(
            f"{r.learners:>8} {r.joined:>6} {pct(lat, 50):>5.2f}s {r.p95_all():>5.2f}s {worst:>5.2f}s "
            f"{r.missed:>6} {r.per_learner_ms():>8.1f}ms {raw:>12.2f}s {r.idle_cores:>10.2f} "
            f"{r.peak_rss:>7.0f}MB {len(r.errors):>6}"
        )
    over = [r.learners for r in rounds if not r.p95_all() <= GOAL_P95_S]
    lines.append(
        f"p95 propagation passes {GOAL_P95_S} s at: " + (f"{over[0]} learners" if over else "none of these class sizes")
    )
    return "\n".join(lines)
