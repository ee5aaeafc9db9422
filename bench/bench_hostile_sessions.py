"""Ten hostile links at once against a real server (issue 12), not run in CI.

Starts `streamlit run app.py` on a loopback port, warms it with one ordinary tab (the shared weights are
loaded once per process and stay), takes a baseline, then opens 10 headless Chromium sessions, each with
a hostile link (pools beyond the sidebar, a long interpreted-Triton replay, a 3000-step replay, bad steps,
a missing device, Markdown injection...), closes them all, and prints the server's RSS and CPU before,
during and after, until both are back near the baseline or the time is up (it always stops by itself).

    python -m bench.bench_hostile_sessions [--model tiny] [--after-s 120]

Needs Playwright (pip) and Debian's Chromium at /usr/bin/chromium (or $PYKV_CHROMIUM). The server reads
.streamlit/config.toml, so closed sessions are dropped after its server.disconnectedSessionTTL.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from testkit.streamlit_server import free_port, start_streamlit, stop, wait_healthy

ROOT = Path(__file__).resolve().parent.parent

CHROMIUM = os.environ.get("PYKV_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
HOSTILE = [
    "playground?num_gpu_blocks=100000000",
    "playground?num_cpu_blocks=30000&max_num_seqs=300&max_num_batched_tokens=10000",
    "playground?attention_backend=triton&step=40",
    "playground?preset=storm&step=3000&num_gpu_blocks=512&num_cpu_blocks=4096&preemption_mode=swap",
    "playground?preset=long_context&step=2999&num_gpu_blocks=16",
    "playground?step=%C2%B2",
    "playground?step=" + "9" * 5000,
    "playground?device=cuda",
    "playground?enable_chunked_prefill=false&max_num_batched_tokens=8",
    "playground?preset=%5Bsession%20expired%20%E2%80%94%20log%20in%5D(http://evil)&step=!%5Bx%5D(http://evil/t.png)",
]
TICK = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


class Meter:
    """RSS now and CPU use (in cores) since the previous sample."""

    def __init__(self, pid: int) -> None:
        self.pid, self.t, self.cpu = pid, time.monotonic(), cpu_s(pid)

    def sample(self, label: str) -> tuple[float, float]:
        t, cpu = time.monotonic(), cpu_s(self.pid)
        cores = (cpu - self.cpu) / max(t - self.t, 1e-3)
        self.t, self.cpu = t, cpu
        rss = rss_mb(self.pid)
        print(f"{label:<34} RSS {rss:8.1f} MB   CPU {cores * 100:6.1f} %", flush=True)
        return rss, cores


def open_page(browser, url: str, wait_s: float):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(url, wait_until="domcontentloaded", timeout=30_000)
    if not wait_s:
        return context
    try:  # the page has drawn something of the app (a warning, an error or the step header)
        page.wait_for_selector("[data-testid='stAlert'], [data-testid='stMarkdown']", timeout=wait_s * 1000)
    except Exception:
        pass
    return context


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("PYKV_MODEL") or "tiny")
    parser.add_argument("--during-s", type=float, default=15.0, help="how long the 10 tabs stay open")
    parser.add_argument("--after-s", type=float, default=120.0, help="longest wait for the return to baseline")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_streamlit(args.model, port)  # the browser tests' own launcher and health wait
    try:
        wait_healthy(url, proc, timeout_s=90.0)
        meter = Meter(proc.pid)
        meter.sample("server started")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
            warm = open_page(browser, f"{url}/playground", 60)  # loads the shared weights (kept by design)
            time.sleep(3)
            warm.close()
            time.sleep(5)
            meter.sample("warm-up tab closed")
            time.sleep(5)
            base_rss, base_cpu = meter.sample("baseline")
            start = time.monotonic()
            contexts = [open_page(browser, f"{url}/{link}", 0) for link in HOSTILE]  # closed while still replaying
            print(f"10 hostile tabs open after {time.monotonic() - start:.1f} s", flush=True)
            peak_rss = base_rss
            end = time.monotonic() + args.during_s
            while time.monotonic() < end:
                time.sleep(5)
                peak_rss = max(peak_rss, meter.sample("during (10 tabs open)")[0])
            for context in contexts:
                context.close()
            closed = time.monotonic()
            print("all 10 tabs closed", flush=True)
            rss, cores = base_rss, 0.0
            while time.monotonic() - closed < args.after_s:
                time.sleep(5)
                if time.monotonic() - closed > 15:  # another user's page run: closed tabs' engines are given back then
                    open_page(browser, f"{url}/about", 15).close()
                rss, cores = meter.sample(f"after close +{time.monotonic() - closed:4.0f} s")
                if rss <= base_rss * 1.10 + 30 and cores < 0.10:
                    break
            # A fresh tab: Streamlit expires stored sessions lazily, on the next access to its session store.
            probe = open_page(browser, f"{url}/about", 15)
            probe.close()
            time.sleep(5)
            rss, cores = meter.sample("after a fresh tab (lazy expiry)")
            browser.close()
        print(
            f"\nbaseline {base_rss:.0f} MB, peak {peak_rss:.0f} MB, end {rss:.0f} MB "
            f"({rss - base_rss:+.0f} MB vs baseline); CPU at the end {cores * 100:.1f} % "
            f"(baseline {base_cpu * 100:.1f} %)"
        )
        return 0
    finally:
        stop(proc)


if __name__ == "__main__":
    sys.exit(main())
