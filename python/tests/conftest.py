"""Shared fixtures of the package's tests (docs/python.md, "Tests").

`TABULA_BIN` names the `tabula` binary the tests compare with (python/tests/pytest.rs sets
it); `TABULA_REPO` the repository root (its tests/data). Without TABULA_BIN the tests that need
the binary are skipped, loudly.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(os.environ.get("TABULA_REPO", Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def tabula_bin():
    path = os.environ.get("TABULA_BIN")
    if not path:
        pytest.skip("TABULA_BIN is not set: no `tabula` binary to compare with")
    return path


def run_cli(binary, *args, ok=True):
    """Runs the binary; returns (stdout, stderr), asserting the exit status."""
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if ok:
        assert out.returncode == 0, (args, out.stderr)
    else:
        assert out.returncode != 0, (args, out.stdout)
    return out.stdout, out.stderr


def cli_json(binary, *args):
    stdout, _ = run_cli(binary, *args, "--json")
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        return json.loads(stdout.strip().splitlines()[-1])
