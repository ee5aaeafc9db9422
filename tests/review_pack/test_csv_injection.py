"""Issue 50, hole 11: CSV formula injection. A text cell that begins with =, +, -, @ (a request id from a workload
file) is written with a leading apostrophe in every CSV pykv writes: the review pack's, the sweep's (pack, page and
CLI); numbers stay numbers."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

import pykv.review_pack.bundle as bundle
from pykv.border.csv_safe import csv_text
from pykv.border.workload import Workload
from pykv.cli.main import main
from pykv.lab.lab import Lab, lab_config
from pykv.review_pack import build_zip, record_from_lab, run_pack

PAYLOADS = ['=HYPERLINK("https://evil.invalid","x")', "+1+1", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1"]
PYKV = Path(__file__).parents[2] / "pykv"


def cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


def assert_no_formula(text: str, payloads=PAYLOADS) -> None:
    for cell in cells(text):
        assert not cell.startswith(("=", "+", "@", "\t", "\r")), cell
        assert not (cell.startswith("-") and not re.fullmatch(r"-[\d.e+-]+", cell)), cell  # -2.5 is a number
    for payload in payloads:
        assert "'" + payload in cells(text), payload


def test_csv_text_neutralises_text_and_keeps_numbers():
    frame = pd.DataFrame({"request_id": PAYLOADS, "delta": [-1.5, -2, 3, 4, 5, 6], "=name": ["ok"] * 6})
    text = csv_text(frame)
    assert_no_formula(text)
    back = pd.read_csv(io.StringIO(text))
    assert list(back["delta"]) == [-1.5, -2, 3, 4, 5, 6] and list(back.columns)[2] == "'=name"


def fake_export(fig, fmt, **kwargs) -> bytes:
    return b"<svg/>" if fmt == "svg" else b"\x89PNG\r\n\x1a\n"


def test_request_ids_from_a_workload_file_are_neutralised_in_the_run_packs_csvs(
    random_llama, random_llama_path, monkeypatch
):
    workload = Workload(
        name="injection",
        requests=[{"prompt_token_ids": [5, 6, 7, 8], "max_tokens": 3, "request_id": rid} for rid in PAYLOADS[:4]],
    )
    lab = Lab(lab_config(model=str(random_llama_path), num_gpu_blocks=8, block_size=4), random_llama, workload=workload)
    lab.goto(20)
    monkeypatch.setattr(bundle, "export_image", fake_export)
    z = zipfile.ZipFile(io.BytesIO(build_zip(run_pack(record_from_lab(lab)))))
    for name in ("requests.csv", "modelled_requests.csv"):
        assert_no_formula(z.read(name).decode(), PAYLOADS[:4])
    for name in ("preemptions.csv", "modelled_preemptions.csv"):
        assert_no_formula(z.read(name).decode(), [])


def test_the_sweeps_csv_from_the_cli_is_neutralised(tmp_path, monkeypatch, capsys):
    from pykv.lab import sweep

    columns = [  # what the CLI's table and footer read
        "series",
        "vllm_profile",
        "value",
        "preemptions",
        "recomputed_tokens",
        "swapped_bytes",
        "cpu_s",
        "cpu_s_lo",
        "cpu_s_hi",
        "wall_s",
        "wall_s_lo",
        "wall_s_hi",
        "recompute_cpu_s",
        "swap_cpu_s",
        "modelled_pcie_gen5_s",
        "load_1m",
    ]
    runs = pd.DataFrame([[p, "v0.6"] + [-1] * (len(columns) - 2) for p in PAYLOADS], columns=columns)
    monkeypatch.setattr(sweep, "run_sweep", lambda spec, on_progress: sweep.SweepResult(runs, pd.DataFrame()))
    out = tmp_path / "runs.csv"
    assert main(["sweep", "--pool-sizes", "32", "--modes", "recompute", "--out", str(out)]) == 0
    assert_no_formula(out.read_bytes().decode())


def test_the_sweep_packs_csvs_are_neutralised(random_llama, random_llama_path):
    from pykv.review_pack import sweep_pack
    from testkit.review_packs import priced_pool_sweep

    spec, result, estimate = priced_pool_sweep(random_llama, random_llama_path)
    runs = result.runs.assign(mode=(PAYLOADS * len(result.runs))[: len(result.runs)])
    costs = result.preemptions.assign(request_id=(PAYLOADS * len(result.preemptions))[: len(result.preemptions)])
    pack = sweep_pack(spec, replace(result, runs=runs, preemptions=costs), model=random_llama.config, estimate=estimate)
    for name in ("sweep_runs.csv", "sweep_preemptions.csv"):
        for cell in cells(pack.csvs[name]):
            assert not cell.startswith(("=", "+", "@", "\t", "\r")), (name, cell)


def test_every_csv_pykv_writes_goes_through_csv_text():
    """The Sweep page's downloads, the packs, the CLI: no to_csv or csv writer anywhere else."""
    writers = [
        f"{path.relative_to(PYKV)}:{number}"
        for path in PYKV.rglob("*.py")
        if path.name != "csv_safe.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\.to_csv\(|csv\.writer\(|csv\.DictWriter\(", line)
    ]
    assert writers == []


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_sweep_pages_download_is_neutralised(payload):
    """The Sweep page hands st.download_button ``csv_text(result.runs)``: the same function, the same payloads."""
    source = (PYKV / "ui" / "views" / "panels" / "sweep_results.py").read_text()
    assert "csv_text(result.runs)" in source and "csv_text(result.preemptions)" in source
    assert cells(csv_text(pd.DataFrame({"mode": [payload]})))[1] == "'" + payload
