"""Kernel properties at submit on every device (SYCL 2020 5.8.1, kernel_properties ext):
required work-group size, max sizes, sub-group size, aspects, launch-time properties."""
import numpy as np
import pytest

import pysycl as sycl

I32 = np.int32


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(4)))
def wg4(it: sycl.nd_item[1], out: sycl.global_ptr[I32]):
    out[it.get_global_id(0)] = it.get_local_range(0)


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(2, 4)))
def wg2x4(it: sycl.nd_item[2], out: sycl.global_ptr[I32]):
    out[it.get_global_linear_id()] = 1


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(4)))
def wg4_range(i: sycl.id[1], out: sycl.global_ptr[I32]):
    out[i[0]] = 1


@sycl.kernel(properties=sycl.properties(sycl.sub_group_size(3)))
def sg3(out: sycl.global_ptr[I32]):
    out[0] = 1


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(1 << 24)))
def huge(it: sycl.nd_item[1], out: sycl.global_ptr[I32]):
    out[0] = 1


@sycl.kernel(properties=sycl.properties(sycl.max_linear_work_group_size(4)))
def maxlin4(it: sycl.nd_item[1], out: sycl.global_ptr[I32]):
    out[it.get_global_id(0)] = 1


@sycl.kernel(properties=sycl.properties(sycl.work_group_size_hint(8)))
def hinted(it: sycl.nd_item[1], out: sycl.global_ptr[I32]):
    out[it.get_global_id(0)] = it.get_local_range(0)


@sycl.kernel
def plain(it: sycl.nd_item[1], out: sycl.global_ptr[I32]):
    out[it.get_global_id(0)] = it.get_local_range(0)


def _code(call):
    with pytest.raises(sycl.exception) as e:
        call()
    return e.value.code(), str(e.value)


def test_required_work_group_size_runs(queue):
    out = sycl.malloc_shared(16, I32, queue)
    queue.parallel_for(sycl.nd_range(16, 4), wg4, out).wait()
    assert out[:].tolist() == [4] * 16


def test_local_size_mismatch_is_nd_range_with_dpcpp_message(queue):
    out = sycl.malloc_shared(16, I32, queue)
    code, msg = _code(lambda: queue.parallel_for(sycl.nd_range(16, 8), wg4, out))
    assert code == sycl.errc.nd_range
    assert msg.endswith("The specified local size {1, 1, 8} doesn't match the required "
                        "work-group size specified in the program source {1, 1, 4}")
    code, msg = _code(lambda: queue.parallel_for(sycl.nd_range((4, 8), (4, 2)), wg2x4, out))
    assert code == sycl.errc.nd_range and "{1, 4, 2}" in msg and "{1, 2, 4}" in msg


def test_range_launch_of_required_size_kernel_works(queue):
    out = sycl.malloc_shared(16, I32, queue)
    queue.parallel_for(16, wg4_range, out).wait()
    assert out[:].tolist() == [1] * 16


def test_max_linear_work_group_size(queue):
    out = sycl.malloc_shared(16, I32, queue)
    queue.parallel_for(sycl.nd_range(16, 4), maxlin4, out).wait()
    code, msg = _code(lambda: queue.parallel_for(sycl.nd_range(16, 8), maxlin4, out))
    assert code == sycl.errc.nd_range
    assert msg.endswith("The total number of work-items in the work-group (8) exceeds the "
                        "maximum specified in the program source (4)")


def test_unsupported_sub_group_size_is_kernel_not_supported(queue):
    out = sycl.malloc_shared(1, I32, queue)
    code, msg = _code(lambda: queue.single_task(sg3, out))
    assert code == sycl.errc.kernel_not_supported and "sub-group size 3" in msg


def test_required_size_above_device_limits_is_kernel_not_supported(queue):
    out = sycl.malloc_shared(1, I32, queue)
    code, _ = _code(lambda: queue.parallel_for(sycl.nd_range(1 << 24, 1 << 24), huge, out))
    assert code == sycl.errc.kernel_not_supported


def test_missing_aspect_at_launch_is_kernel_not_supported(queue):
    missing = [a for a in (sycl.aspect.gpu, sycl.aspect.cpu) if not queue.get_device().has(a)]
    out = sycl.malloc_shared(4, I32, queue)
    code, msg = _code(lambda: queue.parallel_for(
        sycl.nd_range(4, 4), plain, out, properties=sycl.properties(sycl.device_has(missing[0]))))
    assert code == sycl.errc.kernel_not_supported and missing[0].name in msg


def test_launch_property_conflicting_with_kernel_is_invalid(queue):
    out = sycl.malloc_shared(16, I32, queue)
    code, _ = _code(lambda: queue.parallel_for(
        sycl.nd_range(16, 4), wg4, out, properties=sycl.properties(sycl.work_group_size(8))))
    assert code == sycl.errc.invalid
    # the same value is no conflict
    queue.parallel_for(sycl.nd_range(16, 4), wg4, out,
                       properties=sycl.properties(sycl.work_group_size(4))).wait()


def test_launch_property_applies(queue):
    out = sycl.malloc_shared(16, I32, queue)
    props = sycl.properties(sycl.work_group_size(8))
    queue.parallel_for(sycl.nd_range(16, 8), plain, out, properties=props).wait()
    assert out[:].tolist() == [8] * 16
    code, _ = _code(lambda: queue.parallel_for(sycl.nd_range(16, 4), plain, out,
                                               properties=props))
    assert code == sycl.errc.nd_range


def test_hint_is_only_a_hint(queue):
    out = sycl.malloc_shared(16, I32, queue)
    queue.parallel_for(sycl.nd_range(16, 2), hinted, out).wait()
    assert out[:].tolist() == [2] * 16


def test_kernel_never_sent_to_device_causes_no_error(queue):
    # huge and sg3 are unsupported here; building a bundle of every kernel must not fail.
    ctx = queue.get_context()
    kb = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable)
    assert kb is not None
    out = sycl.malloc_shared(16, I32, queue)
    queue.parallel_for(sycl.nd_range(16, 4), wg4, out).wait()
