"""``os.fork()`` (multiprocessing's default start method on Linux): a child runs
native_cpu kernels, large launches on the thread pool included, with the parent's
kernels and queues; the OpenCL runtime, started in the parent, raises a clear error in
the child instead of hanging. Each case runs in a subprocess with a time limit."""
import os
import subprocess
import sys
import textwrap

import pytest

LIMIT_S = 240

PROGRAM = """
import multiprocessing as mp
import numpy as np
import pysycl as sycl

@sycl.kernel
def axpy(i: sycl.item[1], x: sycl.global_ptr[np.float32], y: sycl.global_ptr[np.float32],
         a: np.float32):
    y[i] = a * x[i] + y[i]

N = 1 << 20    # many work-groups: the launch runs on the worker pool

def native():
    return [d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0]

def run(q, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    dx, dy = sycl.malloc_shared(N, np.float32, q), sycl.malloc_shared(N, np.float32, q)
    np.asarray(dx)[:] = x
    np.asarray(dy)[:] = y
    q.parallel_for(sycl.range(N), axpy, dx, dy, np.float32(1.5)).wait()
    ok = bool(np.allclose(np.asarray(dy), 1.5 * x.astype(np.float64) + y, rtol=1e-6,
                          atol=1e-6))   # a * x + y, fused or not
    sycl.free(dx, q); sycl.free(dy, q)
    return ok

parent_queue = sycl.queue(native())

def child(seed):
    # The parent's queue and a new one both work; the pool is made again here.
    return run(parent_queue, seed) and run(sycl.queue(native()), seed + 100)

def opencl_in_child(_):
    out = []
    for make in (lambda: ocl_queue.parallel_for(sycl.range(8), axpy, ox, ox,
                                                np.float32(1)).wait(),
                 lambda: sycl.queue(ocl_dev)):
        try:
            make()
            out.append("ran")
        except sycl.exception as e:
            out.append(f"{e.code().name}:{'fork' in str(e)}")
    return out

if __name__ == "__main__":
    assert run(parent_queue, 1)           # the parent's pool threads exist
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        print("native", pool.map(child, [2, 3, 4]), flush=True)
    ocl = [d for d in sycl.device.get_devices() if d.backend.name == "opencl"]
    if ocl:
        ocl_dev = ocl[0]
        ocl_queue = sycl.queue(ocl_dev)
        ox = sycl.malloc_shared(8, np.float32, ocl_queue)
        ocl_queue.parallel_for(sycl.range(8), axpy, ox, ox, np.float32(1)).wait()
        with ctx.Pool(1) as pool:
            print("opencl", pool.map(opencl_in_child, [0]), flush=True)
    assert run(parent_queue, 5)           # and the parent goes on
    print("done", flush=True)
"""


def test_fork_children_run_native_kernels_and_refuse_opencl(tmp_path):
    script = tmp_path / "forking.py"
    script.write_text(textwrap.dedent(PROGRAM))
    try:
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           timeout=LIMIT_S, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        pytest.fail(f"a forked child hung (no result in {LIMIT_S} s)")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "native [True, True, True]" in lines, r.stdout
    assert lines[-1] == "done"
    ocl = [line for line in lines if line.startswith("opencl")]
    if ocl:
        assert ocl == ["opencl [['feature_not_supported:True', 'feature_not_supported:True']]"]
