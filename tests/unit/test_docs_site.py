"""The documentation site: ``mkdocs build --strict`` passes (no broken link, anchor or
API reference; every page in the navigation), the API reference lists every public name,
and the environment page lists every ``PYSYCL_*`` variable the package reads. The
API reference is made at build time (``docs/hooks/api_reference.py``)."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _have_mkdocs() -> bool:
    return all(importlib.util.find_spec(m) is not None
               for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers"))


@pytest.mark.skipif(not _have_mkdocs(), reason="mkdocs, mkdocs-material and mkdocstrings "
                    "are not installed (pip install -e '.[docs]')")
def test_site_builds_strict(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    import pysycl
    assert [n for n in pysycl.__all__ if f"<code>sycl.{n}</code>" not in api] == []
    assert "parallel_for" in api and "copy_to_host" in api      # members are documented


def _api_hook():
    spec = importlib.util.spec_from_file_location(
        "api_reference_hook", ROOT / "docs" / "hooks" / "api_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_a_reference_entry():
    import pysycl
    hook = _api_hook()
    page = hook.render()
    missing = [n for n in pysycl.__all__ if f"### `sycl.{n}`" not in page]
    assert missing == []
    # (A name no group lists is under "More names"; each points at its definition.)
    assert all(hook.where(n) for n in pysycl.__all__)


def test_every_environment_variable_is_documented():
    read = set()
    for path in (ROOT / "src" / "pysycl").rglob("*.py"):
        read |= set(re.findall(r"[\"'](PYSYCL_[A-Z0-9_]+)[\"']", path.read_text(encoding="utf-8")))
    page = (ROOT / "docs" / "guide" / "environment.md").read_text(encoding="utf-8")
    assert read, "no PYSYCL_ variable found: the scan is broken"
    assert sorted(v for v in read if f"`{v}`" not in page) == []


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    assert sorted(p for p in pages if f" {p}" not in nav) == []
