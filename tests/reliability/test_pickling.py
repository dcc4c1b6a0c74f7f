"""A usm_array pickles by value (never its address); queues, contexts, events and
buffers refuse with a clear TypeError."""
import pickle

import numpy as np
import pytest

import pysycl as sycl
from reliability_helpers import device_prelude


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_usm_round_trip_in_process(queue, kind):
    ref = np.random.default_rng(5).integers(0, 1000, (3, 7), dtype=np.int64)
    a = getattr(sycl, f"malloc_{kind}")(ref.shape, np.int64, queue)
    queue.copy(ref, a).wait()
    b = pickle.loads(pickle.dumps(a))
    assert (b.usm_type, b.shape, b.dtype) == (kind, ref.shape, ref.dtype)
    assert b.ptr != a.ptr and b.device.backend == queue.get_device().backend
    np.testing.assert_array_equal(b.to_numpy(), ref)
    queue.fill(a, 0).wait()                 # a copy: the original is independent
    np.testing.assert_array_equal(b.to_numpy(), ref)


def test_usm_round_trip_through_another_process(device, run_python, tmp_path):
    ref = np.random.default_rng(9).random(10, dtype=np.float32)
    q = sycl.queue(device)
    arrays = {}
    for kind in ("device", "shared", "host"):
        arrays[kind] = getattr(sycl, f"malloc_{kind}")(10, np.float32, q)
        q.copy(ref, arrays[kind]).wait()
    path = tmp_path / "usm.pickle"
    path.write_bytes(pickle.dumps(arrays))
    out = run_python(f"""
        arrays = pickle.loads(open({str(path)!r}, "rb").read())
        for kind, a in sorted(arrays.items()):
            print(kind, a.usm_type, a.device.backend.name, a.to_numpy().tobytes().hex())
    """, device_prelude(device))
    lines = out.split("\n")
    for kind in ("device", "shared", "host"):
        assert f"{kind} {kind} {device.backend.name} {ref.tobytes().hex()}" in lines


def _double(a):
    return (a.to_numpy() * 2).tolist()


def test_usm_through_multiprocessing_spawn(queue):
    import multiprocessing
    ref = np.random.default_rng(2).random(6)
    a = sycl.malloc_shared(6, np.float64, queue)
    a[:] = ref
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        got = pool.apply(_double, (a,))
    np.testing.assert_allclose(got, ref * 2)


def test_unpickling_without_the_backend_is_clear():
    from pysycl.runtime import usm
    with pytest.raises(sycl.exception) as e:
        usm._unpickle("no_such_backend", "shared", np.zeros(2))
    assert e.value.code() == sycl.errc.platform and "no_such_backend" in str(e.value)


def test_process_bound_objects_refuse(queue):
    buf = sycl.buffer(np.arange(4.0))
    objects = {"queue": queue, "context": queue.get_context(), "buffer": buf,
               "event": queue.submit(lambda cgh: None)}
    for name, obj in objects.items():
        with pytest.raises(TypeError, match=f"cannot pickle sycl.{name}: ") as e:
            pickle.dumps(obj)
        assert isinstance(e.value, sycl.exception)
        assert "_thread.lock" not in str(e.value)
    buf.close()
