"""The wheel built from the checkout is complete: license, typing marker, metadata."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from pysycl.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    # A copy of the checkout, so no build/ left over from earlier builds leaks in.
    src = tmp_path_factory.mktemp("checkout") / "pysycl"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(src)], check=True, capture_output=True,
                   timeout=600)
    (path,) = out.glob("pysycl-*.whl")
    return zipfile.ZipFile(path)


def _metadata(wheel):
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    return Parser().parsestr(wheel.read(name).decode())


def test_wheel_carries_license_and_typing_marker(wheel):
    names = wheel.namelist()
    assert "pysycl/py.typed" in names
    licenses = [n for n in names if ".dist-info/" in n and "LICENSE" in n]
    assert licenses and b"Apache License" in wheel.read(licenses[0])


def test_wheel_metadata_names_license_versions_and_platform_markers(wheel):
    meta = _metadata(wheel)
    classifiers = meta.get_all("Classifier")
    for minor in ("3.10", "3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {minor}" in classifiers
    assert "Apache" in (meta.get("License") or meta.get("License-Expression") or "")
    assert meta.get("Author") or meta.get("Author-email")
    runtime = [r for r in meta.get_all("Requires-Dist") if r.startswith("intel-opencl-rt")]
    assert runtime and "darwin" in runtime[0] and "x86_64" in runtime[0]


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("pysycl ")
