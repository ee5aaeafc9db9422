"""Issue 50 ("A shared server, round 3"), the CLI's holes: hostile numbers (5), outputs onto special files (9), writes
that were not atomic (10), terminal escapes (12), flags ignored in silence (14), unclear messages (16). Each case is
one `error:` line and exit 2 for bad input (or it works), never a traceback, a hang or a replaced node."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pykv.cli.main import main

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "pykv" / "bridge" / "examples"
V0_STORM = str(EXAMPLES / "v0-preemption-storm.log")
STATS = (
    "INFO 06-16 21:24:{second:02d} metrics.py:341] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: "
    "{gen} tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 50.0%, CPU KV "
    "cache usage: 0.0%.\n"
)


def stats(second: int = 15, running: str = "3", gen: str = "2.0") -> str:
    return STATS.format(second=second, running=running, gen=gen)


def one_error(capsys, *words: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    for word in words:
        assert word in err[0], err[0]
    return err[0]


def strict_json(text: str) -> dict:
    def refuse(name):
        raise AssertionError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@contextlib.contextmanager
def no_hang(seconds: int = 20):
    """Fails the test (instead of hanging the suite) when the body blocks, on a FIFO say."""

    def alarm(signum, frame):
        raise AssertionError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---- 5: hostile numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        stats(running="9" * 400) + stats(second=25),  # OverflowError before: exit 1
        stats(gen="9" * 400) + stats(second=25),  # "Infinity" in --json before: not JSON
        'vllm:cache_config_info{num_gpu_blocks="inf",block_size="16"} 1.0\nvllm:num_requests_running 3.0\n',
        "INFO 06-16 21:24:10 gpu_executor.py:122] # GPU blocks: " + "9" * 4290 + ", # CPU blocks: 9\n" + stats(),
    ],
    ids=["400-digit running", "400-digit throughput", "num_gpu_blocks inf", "4290-digit blocks"],
)
def test_hostile_numbers_give_strict_json_and_text(text, tmp_path, capsys):
    path = tmp_path / "server.log"
    path.write_text(text)
    assert main(["diagnose", str(path), "--json"]) == 0
    strict_json(capsys.readouterr().out)
    assert main(["diagnose", str(path)]) == 0
    assert "not read" in capsys.readouterr().out or "out-of-range" in text or "inf" in text


def test_metric_timestamps_of_1e20_ms_are_one_line(tmp_path, capsys):
    path = tmp_path / "metrics.txt"
    path.write_text("vllm:num_requests_running 3.0 100000000000000000000\n")
    assert main(["diagnose", str(path), "--json"]) == 2  # OSError (errno 75) before: exit 1
    one_error(capsys, "usable time")


def test_a_v0_log_with_a_huge_cpu_pool_still_replays(tmp_path, capsys):
    log = tmp_path / "v0.log"
    log.write_text("INFO 06-16 21:24:10 gpu_executor.py:122] # GPU blocks: 10, # CPU blocks: 1480000\n" + stats())
    out = tmp_path / "replay.json"
    assert main(["diagnose", str(log), "--replay-out", str(out)]) == 0  # before: exit 2, "--num-cpu-blocks: ..."
    assert "capped" in capsys.readouterr().out and json.loads(out.read_text())["requests"]


# ---- 9: outputs onto special files --------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--out", "--replay-out", "--save-baseline"])
def test_an_output_onto_a_fifo_is_refused_and_the_fifo_stays(flag, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with no_hang():
        assert main(["diagnose", V0_STORM, flag, str(fifo)]) == 2
    one_error(capsys, "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_baseline_from_a_fifo_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with no_hang():
        assert main(["diagnose", V0_STORM, "--baseline", str(fifo)]) == 2
    one_error(capsys, "FIFO")


@pytest.mark.parametrize("flag", ["--replay-out", "--save-baseline"])
def test_an_output_onto_a_symlink_is_written_through_it(flag, tmp_path, capsys):
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("old")
    link.symlink_to(real)
    assert main(["diagnose", V0_STORM, flag, str(link)]) == 0
    assert link.is_symlink() and json.loads(real.read_text())  # the link kept, its target written


def test_a_symlink_to_a_fifo_or_a_device_is_refused(tmp_path, capsys):
    from pykv.border.files import NotAFile, regular_target, write_atomic

    fifo, link = tmp_path / "pipe", tmp_path / "link.html"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    with no_hang():
        assert main(["diagnose", V0_STORM, "--out", str(link)]) == 2
        one_error(capsys, "FIFO")
        with pytest.raises(NotAFile, match="FIFO"):
            write_atomic(link, b"x")
    assert stat.S_ISFIFO(os.stat(link).st_mode) and link.is_symlink()
    with pytest.raises(NotAFile, match="device"):
        regular_target("/dev/null")  # as root, --out /dev/null would have replaced /dev/null with a file


# ---- 10: atomic outputs -------------------------------------------------------------------------------------------


def _under_file_size_limit(argv: list[str], limit: int = 64) -> subprocess.CompletedProcess:
    """``python -m pykv ARGV`` with RLIMIT_FSIZE at ``limit`` bytes (a full disk, as far as the writes go)."""
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        "from pykv.cli.main import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    # No bytecode: under the limit a first import would write a truncated .pyc into the venv ("marshal data too
    # short" for every later process that imports the module).
    env = os.environ | {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("case", ["--save-baseline", "run --export-workload", "sweep --out"])
def test_a_failed_write_keeps_the_old_file(case, tmp_path, random_llama_path):
    target = tmp_path / ("runs.csv" if "sweep" in case else "out.json")
    target.write_text("the old file\n")
    model = ["--model", str(random_llama_path)]
    argv = {
        "--save-baseline": ["diagnose", V0_STORM, "--save-baseline", str(target)],
        "run --export-workload": ["run", *model, "--num-requests", "2", "--max-tokens", "2", "--export-workload"]
        + [str(target)],
        "sweep --out": ["sweep", *model, "--pool-sizes", "64", "--modes", "recompute", "--num-requests", "1"]
        + ["--max-tokens", "2", "--out", str(target)],
    }[case]
    done = _under_file_size_limit(argv)
    assert target.read_text() == "the old file\n", done.stderr  # before: 0 bytes, or the new file's first 64
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left behind
    assert done.returncode == 1, done.stderr
    err = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert err and "File too large" in err[-1] and "old file" in err[-1], done.stderr
    assert "Traceback" not in done.stderr


# ---- 12: terminal escapes ----------------------------------------------------------------------------------------

OSC8 = "\x1b]8;;https://evil.invalid\x07click\x1b]8;;\x07"
TITLE = "\x1b]0;pwned\x07"


def test_request_ids_from_a_log_do_not_reach_the_terminal_raw(tmp_path, capsys):
    warning = (
        "WARNING 06-16 21:24:{s} scheduler.py:1057] Sequence group {rid} is preempted by PreemptionMode.RECOMPUTE "
        "mode because there is not enough KV cache space. total_num_cumulative_preemption={n}\n"
    )
    log = tmp_path / "v0.log"
    log.write_text(
        "INFO 06-16 21:24:10 gpu_executor.py:122] # GPU blocks: 100, # CPU blocks: 400\n"
        + stats()
        + warning.format(s=16, rid=OSC8, n=1)
        + warning.format(s=17, rid=TITLE, n=51)
        + stats(second=25)
    )
    assert main(["diagnose", str(log)]) == 0
    out = capsys.readouterr().out
    assert "evil.invalid" in out and "pwned" in out  # shown, escaped
    assert "\x1b" not in out and "\x07" not in out and "\\x1b" in out


def test_error_lines_are_terminal_safe(capsys):
    from pykv.cli.main import _report

    _report(f"a server said {TITLE}")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err


# ---- 14: flags ignored in silence --------------------------------------------------------------------------------


def test_json_with_replay_out_what_if_and_out_writes_them_all(tmp_path, monkeypatch, capsys):
    from pykv.lab import what_if
    from pykv.lab.what_if import ReplayOutcome

    outcome = ReplayOutcome(10, True, 2, 30, 0.1, 1.0, 100.0, "modelled H100-SXM + llama-3.1-8b")
    monkeypatch.setattr(what_if, "what_if", lambda plan, fixes, loaded, target: [outcome] * (len(fixes) + 1))
    replay, page = tmp_path / "replay.json", tmp_path / "report.html"
    argv = ["diagnose", V0_STORM, "--json", "--replay-out", str(replay), "--what-if", "--out", str(page)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    body = strict_json(captured.out)  # stdout is the JSON alone
    assert body["replay"]["workload"] == str(replay) and json.loads(replay.read_text())["requests"]
    assert body["what_if"]["outcomes"][0]["preemptions"] == 2 and len(body["what_if"]["fixes"]) >= 1
    assert body["review_pack"] == str(page) and page.read_bytes().startswith(b"<!")
    assert "replay in the lab" in captured.err


def test_estimate_decode_0_is_refused(capsys):
    assert main(["estimate", "--decode", "0"]) == 2  # it computed a batch of 1
    one_error(capsys, "--decode 0 is out of range")


# ---- 16: unclear messages ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, words",
    [
        ("{tmp}/missing.log", "no such file"),
        ("{tmp}", "is a folder"),
        ("/dev/zero", "is a device"),
    ],
)
def test_diagnose_names_what_is_wrong_with_a_path(path, words, tmp_path, capsys):
    with no_hang():
        assert main(["diagnose", path.format(tmp=tmp_path)]) == 2
    message = one_error(capsys, words)
    assert "found no vLLM stats line" not in message


def test_estimate_pool_gib_1e308_says_the_bound(capsys):
    assert main(["estimate", "--pool-gib", "1e308"]) == 2
    message = one_error(capsys, "at most 1,000,000")
    assert "NaN" not in message
