"""Fixtures shared by the reliability tests."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng():
    """Random data, seeded per test so a failure reproduces."""
    return np.random.default_rng(20261125)
