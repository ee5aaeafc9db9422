"""The real engine's runner, with a stand-in driver (a few lines of Python run as the worker): a cached trace is
returned without running anything, a machine without the engine gets the install line, a worker past its time
budget or memory cap is stopped with the reason, a failing one is reported in one message, and the driver's
progress reaches the caller in the caller's own thread (where a Streamlit page can draw it)."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from pykv.real_vllm import install, runner

CASE = {"name": "c", "config": {"block_size": 32}, "requests": []}
TRACE = {"side": "stand-in", "case": "c", "steps": []}

FAKE_DRIVER = """
import json, sys, time
src, dst = sys.argv[1], sys.argv[2]
mode = {mode!r}
for message in ("importing vLLM", "c: building the engine", "c: step 25"):
    print(json.dumps({{"progress": message}}), flush=True)
if mode == "sleep":
    time.sleep(60)
if mode == "fail":
    print("Traceback (most recent call last):\\nValueError: no such knob", flush=True)
    sys.exit(3)
cases = json.load(open(src))["data"]
traces = [{{"side": "stand-in", "case": c["name"], "steps": [], "argv": sys.argv[3:]}} for c in cases]
json.dump({{"format": 1, "data": traces}}, open(dst, "w"))
"""


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache folder, and the engine installed in it (the marker and a python)."""
    monkeypatch.setenv("PYKV_VLLM_CACHE", str(tmp_path / "cache"))
    venv = install.venv_dir()
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / install.MARKER).write_text("stand-in\n")
    assert install.is_installed()
    return tmp_path / "cache"


@pytest.fixture
def stand_in(cache, tmp_path, monkeypatch):
    """``stand_in(mode)``: the worker is this interpreter running a stand-in driver (``mode``: ok, sleep, fail)."""

    def use(mode: str = "ok") -> None:
        script = tmp_path / f"driver_{mode}.py"
        script.write_text(FAKE_DRIVER.format(mode=mode))
        monkeypatch.setattr(runner, "DRIVER", script)
        monkeypatch.setattr(install, "venv_python", lambda: Path(sys.executable))

    return use


def test_a_cached_trace_is_returned_without_running_the_engine(cache, monkeypatch):
    runner.traces_dir().mkdir(parents=True)
    key = runner.cache_key([CASE], detail=True)
    (runner.traces_dir() / f"{key}.json").write_text(json.dumps({"format": 1, "data": [TRACE]}))
    monkeypatch.setattr(runner, "_run_worker", lambda *a, **k: pytest.fail("ran the engine for a cached trace"))
    assert runner.cached([CASE], detail=True) == [TRACE]
    assert runner.run_cases([CASE], "model", detail=True) == [TRACE]
    assert runner.cached([CASE], detail=False) is None  # detail is part of the key
    assert runner.cached([CASE | {"name": "other"}], detail=True) is None


def test_without_the_engine_the_message_is_the_install_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PYKV_VLLM_CACHE", str(tmp_path))
    assert not install.is_installed()
    with pytest.raises(runner.RealEngineUnavailable) as e:
        runner.run_cases([CASE], "model")
    assert str(e.value) == install.missing_line() and "`python -m pykv vllm install`" in str(e.value)


def test_a_run_reports_progress_in_the_callers_thread_and_is_cached(stand_in):
    stand_in("ok")
    heard: list[tuple[str, bool]] = []
    traces = runner.run_cases(
        [CASE],
        "MODEL",
        detail=True,
        progress=lambda m: heard.append((m, threading.current_thread() is threading.main_thread())),
    )
    assert traces == [{"side": "stand-in", "case": "c", "steps": [], "argv": ["--model-dir", "MODEL", "--detail"]}]
    assert heard == [("importing vLLM", True), ("c: building the engine", True), ("c: step 25", True)]
    assert runner.cached([CASE], detail=True) == traces


def test_a_worker_past_its_time_budget_is_stopped(stand_in):
    stand_in("sleep")
    started = time.monotonic()
    with pytest.raises(runner.RealEngineUnavailable, match=r"stopped: it ran past its time budget \(1 s\)"):
        runner.run_cases([CASE], "model", limits=runner.RunLimits(timeout_s=1.0))
    assert time.monotonic() - started < 20
    assert runner.cached([CASE], detail=False) is None  # nothing kept from a stopped run


def test_a_worker_past_its_memory_cap_is_stopped(stand_in):
    if not Path("/proc/self/status").exists():
        pytest.skip("the memory cap reads /proc (Linux)")
    stand_in("sleep")
    with pytest.raises(runner.RealEngineUnavailable, match="used more than 0.001 GiB of memory"):
        runner.run_cases([CASE], "model", limits=runner.RunLimits(timeout_s=30.0, memory_gib=0.001))


def test_a_failing_driver_is_one_error_with_its_last_lines(stand_in):
    stand_in("fail")
    with pytest.raises(runner.RealEngineUnavailable) as e:
        runner.run_cases([CASE], "model")
    first, *rest = str(e.value).splitlines()
    assert first == "The real engine's driver failed (exit 3):" and "ValueError: no such knob" in rest


def test_progress_share_grows_through_a_run():
    said = ["importing vLLM", "p: building the engine", "p: step 25", "p: step 50", "p: step 75"]
    shares = [runner.progress_share(m, expected_steps=80) for m in said]
    assert shares == sorted(shares) and 0 < shares[0] < shares[-1] < 1
    assert runner.progress_share("p: step 500") < 1 and runner.progress_share("something else") == 0.0
