"""Where vLLM's own source of a release can be read, for the tests that check a cited line against it: the wheel a
developer unpacked into /tmp/vllm_src/<release> (ARCHITECTURE.md), else the oracle's venv of that release
(oracle/build_venvs.py installs the same wheel), which CI always builds. Without either, a test skips; under
PYKV_ORACLE_REQUIRED=1 (CI) it fails instead, so a citation is never left unchecked there."""

from __future__ import annotations

import os
from pathlib import Path

UNPACKED = Path("/tmp/vllm_src")


def vllm_source(release: str) -> Path | None:
    """The folder that holds ``vllm/`` of ``release`` (e.g. "0.33.0"), or None where neither copy is here."""
    unpacked = UNPACKED / release
    if (unpacked / "vllm").is_dir():
        return unpacked
    from oracle import build_venvs

    if release in build_venvs.RELEASES and build_venvs.is_ready(release):
        for site in sorted((build_venvs.venv_dir(release) / "lib").glob("python3*/site-packages")):
            if (site / "vllm").is_dir():
                return site
    return None


def require_vllm_source(release: str) -> Path:
    """``vllm_source(release)``, or a skip (a failure where PYKV_ORACLE_REQUIRED=1) naming how to get it."""
    import pytest

    found = vllm_source(release)
    if found is None:
        message = (
            f"vLLM {release}'s source is neither unpacked in {UNPACKED / release} nor in the oracle's venv "
            "(python oracle/build_venvs.py)"
        )
        if os.environ.get("PYKV_ORACLE_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found
