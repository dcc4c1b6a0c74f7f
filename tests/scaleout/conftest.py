"""Fixtures of the scale-out tests: subprocesses (other ranks, workers) and random data."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from scaleout_env import child_env


@pytest.fixture
def rng():
    return np.random.default_rng(20261125)


@pytest.fixture
def run_python():
    """``run_python(code) -> stdout`` in a fresh interpreter; a crash or non-zero exit
    fails the test."""
    def run(code: str, timeout: float = 300) -> str:
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code],
                              capture_output=True, text=True, timeout=timeout, env=child_env())
        assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout
    return run
