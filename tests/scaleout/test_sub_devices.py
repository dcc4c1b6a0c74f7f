"""Several devices in one process: sub-devices (SYCL 2020 4.6.4.2), a context over them,
bundles built for all its devices, copies between their memory, and buffers shared by
their queues. Runs on every backend that can partition its device (native_cpu always,
on a machine with 2+ cores; OpenCL CPU runtimes through clCreateSubDevices)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import pysycl as sycl

P = sycl.info.partition_property
D = sycl.info.partition_affinity_domain


@sycl.kernel
def axpy(i: sycl.id[1], y: sycl.global_ptr[np.float32], x: sycl.global_ptr[np.float32],
         a: np.float32):
    y[i] = a * x[i] + y[i]


@sycl.kernel
def scale_acc(i: sycl.id[1], acc: sycl.accessor[np.float32, 1], f: np.float32):
    acc[i] = acc[i] * f


@pytest.fixture
def two_subs(device):
    if device.partition_max_sub_devices < 2 or \
            P.partition_equally not in device.partition_properties:
        pytest.skip(f"{device.name} cannot be split in two")
    subs = device.create_sub_devices(P.partition_equally,
                                     device.partition_max_sub_devices // 2)
    assert len(subs) == 2
    return subs


@pytest.fixture
def rng():
    return np.random.default_rng(41)


def _check_axpy(got, a, x, y):
    """``a * x + y`` to float32 precision, whether the device rounds the product on its
    own (NumPy, the native CPU) or fuses it into the add (OpenCL contracts ``a * x + y``
    as OpenCL C does): within half an ulp of the product (x, y in [0, 1), |a| <= 3)."""
    ref = np.float64(a) * x.astype(np.float64) + y.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=2.5e-7)


def _run_axpy(q, x, y, a):
    dx = sycl.malloc_device(x.size, np.float32, q)
    dy = sycl.malloc_device(y.size, np.float32, q)
    q.memcpy(dx, x, x.nbytes).wait()
    q.memcpy(dy, y, y.nbytes).wait()
    q.parallel_for(sycl.range(x.size), axpy, dy, dx, np.float32(a)).wait()
    out = np.empty_like(y)
    q.memcpy(out, dy, y.nbytes).wait()
    return out


def test_sub_devices_describe_their_partition(device, two_subs):
    half = device.partition_max_sub_devices // 2
    for sub in two_subs:
        assert sub.max_compute_units == half
        assert sub.parent_device == device
        assert sub.get_info(sycl.info.device.parent_device) == device
        assert sub.partition_type_property is P.partition_equally
        assert sub.partition_type_affinity_domain is D.not_applicable
        assert sub.backend == device.backend and sub != device
    assert two_subs[0] != two_subs[1]
    assert device.partition_type_property is P.no_partition
    with pytest.raises(sycl.exception) as err:
        device.parent_device
    assert err.value.code() == sycl.errc.invalid
    assert device not in two_subs and two_subs[0] not in sycl.device.get_devices()


def test_each_sub_device_runs_kernels(two_subs, rng):
    n = 1 << 16
    for sub in two_subs:
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        _check_axpy(_run_axpy(sycl.queue(sub), x, y, 2.5), 2.5, x, y)


def test_partition_by_counts(device, rng):
    units = device.partition_max_sub_devices
    if units < 2 or P.partition_by_counts not in device.partition_properties:
        pytest.skip(f"{device.name} cannot be partitioned by counts")
    subs = device.create_sub_devices(P.partition_by_counts, [units - 1, 0, 1])
    assert [s.max_compute_units for s in subs] == [units - 1, 1]
    assert all(s.partition_type_property is P.partition_by_counts for s in subs)
    x, y = rng.random(5000, dtype=np.float32), rng.random(5000, dtype=np.float32)
    _check_axpy(_run_axpy(sycl.queue(subs[1]), x, y, -1.5), -1.5, x, y)


@pytest.mark.parametrize("partition, value", [
    (P.partition_equally, 0), (P.partition_equally, -1), (P.partition_equally, 10**6),
    (P.partition_equally, 1.5), (P.partition_by_counts, [10**6]),
    (P.partition_by_counts, [0, 0]), (P.partition_by_counts, 3),
    (P.partition_by_counts, [-1]), (P.no_partition, 1),
    (P.partition_by_affinity_domain, D.not_applicable), ("partition_sideways", 1),
])
def test_bad_partitions_are_invalid(device, partition, value):
    if device.partition_max_sub_devices < 1:
        pytest.skip(f"{device.name} has no sub-devices")
    with pytest.raises(sycl.exception) as err:
        device.create_sub_devices(partition, value)
    assert err.value.code() == sycl.errc.invalid


def test_affinity_domains(device, rng):
    domains = device.partition_affinity_domains
    missing = [d for d in D if d not in domains and d is not D.not_applicable]
    if missing:
        with pytest.raises(sycl.exception) as err:
            device.create_sub_devices(P.partition_by_affinity_domain, missing[0])
        assert err.value.code() == sycl.errc.feature_not_supported
    if not domains:
        pytest.skip(f"{device.name} splits along no affinity domain")
    subs = device.create_sub_devices(P.partition_by_affinity_domain, D.next_partitionable)
    assert len(subs) > 1
    assert sum(s.max_compute_units for s in subs) <= device.max_compute_units
    assert subs[0].partition_type_affinity_domain in domains
    x, y = rng.random(3000, dtype=np.float32), rng.random(3000, dtype=np.float32)
    _check_axpy(_run_axpy(sycl.queue(subs[-1]), x, y, 3.0), 3.0, x, y)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_native_sub_device_threads_stay_on_its_cores(rng):
    root = sycl.device([d for d in sycl.device.get_devices()
                        if d.backend == sycl.backend.native_cpu][0])
    if root.partition_max_sub_devices < 2:
        pytest.skip("one core")
    last = root.create_sub_devices(P.partition_by_counts, [1, 1])[1]
    cores = set(last.description.extra["cores"])
    n = 1 << 20   # big enough to go to the pool
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    _check_axpy(_run_axpy(sycl.queue(last), x, y, 0.5), 0.5, x, y)
    pinned = []
    for tid in os.listdir("/proc/self/task"):
        try:
            allowed = os.sched_getaffinity(int(tid))
        except OSError:
            continue
        if allowed == cores:
            pinned.append(tid)
    assert pinned, "no thread of the sub-device's pool runs on its cores only"
    assert os.sched_getaffinity(0) != cores   # the calling thread is left alone


def test_device_for_rank_gives_each_rank_its_share_of_cores(rng):
    root = [d for d in sycl.device.get_devices() if d.backend == sycl.backend.native_cpu][0]
    cores = root.description.extra["cores"]
    if len(cores) < 2 or len(cores) < (os.cpu_count() or 0):
        pytest.skip("needs 2+ cores and no launcher binding")
    cpu = sycl.info.device_type.cpu
    assert sycl.device_for_rank(prefer=cpu, local_rank=(0, 1)) == root
    shares = [sycl.device_for_rank(prefer=cpu, local_rank=(r, 2)) for r in range(2)]
    mine = [set(s.description.extra["cores"]) for s in shares]
    assert all(s.parent_device == root for s in shares)
    assert not mine[0] & mine[1] and len(mine[0]) == len(mine[1]) == len(cores) // 2
    x, y = rng.random(777, dtype=np.float32), rng.random(777, dtype=np.float32)
    _check_axpy(_run_axpy(sycl.queue(shares[1]), x, y, 2.0), 2.0, x, y)
