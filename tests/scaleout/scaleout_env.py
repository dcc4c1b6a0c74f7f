"""The environment of child processes (other ranks, workers) of the scale-out tests."""
from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def child_env(*extra_paths: Path) -> dict:
    """The environment of a child process: this checkout's pysycl first on the path."""
    paths = [str(SRC), *map(str, extra_paths), os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
