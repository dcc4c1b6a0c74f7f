"""Fixtures shared by the reliability tests. Cases that could kill the process run in a
subprocess (``run_python``), where a crash (a signal, a non-zero exit) is a failure."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest


@pytest.fixture
def rng():
    """Random data, seeded per test so a failure reproduces."""
    return np.random.default_rng(20261125)


def _run(code: str, prelude: str = "", timeout: float = 240) -> str:
    """Run ``prelude`` then ``code`` (each dedented) in a fresh interpreter; its stdout.
    Fails on any non-zero exit."""
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c",
                           textwrap.dedent(prelude) + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, (f"exit {proc.returncode}\n--- stdout\n{proc.stdout}"
                                  f"\n--- stderr\n{proc.stderr}")
    return proc.stdout


@pytest.fixture
def run_python():
    """``run_python(code, prelude="") -> stdout``: in a subprocess; a crash fails the test."""
    return _run
