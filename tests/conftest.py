"""Fixtures shared by every test folder.

* A temporary ``PYSYCL_CACHE_DIR`` for the whole session (set before any test module is
  imported), so tests never read or write the user's kernel cache, and a key folder
  (``PYSYCL_KEY_DIR``) in it, so bundle files are signed with the session's own key.
* ``device`` / ``queue``: one parameter per device a test can run on: ``native_cpu``
  (always), ``opencl_cpu`` / ``opencl_gpu`` (marked ``opencl``), ``cuda0``, ``cuda1``...
  (marked ``cuda``). A backend with no device here still shows up as a skipped
  parameter, with the reason, so a run says what it did not cover.
  ``-m "not opencl and not cuda"`` keeps native_cpu only.
* ``per_test_timeout``: tests get pytest-timeout's limit when that plugin is installed.

Folders with their own ``device``/``queue`` fixtures (tests/backends/*) override these.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field

import pytest

DEFAULT_TIMEOUT_S = 300

_SESSION_CACHE: str | None = None


def pytest_configure(config):
    global _SESSION_CACHE
    if _SESSION_CACHE is None:
        _SESSION_CACHE = tempfile.mkdtemp(prefix="pysycl-test-cache-")
        os.environ["PYSYCL_CACHE_DIR"] = _SESSION_CACHE
        # The key that signs bundle files: the session's own, never the user's.
        os.environ["PYSYCL_KEY_DIR"] = os.path.join(_SESSION_CACHE, "keys")
    # pytest-timeout: a default per-test limit unless the command line gave one.
    if config.pluginmanager.hasplugin("timeout"):
        if getattr(config.option, "timeout", None) is None:
            config.option.timeout = DEFAULT_TIMEOUT_S


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def pysycl_cache_dir():
    """The session's private kernel cache directory (``PYSYCL_CACHE_DIR``)."""
    assert os.environ.get("PYSYCL_CACHE_DIR") == _SESSION_CACHE
    return _SESSION_CACHE


# Devices -----------------------------------------------------------------------------
@dataclass(frozen=True)
class DeviceParam:
    """One ``device`` parameter: which backend device, or why it is skipped."""

    test_id: str
    backend: str
    index: int = 0                    # index among that backend's visible devices
    skip_reason: str | None = None
    marks: tuple = field(default=())


_PARAMS: list[DeviceParam] | None = None


def _visible_by_backend() -> dict[str, list]:
    """Visible device descriptions per backend; an error is reported, not raised (a
    broken runtime must fail the tests that use it, not the collection of every test)."""
    from pysycl.backends import registry
    try:
        from pysycl.runtime import filters
        visible = filters.visible_devices()
    except Exception:  # noqa: BLE001 - fall back to the raw backend list
        visible = registry.all_devices()
    out: dict[str, list] = {}
    for desc in visible:
        out.setdefault(desc.backend, []).append(desc)
    return out


def device_params() -> list[DeviceParam]:
    global _PARAMS
    if _PARAMS is not None:
        return _PARAMS
    try:
        found = _visible_by_backend()
        error = None
    except Exception as e:  # noqa: BLE001
        found, error = {}, f"{type(e).__name__}: {e}"
    filt = os.environ.get("PYSYCL_DEVICE_SELECTOR")
    hidden = f" (PYSYCL_DEVICE_SELECTOR={filt!r})" if filt else ""
    params = []
    # native_cpu: always built in.
    if found.get("native_cpu"):
        params.append(DeviceParam("native_cpu", "native_cpu"))
    else:
        params.append(DeviceParam("native_cpu", "native_cpu", skip_reason=(
            f"native_cpu device missing{hidden}" + (f": {error}" if error else ""))))
    # opencl: ids by device type; a second device of the same type gets its index.
    ocl = found.get("opencl", [])
    seen: dict[str, int] = {}
    for i, desc in enumerate(ocl):
        n = seen.get(desc.device_type, 0)
        seen[desc.device_type] = n + 1
        tid = f"opencl_{desc.device_type}" + (str(n) if n else "")
        params.append(DeviceParam(tid, "opencl", i, marks=(pytest.mark.opencl,)))
    if not ocl:
        params.append(DeviceParam("opencl_cpu", "opencl", skip_reason=(
            "no OpenCL device that takes SPIR-V" + hidden + " (pip install pyopencl "
            "intel-opencl-rt intel-cmplr-lib-rt, or a GPU driver)"),
            marks=(pytest.mark.opencl,)))
    cuda = found.get("cuda", [])
    for i, _desc in enumerate(cuda):
        params.append(DeviceParam(f"cuda{i}", "cuda", i, marks=(pytest.mark.cuda,)))
    if not cuda:
        params.append(DeviceParam("cuda0", "cuda", skip_reason=(
            "no CUDA GPU" + hidden + " (needs an NVIDIA GPU, its driver and cuda-bindings)"),
            marks=(pytest.mark.cuda,)))
    _PARAMS = params
    return params


def pytest_generate_tests(metafunc):
    if "device_param" not in metafunc.fixturenames:
        return
    params = []
    for p in device_params():
        marks = list(p.marks)
        if p.skip_reason:
            marks.append(pytest.mark.skip(reason=p.skip_reason))
        params.append(pytest.param(p, id=p.test_id, marks=marks))
    metafunc.parametrize("device_param", params, scope="session")


@pytest.fixture(scope="session")
def device_param(request):
    return request.param


@pytest.fixture(scope="session")
def device(device_param):
    """A ``sycl.device`` of each backend present (see the module docstring)."""
    import pysycl as sycl
    devices = [d for d in sycl.device.get_devices() if d.backend.name == device_param.backend]
    if device_param.index >= len(devices):
        pytest.skip(f"{device_param.test_id}: device not visible through sycl.device")
    return devices[device_param.index]


@pytest.fixture
def queue(device):
    """A fresh out-of-order ``sycl.queue`` on ``device``; drained after the test."""
    import pysycl as sycl
    q = sycl.queue(device)
    yield q
    try:
        q.wait()
    except Exception:  # noqa: BLE001 - the test already reported what went wrong
        pass
