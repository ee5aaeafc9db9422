"""Run cases on both sides: pykv in this process, each vLLM release's driver in a subprocess of its own venv
(one subprocess per release for the whole batch: importing vLLM costs 10-40 s, a case well under one)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from oracle import build_venvs, pykv_side
from oracle.cases import PROFILES
from oracle.compare import Comparison, compare
from oracle.trace import Case, Trace, dump_list, load_traces

RELEASE_OF = {p: pykv_side.vllm_profile(p).release for p in PROFILES}  # the release each profile is proved against
DRIVER_OF = {p: "drive_v0.py" if pykv_side.runs_v0_engine(p) else "drive_v1.py" for p in PROFILES}
HERE = Path(__file__).resolve().parent


def missing_venvs(profiles) -> list[str]:
    return [RELEASE_OF[p] for p in sorted(set(profiles)) if not build_venvs.is_ready(RELEASE_OF[p])]


def run_pykv(cases: list[Case]) -> tuple[list[Case], dict[str, Trace]]:
    filled, traces = [], {}
    for case in cases:
        done, trace = pykv_side.run_case(case)
        filled.append(done)
        traces[case.name] = trace
    return filled, traces


def run_vllm(cases: list[Case], timeout: float = 600) -> dict[str, Trace]:
    """Every case through its release's driver, the releases in parallel; case name -> vLLM trace."""
    work = Path(tempfile.mkdtemp(prefix="pykv-oracle-"))
    procs = []
    for profile in sorted({c.config.profile for c in cases}):
        batch = [c for c in cases if c.config.profile == profile]
        src, dst = work / f"cases-{profile}.json", work / f"traces-{profile}.json"
        dump_list(batch, src)
        cmd = [
            str(build_venvs.venv_python(RELEASE_OF[profile])),
            str(HERE / DRIVER_OF[profile]),
            str(src),
            str(dst),
            "--model-dir",
            pykv_side.model_folder(),
        ]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        procs.append(
            (profile, dst, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True))
        )
    traces = {}
    for profile, dst, proc in procs:
        out, _ = proc.communicate(timeout=timeout)
        if proc.returncode != 0 or not dst.exists():
            raise RuntimeError(f"the {RELEASE_OF[profile]} driver failed (exit {proc.returncode}):\n{out[-4000:]}")
        traces.update({t.case: t for t in load_traces(dst)})
    return traces


def run_both(cases: list[Case]) -> dict[str, Comparison]:
    filled, ours = run_pykv(cases)
    theirs = run_vllm(filled)
    return {c.name: compare(ours[c.name], theirs[c.name], c.normalise) for c in filled}


REAL_EXTRAS = ("outputs", "stats_lines", "warnings", "metrics", "build_s", "step_ms", "torch_threads")


def run_real_engine(cases: list[Case], fresh: bool = True) -> dict[str, tuple[Trace, dict]]:
    """Every case through vLLM's real CPU engine (one worker for the batch; ``fresh``: even if its traces are
    cached); case name -> (its trace, the run's extras: each request's tokens, the stats lines, the /metrics
    body, the engine's build and step times, and per step its stats lines and detail). The real engine makes
    its own tokens: none are fed."""
    sent = []
    for case in cases:
        raw_case = case.to_dict()
        for r in raw_case["requests"]:
            r["output_token_ids"] = []
        sent.append(raw_case)
    out = {}
    for raw in pykv_side.run_real_engine(sent, fresh=fresh):
        extras = {k: raw.pop(k, None) for k in REAL_EXTRAS}
        extras["steps"] = [{"log": step.pop("log", []), "detail": step.pop("detail", None)} for step in raw["steps"]]
        trace = Trace.from_dict(raw)
        out[trace.case] = (trace, extras)
    return out
