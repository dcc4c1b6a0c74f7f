"""Several devices of one backend in one process: a context over them, a bundle built
for all of them, a queue per device, copies between their memory (peer-to-peer on CUDA
where the GPUs allow it, staged through the host otherwise) and one buffer used by
queues of both. The pair is two GPUs on CUDA, two sub-devices on the CPU backends."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import pysycl as sycl

P = sycl.info.partition_property


@sycl.kernel
def axpy(i: sycl.id[1], y: sycl.global_ptr[np.float32], x: sycl.global_ptr[np.float32],
         a: np.float32):
    y[i] = a * x[i] + y[i]


@sycl.kernel
def scale_acc(i: sycl.id[1], acc: sycl.accessor[np.float32, 1], f: np.float32):
    acc[i] = acc[i] * f


def device_pair(backend: str):
    """Two devices of ``backend`` (None with the reason when there are not two)."""
    roots = [d for d in sycl.device.get_devices() if d.backend.name == backend]
    if not roots:
        return None, f"no {backend} device here"
    if backend == "cuda":
        return (roots[:2], None) if len(roots) >= 2 else (None, "one GPU here")
    root = roots[0]
    if root.partition_max_sub_devices < 2 or \
            P.partition_equally not in root.partition_properties:
        return None, f"{root.name} cannot be split in two"
    return root.create_sub_devices(P.partition_equally,
                                   root.partition_max_sub_devices // 2), None


@pytest.fixture(params=["native_cpu", pytest.param("opencl", marks=pytest.mark.opencl),
                        pytest.param("cuda", marks=pytest.mark.cuda)])
def pair(request):
    devices, why = device_pair(request.param)
    if devices is None:
        pytest.skip(why)
    return devices


@pytest.fixture
def rng():
    return np.random.default_rng(43)


def test_context_over_two_devices_builds_for_all(pair, rng):
    ctx = sycl.context(pair)
    assert ctx.get_devices() == pair
    bundle = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable)
    assert set(bundle.get_devices()) == set(pair)
    n = 4096
    for sub in pair:
        q = sycl.queue(ctx, sub)
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        dx, dy = (sycl.malloc_shared(n, np.float32, q) for _ in range(2))
        dx[:], dy[:] = x, y

        def cgf(h, dx=dx, dy=dy):
            h.use_kernel_bundle(bundle)
            h.parallel_for(sycl.range(n), axpy, dy, dx, np.float32(4.0))
        q.submit(cgf).wait()
        np.testing.assert_allclose(dy.to_numpy(), 4.0 * x + y, rtol=1e-6)


@pytest.mark.parametrize("shared_context", [True, False], ids=["one-context", "own-contexts"])
def test_memcpy_between_devices(pair, rng, shared_context):
    ctx = sycl.context(pair) if shared_context else None
    q0, q1 = (sycl.queue(ctx, s) if ctx else sycl.queue(s) for s in pair)
    x = rng.random(10_000, dtype=np.float32)
    a = sycl.malloc_device(x.size, np.float32, q0)
    b = sycl.malloc_device(x.size, np.float32, q1)
    q0.memcpy(a, x, x.nbytes).wait()
    q1.memcpy(b, a, x.nbytes).wait()          # device 0's memory into device 1's
    q1.parallel_for(sycl.range(x.size), axpy, b, b, np.float32(1.0)).wait()
    q0.memcpy(a, b, x.nbytes).wait()          # and back
    out = np.empty_like(x)
    q0.memcpy(out, a, x.nbytes).wait()
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)


def test_buffer_shared_by_queues_of_two_devices(pair, rng):
    data = rng.random(20_000, dtype=np.float32)
    expect = data.copy()
    q0, q1 = (sycl.queue(s) for s in pair)
    with sycl.buffer(data) as buf:
        for step, q in enumerate([q0, q1, q0, q1, q1]):
            f = np.float32(1.0 + 0.25 * step)
            q.submit(lambda h, f=f: h.parallel_for(sycl.range(data.size), scale_acc,
                                                   buf.get_access(h), f))
            expect *= f
    np.testing.assert_allclose(data, expect, rtol=1e-5)


@pytest.mark.cuda
def test_cuda_copy_between_gpus_staged_when_peer_access_is_off():
    devices, why = device_pair("cuda")
    if devices is None:
        pytest.skip(why)
    code = """if True:
        import numpy as np, pysycl as sycl
        g0, g1 = [d for d in sycl.device.get_devices() if d.backend.name == "cuda"][:2]
        q0, q1 = sycl.queue(g0), sycl.queue(g1)
        x = np.random.default_rng(5).random(1 << 20, dtype=np.float32)
        a = sycl.malloc_device(x.size, np.float32, q0)
        b = sycl.malloc_device(x.size, np.float32, q1)
        q0.memcpy(a, x, x.nbytes).wait()
        q1.memcpy(b, a, x.nbytes).wait()
        out = np.empty_like(x)
        q1.memcpy(out, b, x.nbytes).wait()
        assert np.array_equal(out, x)
        assert not q1.get_device().driver.peer_access(g0.description.handle,
                                                      g1.description.handle)
        print("ok")
    """
    env = dict(os.environ, PYSYCL_CUDA_PEER_ACCESS="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


@pytest.mark.cuda
def test_two_queues_on_one_gpu_share_memory(rng):
    gpus = [d for d in sycl.device.get_devices() if d.backend.name == "cuda"]
    if not gpus:
        pytest.skip("no CUDA GPU here")
    ctx = sycl.context(gpus[0])
    q0, q1 = sycl.queue(ctx, gpus[0]), sycl.queue(ctx, gpus[0])
    x = rng.random(1 << 18, dtype=np.float32)
    a = sycl.malloc_device(x.size, np.float32, q0)
    b = sycl.malloc_device(x.size, np.float32, q1)
    q0.memcpy(a, x, x.nbytes).wait()
    q1.memcpy(b, a, x.nbytes).wait()
    q1.parallel_for(sycl.range(x.size), axpy, b, a, np.float32(2.0)).wait()
    out = np.empty_like(x)
    q0.memcpy(out, b, x.nbytes).wait()
    np.testing.assert_allclose(out, 3 * x, rtol=1e-6)


@pytest.mark.cuda
def test_cuda_memory_knows_its_gpu():
    devices, why = device_pair("cuda")
    if devices is None:
        pytest.skip(why)
    for ordinal, dev in enumerate(devices):
        q = sycl.queue(dev)
        a = sycl.malloc_device(1024, np.float32, q)
        assert dev.driver.pointer_ordinal(a.ptr) == ordinal
        assert a.__dlpack_device__()[1] == ordinal
