"""Every ``python`` code block of README.md and docs/ runs.

The blocks of one page run in order as one program (later blocks build on earlier ones,
as a reader does), in a fresh process and an empty working directory. A block fenced as
```` ```python ```` is executed; output-only or shell text uses another fence.

A block that needs a device or a library this machine may lack says so on the line
before its fence, ``<!-- requires: cuda torch -->``: backend names (``cuda``,
``opencl``) need a device of that backend, other words a module that imports. Where
they are missing the block is skipped, so later blocks must not build on it.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"(?:^<!--[ \t]*requires:([^\n>]*)-->[ \t]*\n)?"
                   r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
BACKENDS = {"cuda", "opencl", "native_cpu"}
PRELUDE = f"""
def _requires(*needs):
    import importlib.util
    backends = {sorted(BACKENDS)!r}
    for need in needs:
        if need in backends:
            import pysycl
            if not any(d.backend.name == need for d in pysycl.device.get_devices()):
                return False
        elif importlib.util.find_spec(need) is None:
            return False
    return True
"""


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in found if FENCE.search(p.read_text(encoding="utf-8"))]


def program(page: Path) -> str:
    """The page's blocks as one script; a block with requirements runs under ``if``."""
    parts = [PRELUDE]
    for m in FENCE.finditer(page.read_text(encoding="utf-8")):
        needs, block = (m.group(1) or "").split(), m.group(2)
        if needs:
            body = "".join("    " + line if line.strip() else line
                           for line in block.splitlines(True))
            parts.append(f"if _requires(*{needs!r}):\n{body}    pass\n")
        else:
            parts.append(block)
    return "\n".join(parts)


def test_the_readme_has_examples():
    assert ROOT / "README.md" in pages()


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page, tmp_path):
    script = tmp_path / "page.py"
    script.write_text(program(page), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{page.name} examples failed:\n{done.stderr[-4000:]}"
