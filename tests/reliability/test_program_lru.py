"""Loaded programs are bounded (``PYSYCL_MAX_PROGRAMS``): a program that sets a new
specialization-constant value on every submit keeps a bounded set of programs loaded,
each result is right, evicted programs load again when their value comes back, and
the process does not grow with the number of values. Each case runs in a fresh
interpreter (a crash is a failure)."""
import json
import os
import subprocess
import sys
import textwrap

LIMIT_S = 600
MAX_PROGRAMS = 32
# What each new value cost before programs were unloaded, measured on the 2-core
# development machine (AMD EPYC): a native object JIT-linked into the process, and a
# program built by Intel's OpenCL CPU runtime. The tests allow a tenth of it.
NO_UNLOADING_KIB_PER_VALUE = {"native_cpu": 140, "opencl": 1700, "cuda": 140}

SCRIPT = """
import gc, json, os, sys
import numpy as np
import pysycl as sycl
from pysycl.bundle import stats

scale_id = sycl.specialization_id(np.float32, 1.0)


@sycl.kernel
def scaled(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.float32],
           out: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    out[i] = x[i] * h.get_specialization_constant(scale_id) + np.float32(1)


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def live_programs():
    gc.collect()
    names = ("NativeProgram", "OpenCLProgram", "CudaProgram")
    return sum(type(o).__name__ in names for o in gc.get_objects())


backend, values_arg, cycles = sys.argv[1], sys.argv[2], int(sys.argv[3])
dev = [d for d in sycl.device.get_devices() if d.backend.name == backend][0]
q = sycl.queue(dev)
rng = np.random.default_rng(7)
n = 1000
x_host = rng.standard_normal(n).astype(np.float32)
x = sycl.malloc_shared(n, np.float32, q)
out = sycl.malloc_shared(n, np.float32, q)
np.asarray(x)[:] = x_host
values = rng.uniform(-4, 4, int(values_arg)).astype(np.float32)
wrong, most_live, rss = 0, 0, {}
for c in range(cycles):
    for k, v in enumerate(values):
        def cgf(cgh):
            cgh.set_specialization_constant(scale_id, v)
            cgh.parallel_for(sycl.range(n), scaled, x, out)
        q.submit(cgf).wait()
        if not np.allclose(np.asarray(out), x_host * v + np.float32(1), rtol=1e-5, atol=1e-5):
            wrong += 1
        if k % 50 == 0:
            most_live = max(most_live, live_programs())
        if c == 0 and k in (400, len(values) - 1):
            gc.collect()
            rss[k] = rss_mib()
    if c == 0:
        loads_first_cycle = stats.load_count
print(json.dumps({"wrong": wrong, "most_live": most_live, "rss": list(rss.values()),
                  "loads_first_cycle": loads_first_cycle, "loads": stats.load_count}))
"""


def _run(tmp_path, backend: str, values: int, cycles: int, **env) -> dict:
    script = tmp_path / "spec_values.py"
    script.write_text(textwrap.dedent(SCRIPT))
    environ = dict(os.environ, PYSYCL_MAX_PROGRAMS=str(MAX_PROGRAMS), **env)
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(script), backend,
                           str(values), str(cycles)], capture_output=True, text=True,
                          timeout=LIMIT_S, env=environ)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_many_values_keep_memory_bounded(device, tmp_path):
    """1000 values: right results, at most PYSYCL_MAX_PROGRAMS programs loaded, and from
    the 400th value to the last the process grows by less than a tenth of what those
    600 values cost when no program was unloaded (the native CPU: ~140 KiB a value,
    ~82 MiB here; Intel's OpenCL CPU runtime: ~1.7 MiB a value, ~1 GiB). The window
    starts late because the OpenCL runtime's compiler grows to a plateau of its own
    (~400 MiB) over its first few hundred builds, whatever pysycl unloads."""
    backend = device.backend.name
    r = _run(tmp_path, backend, 1000, 1)
    assert r["wrong"] == 0
    assert r["most_live"] <= MAX_PROGRAMS
    before, after = r["rss"]
    bound = 0.1 * 600 * NO_UNLOADING_KIB_PER_VALUE[backend] / 1024
    assert after - before < bound, (f"RSS grew {after - before:.1f} MiB over 600 values "
                                    f"(bound {bound:.1f} MiB)")


def test_evicted_programs_load_again_with_their_values(device, tmp_path):
    """Every value set its own program (literal builds forced on the native CPU, native
    spec constants on OpenCL): 80 values twice round with room for 32 programs, so
    every program of the second round was evicted and is loaded again; each result
    is right and no more than 32 programs are ever alive."""
    r = _run(tmp_path, device.backend.name, 80, 2, PYSYCL_LITERAL_SPEC_BUILDS="100000")
    assert r["wrong"] == 0
    assert r["most_live"] <= MAX_PROGRAMS
    assert r["loads_first_cycle"] >= 80
    assert r["loads"] - r["loads_first_cycle"] >= 80    # each one loaded again


DEVICE_GLOBAL_SCRIPT = """
import gc, sys
import numpy as np
import pysycl as sycl

total = sycl.device_global(np.int64)
step = sycl.specialization_id(np.int64, 0)


@sycl.kernel
def add_step(h: sycl.kernel_handler):
    total.set(total.get() + h.get_specialization_constant(step))


dev = [d for d in sycl.device.get_devices() if d.backend.name == sys.argv[1]][0]
q = sycl.queue(dev)
steps = np.random.default_rng(3).integers(1, 1000, 60)
for _ in range(2):
    for v in steps:
        def cgf(cgh):
            cgh.set_specialization_constant(step, v)
            cgh.single_task(add_step)
        q.submit(cgf).wait()
out = np.zeros(1, np.int64)
q.copy(total, out).wait()
gc.collect()
live = sum(type(o).__name__ in ("NativeProgram", "OpenCLProgram", "CudaProgram")
           for o in gc.get_objects())
print(int(out[0]), 2 * int(steps.sum()), live)
"""


def test_device_global_values_survive_eviction(device, tmp_path):
    """A device_global that every value's program adds to: programs evicted with the
    variable's value in them hand it on and are unloaded (room for 4 programs, 60
    values twice)."""
    script = tmp_path / "dg_values.py"
    script.write_text(textwrap.dedent(DEVICE_GLOBAL_SCRIPT))
    environ = dict(os.environ, PYSYCL_MAX_PROGRAMS="4", PYSYCL_LITERAL_SPEC_BUILDS="100000")
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(script),
                           device.backend.name], capture_output=True, text=True,
                          timeout=LIMIT_S, env=environ)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    got, expected, live = proc.stdout.split()
    assert got == expected
    assert int(live) <= 4
