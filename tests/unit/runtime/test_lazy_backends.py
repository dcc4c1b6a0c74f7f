"""Backends load only when a device of theirs could be asked for (selectors, get_devices,
PYSYCL_DEVICE_SELECTOR), and the lazy choice is the one scoring every device makes."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pysycl.backends import registry
from pysycl.backends.opencl import environment
from runtime_api import sycl

SRC = Path(__file__).resolve().parents[3] / "src"
# Modules that mean "this backend was loaded": its driver, its runtime package.
HEAVY = ("pyopencl", "pysycl.backends.opencl.driver", "cuda.bindings",
         "pysycl.backends.cuda.driver")

_PROGRAM = textwrap.dedent('''
    import json, sys
    import numpy as np
    import pysycl as sycl

    @sycl.kernel
    def axpy(it: sycl.item[1], a: np.float32, x: sycl.global_ptr[np.float32],
             y: sycl.global_ptr[np.float32]):
        i = it.get_id(0)
        y[i] = a * x[i] + y[i]

    q = sycl.queue(*(eval(sys.argv[1]),) if len(sys.argv) > 1 else ())
    rng = np.random.default_rng(5)
    xs, ys = rng.standard_normal((2, 1000), dtype=np.float32)
    x = sycl.malloc_shared((1000,), np.float32, q); x[:] = xs
    y = sycl.malloc_shared((1000,), np.float32, q); y[:] = ys
    q.parallel_for(sycl.range(1000), axpy, np.float32(1.5), x, y).wait()
    print(json.dumps({"backend": q.get_device().backend.name,
                      "ok": bool(np.allclose(np.asarray(y), 1.5 * xs.astype(np.float64) + ys,
                                             rtol=1e-6, atol=1e-6)),   # fused or not
                      "loaded": sorted(m for m in %r if m in sys.modules)}))
''' % (HEAVY,))


def _run(tmp_path, *args, env=None) -> dict:
    script = tmp_path / "prog.py"       # kernels are compiled from a source file
    script.write_text(_PROGRAM)
    full_env = dict(os.environ, PYTHONPATH=str(SRC), **(env or {}))
    out = subprocess.run([sys.executable, str(script), *args], env=full_env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _native_is_default() -> bool:
    return not any(d.is_gpu() for d in sycl.device.get_devices())


@pytest.mark.parametrize("selector", [None, "sycl.cpu_selector_v", "sycl.default_selector_v",
                                      "sycl.aspect_selector(sycl.aspect.fp64)"])
def test_native_queue_loads_no_other_backend(tmp_path, selector):
    if selector != "sycl.cpu_selector_v" and not _native_is_default():
        pytest.skip("a GPU is present: the default selector must load its backend")
    if registry.device_types_here("opencl") - {"cpu"}:
        pytest.skip("an OpenCL driver of unknown devices is installed")
    got = _run(tmp_path, *([selector] if selector else []))
    assert got["backend"] == "native_cpu" and got["ok"]
    assert got["loaded"] == []


def test_device_selector_env_native_loads_nothing_else(tmp_path):
    got = _run(tmp_path, env={"PYSYCL_DEVICE_SELECTOR": "native_cpu"})
    assert got == {"backend": "native_cpu", "ok": True, "loaded": []}


def test_user_selector_sees_every_backend(tmp_path):
    """A selector with no bound is shown every device: OpenCL is loaded when present."""
    got = _run(tmp_path, "lambda d: 1 if d.backend == sycl.backend.native_cpu else 0")
    assert got["backend"] == "native_cpu" and got["ok"]
    if "opencl" in registry.available_backends():
        assert "pyopencl" in got["loaded"]


_CHOICES = textwrap.dedent('''
    import json, sys
    import pysycl as sycl
    names = ["default_selector_v", "cpu_selector_v", "gpu_selector_v",
             "accelerator_selector_v"]
    sels = [getattr(sycl, n) for n in names] + [sycl.aspect_selector(sycl.aspect.fp64),
                                                 sycl.aspect_selector(sycl.aspect.gpu)]
    def pick(sel):
        try:
            return repr(sycl.device(sel))
        except sycl.exception as e:
            return e.code().name
    lazy = [pick(s) for s in sels]          # before any backend was loaded on purpose
    devs = sycl.device.get_devices()        # now every backend
    def brute(sel):
        scores = [sel(d) for d in devs]
        best = max((s for s in scores if s is not None and s >= 0), default=None)
        return "runtime" if best is None else repr(devs[scores.index(best)])
    print(json.dumps({"lazy": lazy, "brute": [brute(s) for s in sels]}))
''')


@pytest.mark.parametrize("env", [{}, {"PYSYCL_DEVICE_SELECTOR": "opencl,native_cpu"},
                                 {"PYSYCL_DEVICE_SELECTOR": "!native_cpu"}])
def test_lazy_choice_is_the_full_scoring_choice(tmp_path, env):
    """Each built-in selector picks, lazily, the device that scoring every visible
    device picks (ties: first in platform order)."""
    full_env = dict(os.environ, PYTHONPATH=str(SRC), **env)
    out = subprocess.run([sys.executable, "-c", _CHOICES], env=full_env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["lazy"] == got["brute"]


def test_device_types_here_reads_icd_files(tmp_path, monkeypatch):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    monkeypatch.setenv("OCL_ICD_VENDORS", str(vendors))
    monkeypatch.delenv("OCL_ICD_FILENAMES", raising=False)
    (vendors / "intel.icd").write_text(f"/somewhere/{environment.RUNTIME_LIBRARY}\n")
    assert environment.device_types_here() == frozenset({"cpu"})
    (vendors / "gpu.icd").write_text("/opt/vendor/libsome_gpu_driver.so\n")
    assert environment.device_types_here() is None   # could be anything
    (vendors / "gpu.icd").unlink()
    monkeypatch.setenv("OCL_ICD_FILENAMES", "/opt/vendor/libsome_gpu_driver.so")
    assert environment.device_types_here() is None
    monkeypatch.delenv("OCL_ICD_FILENAMES")
    (vendors / "intel.icd").unlink()
    monkeypatch.setenv("PYSYCL_OPENCL_PYPI_RUNTIME", "0")
    assert environment.device_types_here() == frozenset()


def test_registry_probe_answers_any_type_when_unknown(monkeypatch):
    import pysycl.backends.opencl as opencl_pkg
    monkeypatch.setattr(opencl_pkg, "device_types_here", lambda: None)
    registry._types_here.pop("opencl", None)
    monkeypatch.setattr(registry, "_drivers", {})   # as if not loaded yet
    try:
        assert registry.device_types_here("opencl") == registry.ANY_DEVICE_TYPE
    finally:
        registry._types_here.pop("opencl", None)
    assert registry.device_types_here("native_cpu") == frozenset({"cpu"})


def test_bounds_of_builtin_selectors():
    assert sycl.default_selector_v.upper_bound("cuda", "gpu") > \
        sycl.default_selector_v.upper_bound("native_cpu", "cpu") > \
        sycl.default_selector_v.upper_bound("opencl", "cpu")
    assert sycl.cpu_selector_v.upper_bound("opencl", "gpu") < 0
    assert sycl.gpu_selector_v.upper_bound("native_cpu", "cpu") < 0
    assert not hasattr(lambda d: 0, "upper_bound")
