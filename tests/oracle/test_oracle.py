"""The oracle: vLLM's own schedulers (0.6.3.post1, 0.10.2, 0.33.0; CPU only, no model) run beside pykv on the
same cases (oracle/cases.py), compared exactly, step by step (oracle/compare.py).

Needs the venvs of ``python oracle/build_venvs.py``; without them every test skips, unless
``PYKV_ORACLE_REQUIRED=1`` (CI), where they fail.

KNOWN_DIVERGENCES is the one table of cases that differ today because pykv does not yet follow a vLLM rule:
each is an xfail(strict=True), so a fix in pykv turns it into an XPASS failure and the only change is to
remove its entry.
"""

from __future__ import annotations

import os

import pytest

from oracle import cases as oracle_cases
from oracle import harness
from pykv.border.oracle_coverage import CASE_MEANING, ORACLE_RUNS

# rule -> (reason: the vLLM rule pykv lacks, cited by release/file/function; the cases it breaks today)
KNOWN_DIVERGENCES: dict[str, tuple[str, list[str]]] = {}


CASES = oracle_cases.all_cases()  # every case exact: V0's batch order is followed, so nothing is normalised


def _xfail_reason(name: str):
    return next((reason for reason, names in KNOWN_DIVERGENCES.values() if name in names), None)


def _params():
    for case in CASES:
        reason = _xfail_reason(case.name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(case.name, marks=marks, id=case.name)


@pytest.fixture(scope="module")
def comparisons():
    missing = harness.missing_venvs({c.config.profile for c in CASES})
    if missing:
        message = f"the oracle's vLLM venvs are missing ({', '.join(missing)}): run python oracle/build_venvs.py"
        if os.environ.get("PYKV_ORACLE_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return harness.run_both(CASES)


def test_the_about_page_lists_the_cases_ci_runs():
    runs = {profile: [f"{profile}/{name}" for name in names] for profile, (_, names) in ORACLE_RUNS.items()}
    assert runs == {p: [c.name for c in CASES if c.config.profile == p] for p in oracle_cases.PROFILES}
    assert set(CASE_MEANING) == {name for _, names in ORACLE_RUNS.values() for name in names}


def test_known_divergences_name_real_cases():
    names = {c.name for c in CASES}
    for rule, (reason, listed) in KNOWN_DIVERGENCES.items():
        assert reason and set(listed) <= names, f"{rule}: names a case that does not exist"


@pytest.mark.slow  # its setup runs vLLM's schedulers on every case: one to two minutes
@pytest.mark.parametrize("name", list(_params()))
def test_case_matches_vllm(comparisons, name):
    result = comparisons[name]
    assert not result.theirs.error, result.theirs.error
    assert result.matched, result.report()
