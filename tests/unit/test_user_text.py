"""Text users read (package source and docstrings, docs/, README) points only at what
they have: no development notes that ship with neither the package nor the docs."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEV_NOTES = re.compile(r"shared/(design|reference|seeds)|\b(API|ARCHITECTURE|STYLE|"
                       r"KERNEL_LANGUAGE|FORMATS)\.md\b")


def test_no_pointers_to_files_users_do_not_have():
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "src" / "pysycl").rglob("*.py")]
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for path in files
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if DEV_NOTES.search(line)]
    assert hits == [], "\n".join(hits)
