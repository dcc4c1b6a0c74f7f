"""A NumPy array as a kernel argument works on every device: used in place where the
device reaches host memory (the native CPU; OpenCL CPU runtimes with
``usm_system_allocations``), else copied to the device before the launch and back after
it, with one warning per process. The copying path is tested on every device by making
the runtime see a device that cannot reach host memory (the driver's description says
so: no ``host_accessible``, no ``usm_system_allocations``), in a fresh process."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import pysycl as sycl


@sycl.kernel
def scale_add(it: sycl.item[1], x: sycl.global_ptr[np.float64], y: sycl.global_ptr[np.float64],
              k: np.float64):
    y[it] = k * x[it] + y[it]


def test_host_arrays_are_used_in_place_where_the_device_reaches_them(queue):
    desc = queue.get_device()._desc
    if not (desc.extra.get("host_accessible") or "usm_system_allocations" in desc.aspects):
        pytest.skip(f"{queue.get_device().name} cannot reach host memory")
    rng = np.random.default_rng(51)
    x, y = rng.standard_normal(300), rng.standard_normal(300)
    want = 2.5 * x + y
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # no copy, so no warning
        queue.parallel_for(300, scale_add, x, y, 2.5).wait()
    np.testing.assert_allclose(y, want)


SCRIPT = """
import warnings
import numpy as np
import pysycl as sycl

@sycl.kernel
def scale_add(it: sycl.item[1], x: sycl.global_ptr[np.float64], y: sycl.global_ptr[np.float64],
              k: np.float64):
    y[it] = k * x[it] + y[it]

dev = [d for d in sycl.device.get_devices() if d.backend.name == BACKEND][INDEX]
desc = dev._desc
# The driver contract: this device reaches no host memory.
desc.extra = dict(desc.extra, host_accessible=False)
desc.aspects = desc.aspects - {"usm_system_allocations"}
q = sycl.queue(dev)
rng = np.random.default_rng(52)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for k in (2.0, -3.0, 0.5):                         # fast path and general path alike
        x, y = rng.standard_normal(1000), rng.standard_normal(1000)
        want = k * x + y
        q.parallel_for(1000, scale_add, x, y, k).wait()
        np.testing.assert_allclose(y, want)            # copied back into the host array
    x, y = rng.standard_normal(64), rng.standard_normal(64)
    want = x + y
    q.submit(lambda cgh: cgh.parallel_for(64, scale_add, x, y, 1.0)).wait()
    np.testing.assert_allclose(y, want)
staged = [w for w in caught if issubclass(w.category, RuntimeWarning)
          and "cannot reach" in str(w.message)]
assert len(staged) == 1, [str(w.message) for w in caught]
text = str(staged[0].message)
assert "sycl.malloc_device" in text and "sycl.buffer" in text and "'x'" in text

class CpuTensor:                                       # a CPU array known only by DLPack
    def __init__(self, a):
        self.a = a
    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)
    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

x, y = rng.standard_normal(32), rng.standard_normal(32)
want = 4 * x + y
q.parallel_for(32, scale_add, CpuTensor(x), y, 4.0).wait()
np.testing.assert_allclose(y, want)

frozen = rng.standard_normal(32)
frozen.flags.writeable = False
try:
    q.parallel_for(32, scale_add, x, frozen, 1.0)
except sycl.exception as e:
    assert e.code() == sycl.errc.kernel_argument and "read-only" in str(e), e
else:
    raise AssertionError("a read-only array was accepted")
try:
    q.parallel_for(16, scale_add, x[::2], y[:16], 1.0)
except sycl.exception as e:
    assert "not C-contiguous" in str(e), e
else:
    raise AssertionError("a strided array was accepted")
print("ok")
"""


def test_host_arrays_are_copied_in_and_out_where_the_device_cannot_reach_them(device,
                                                                             tmp_path):
    backend = device.backend.name
    index = [d for d in sycl.device.get_devices() if d.backend == device.backend].index(device)
    script = tmp_path / "staged.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("BACKEND", repr(backend))
                      .replace("INDEX", str(index)))
    done = subprocess.run([sys.executable, "-X", "faulthandler", str(script)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
