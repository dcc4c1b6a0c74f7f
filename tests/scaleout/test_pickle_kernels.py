"""Kernels and device functions pickle by reference (module + qualified name): a worker
process or MPI rank that imports the same module gets the same kernel and runs it."""
from __future__ import annotations

import multiprocessing
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kernels_for_pickling as kp  # noqa: E402
from scaleout_env import child_env  # noqa: E402


def test_kernels_and_device_functions_round_trip_in_process():
    for obj in (kp.scale, kp.twice, kp.Holder.nested):
        assert pickle.loads(pickle.dumps(obj)) is obj


def test_pickled_kernel_runs_in_the_same_process(queue, rng):
    k = pickle.loads(pickle.dumps(kp.scale))
    src = rng.standard_normal(64).astype(np.float32)
    a = sycl.malloc_shared(64, np.float32, queue)
    b = sycl.malloc_shared(64, np.float32, queue)
    a[:] = src
    queue.parallel_for(64, k, a, b).wait()
    np.testing.assert_allclose(b.to_numpy(), src * 2 + 1, rtol=1e-6)


def _run_in_worker(payload: bytes, data: np.ndarray) -> np.ndarray:
    kernel = pickle.loads(payload)
    q = sycl.queue()
    a = sycl.malloc_shared(data.size, np.float32, q)
    b = sycl.malloc_shared(data.size, np.float32, q)
    a[:] = data
    q.parallel_for(data.size, kernel, a, b).wait()
    return b.to_numpy()


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_pickled_kernel_runs_in_another_process(rng, method, monkeypatch):
    data = rng.standard_normal(128).astype(np.float32)
    ctx = multiprocessing.get_context(method)
    # The worker imports kernels_for_pickling, and this checkout's pysycl.
    monkeypatch.setenv("PYTHONPATH", child_env(HERE)["PYTHONPATH"])
    with ctx.Pool(1) as pool:
        out = pool.apply(_run_in_worker, (pickle.dumps(kp.scale), data))
    np.testing.assert_allclose(out, data * 2 + 1, rtol=1e-6)


def test_a_kernel_defined_in_a_function_refuses_with_the_reason():
    @sycl.kernel
    def local_kernel(it: sycl.item[1]):
        pass
    with pytest.raises(pickle.PicklingError, match="defined inside a function"):
        pickle.dumps(local_kernel)


def test_unpickling_where_the_module_is_missing_names_it(run_python):
    payload = pickle.dumps(kp.scale)
    code = ("import pickle, sys, pysycl as sycl\n"
            f"try:\n    pickle.loads({payload!r})\n"
            "except sycl.exception as e:\n"
            "    print('ERR', e.code() == sycl.errc.invalid, e)\n")
    out = run_python(code)
    assert "ERR True" in out and "kernels_for_pickling.scale" in out and "import" in out


def test_specialization_ids_and_device_globals_pickle_by_reference():
    for obj in (kp.offset, kp.counter, kp.Settings.gain):
        assert pickle.loads(pickle.dumps(obj)) is obj


def test_host_objects_without_a_module_level_name_refuse():
    made_here = sycl.specialization_id(np.int32, 7)
    with pytest.raises(pickle.PicklingError, match="not bound to a name at the top level"):
        pickle.dumps(made_here)
    with pytest.raises(pickle.PicklingError, match="not bound to a name"):
        pickle.dumps([sycl.device_global(np.float32)])


def _run_bundle_in_worker(payload: bytes, data: np.ndarray) -> tuple[str, np.ndarray]:
    bundle = pickle.loads(payload)
    q = sycl.queue()
    a = sycl.malloc_shared(data.size, np.float32, q)
    b = sycl.malloc_shared(data.size, np.float32, q)
    a[:] = data

    def cgf(h):
        h.use_kernel_bundle(bundle)
        h.parallel_for(data.size, kp.shifted, a, b)
    q.submit(cgf).wait()
    return bundle.state.name, b.to_numpy()


def test_kernel_bundle_pickles_as_its_syclbin_bytes(rng, monkeypatch):
    """An executable bundle with a spec-constant value set travels as SYCLBIN bytes and
    runs in another process with that value."""
    ctx = sycl.context()
    # Its own kernel only: a bundle of every kernel of this process would hold other
    # tests' kernels, some of whose objects have no ID a receiver could match.
    bundle = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=kp.shifted)
    bundle.set_specialization_constant(kp.offset, 2.5)
    exe = sycl.build(bundle)
    data = rng.standard_normal(96).astype(np.float32)
    monkeypatch.setenv("PYTHONPATH", child_env(HERE)["PYTHONPATH"])
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        state, out = pool.apply(_run_bundle_in_worker, (pickle.dumps(exe), data))
    assert state == "executable"
    np.testing.assert_allclose(out, data + 2.5, rtol=1e-6)
