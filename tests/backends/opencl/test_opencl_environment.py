"""Registering the PyPI runtime and discovery without one; each case in a fresh
interpreter, because the ICD loader reads OCL_ICD_VENDORS once per process."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from pysycl.backends.opencl import environment


def run_python(code: str, **env) -> dict:
    full = {k: v for k, v in os.environ.items() if k not in ("OCL_ICD_VENDORS",)}
    full.update(env)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


DISCOVER = """
    import json, os
    from pysycl.backends.opencl.driver import OpenCLDriver
    from pysycl.backends.opencl import environment
    devs = OpenCLDriver().discover()
    prepared = environment.prepare()
    print(json.dumps({"devices": [d.name for d in devs],
                      "vendors": os.environ.get("OCL_ICD_VENDORS"),
                      "library": str(prepared.library) if prepared else None}))
"""


def test_discovery_without_runtime_is_empty(tmp_path):
    out = run_python(DISCOVER, PYSYCL_OPENCL_PYPI_RUNTIME="0", OCL_ICD_VENDORS=str(tmp_path))
    assert out["devices"] == [] and out["library"] is None


def test_discovery_without_pyopencl_is_empty():
    out = run_python("""
        import sys, json
        sys.modules["pyopencl"] = None          # import pyopencl -> ImportError
        from pysycl.backends.opencl.driver import OpenCLDriver
        print(json.dumps({"devices": OpenCLDriver().discover()}))
    """)
    assert out["devices"] == []


@pytest.mark.skipif(environment.find_runtime() is None, reason="intel-opencl-rt not installed")
def test_pypi_runtime_found_with_nothing_set_beforehand(tmp_path):
    user_vendors = tmp_path / "user-vendors"
    user_vendors.mkdir()
    (user_vendors / "fake.icd").write_text("/nonexistent/libfake-ocl.so\n")
    out = run_python(DISCOVER, PYSYCL_CACHE_DIR=str(tmp_path / "cache"),
                     OCL_ICD_VENDORS=str(user_vendors))
    assert out["devices"], "the Intel CPU device should be discovered"
    folder = out["vendors"]
    assert folder.startswith(str(tmp_path / "cache"))
    names = sorted(os.listdir(folder))
    assert names == ["pysycl-intel-cpu.icd", "system-fake.icd"]
    with open(os.path.join(folder, "pysycl-intel-cpu.icd")) as f:
        assert f.read().strip() == out["library"]


def test_prepare_is_idempotent_and_fast():
    import time
    first = environment.prepare()
    t0 = time.perf_counter()
    assert environment.prepare() is first
    assert time.perf_counter() - t0 < 1e-3
