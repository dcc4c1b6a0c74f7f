"""Every Python example of the contributor docs runs, each in a fresh namespace."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "contributing"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _examples():
    for path in sorted(DOCS.glob("*.md")):
        for i, code in enumerate(_BLOCK.findall(path.read_text())):
            yield pytest.param(path, code, id=f"{path.name}-{i}")


@pytest.mark.parametrize("path, code", list(_examples()))
def test_example_runs(path, code):
    exec(compile(code, str(path), "exec"), {"__name__": f"docs_{path.stem}"})


def test_there_are_examples():
    assert any(True for _ in _examples())
