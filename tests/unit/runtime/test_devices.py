"""Platforms, devices, selectors, PYSYCL_DEVICE_SELECTOR, contexts, queues."""
import pytest

from pysycl.backends import registry
from pysycl.runtime import filters
from runtime_api import sycl


def test_native_cpu_device_info():
    dev = sycl.device(sycl.cpu_selector_v)
    assert dev.backend == sycl.backend.native_cpu and dev.is_cpu()
    assert dev.get_info(sycl.info.device.name) == dev.name and dev.name
    assert dev.max_compute_units >= 1
    assert dev.max_work_group_size == 4096
    assert dev.get_info(sycl.info.device.max_work_item_sizes) == (4096, 4096, 4096)
    assert dev.local_mem_size > 0 and dev.global_mem_size > 0
    for a in ("cpu", "fp16", "fp64", "atomic64", "usm_device_allocations",
              "usm_shared_allocations", "usm_host_allocations", "online_compiler",
              "online_linker", "queue_profiling"):
        assert dev.has(getattr(sycl.aspect, a)), a
    assert not dev.has(sycl.aspect.gpu)
    assert sycl.aspect.fp64 in dev.aspects
    assert dev.target.name == "native_cpu"


def test_platforms_list_native_cpu_first():
    plats = sycl.platform.get_platforms()
    assert plats[0].backend == sycl.backend.native_cpu
    assert plats[0].get_devices()[0] == sycl.device(sycl.cpu_selector_v)
    assert all(d.is_cpu() for d in sycl.device.get_devices(sycl.info.device_type.cpu))


def test_default_selector_prefers_gpu_then_native_cpu():
    dev = sycl.device()
    if any(d.is_gpu() for d in sycl.device.get_devices()):
        assert dev.is_gpu()
    else:
        assert dev.backend == sycl.backend.native_cpu


def test_selector_with_no_device_is_errc_runtime():
    with pytest.raises(sycl.exception) as e:
        sycl.device(lambda d: -1)
    assert e.value.code() == sycl.errc.runtime


@pytest.mark.parametrize("bad", [3, "gpu", 2.5])
def test_device_of_what_is_no_selector_is_errc_invalid(bad):
    # Not a selector, a device nor a function to decorate: the error says what sycl.device
    # takes (it said "@sycl.device needs a Python function").
    with pytest.raises(sycl.exception) as e:
        sycl.device(bad)
    assert e.value.code() == sycl.errc.invalid and "selector" in str(e.value)


def test_aspect_selector_and_callable_scores():
    assert sycl.device(sycl.aspect_selector(sycl.aspect.fp64)).has(sycl.aspect.fp64)
    with pytest.raises(sycl.exception):
        sycl.device(sycl.aspect_selector(sycl.aspect.cpu, sycl.aspect.gpu))
    names = [d.name for d in sycl.device.get_devices()]
    assert sycl.device(lambda d: 1 if d.backend == sycl.backend.native_cpu else 0).backend \
        == sycl.backend.native_cpu
    assert names


def test_every_device_descriptor_is_answered_with_its_type():
    # SYCL 2020 4.6.4.4: each sycl.info.device descriptor answers on every device (a
    # root device has no parent: errc.invalid), with the type the spec gives it.
    ints = ("vendor_id", "max_clock_frequency", "max_parameter_size",
            "global_mem_cache_line_size", "global_mem_cache_size",
            "profiling_timer_resolution", "max_mem_alloc_size", "mem_base_addr_align")
    for dev in sycl.device.get_devices():
        for name in sycl.info.device.__members__:
            descriptor = getattr(sycl.info.device, name)
            if name == "parent_device":
                with pytest.raises(sycl.exception):
                    dev.get_info(descriptor)
                continue
            value = dev.get_info(descriptor)
            if name in ints or "vector_width" in name:
                assert isinstance(value, int) and not isinstance(value, bool) and value >= 0
        info = sycl.info.device
        assert dev.get_info(info.global_mem_cache_type) in list(sycl.info.global_mem_cache_type)
        single = dev.get_info(info.single_fp_config)
        assert single and all(isinstance(c, sycl.info.fp_config) for c in single)
        assert (dev.get_info(info.double_fp_config) != []) == dev.has(sycl.aspect.fp64)
        assert (dev.get_info(info.preferred_vector_width_double) > 0) == dev.has(sycl.aspect.fp64)
        orders = dev.get_info(info.atomic_memory_order_capabilities)
        assert sycl.memory_order.relaxed in orders
        assert all(isinstance(o, sycl.memory_order) for o in orders)
        scopes = dev.get_info(info.atomic_fence_scope_capabilities)
        assert sycl.memory_scope.work_group in scopes
        ctx = sycl.context(dev)
        assert set(ctx.get_info(sycl.info.context.atomic_memory_scope_capabilities)) == \
            set(dev.get_info(info.atomic_memory_scope_capabilities))
        assert isinstance(dev.get_info(info.backend_version), str)
        assert dev.get_info(info.profile) in ("FULL_PROFILE", "EMBEDDED_PROFILE")
        kind = dev.get_info(info.local_mem_type)
        assert kind in list(sycl.info.local_mem_type)
        if dev.is_cpu():     # the CPU devices keep local memory in the host's RAM
            assert kind is sycl.info.local_mem_type["global"] is \
                sycl.info.local_mem_type.global_
        assert dev.get_platform().get_info(sycl.info.platform.profile) in (
            "FULL_PROFILE", "EMBEDDED_PROFILE")


def test_platform_of_a_selector_or_device():
    # SYCL 2020 4.6.2: platform(selector) is the platform of the device it chooses.
    assert sycl.platform() == sycl.device().get_platform()
    for dev in sycl.device.get_devices():
        p = sycl.platform(lambda d, dev=dev: 1 if d == dev else -1)
        assert p == dev.get_platform() and dev in p.get_devices()
        assert sycl.platform(dev) == p
    assert sycl.platform(sycl.cpu_selector_v).get_devices(sycl.info.device_type.cpu)
    with pytest.raises(sycl.exception) as e:
        sycl.platform(lambda d: -1)
    assert e.value.code() == sycl.errc.runtime


def test_memory_and_address_descriptors():
    # SYCL 2020 4.6.4.4: answered on every device, consistent with what it does.
    import sys

    import numpy as np
    for dev in sycl.device.get_devices():
        info = sycl.info.device
        assert dev.get_info(info.is_available) is True
        assert dev.get_info(info.address_bits) == 64
        if dev.is_cpu():
            assert dev.get_info(info.is_endian_little) == (sys.byteorder == "little")
        limit = dev.get_info(info.max_mem_alloc_size)
        assert 0 < limit <= dev.get_info(info.global_mem_size)
        align_bits = dev.get_info(info.mem_base_addr_align)
        assert align_bits % 8 == 0 and align_bits >= 64
        q = sycl.queue(dev)
        for n in (1, 3, 1000):
            assert sycl.malloc_device(n, np.int8, q).ptr % (align_bits // 8) == 0
        groups = dev.get_info(info.max_num_sub_groups)
        smallest = min(dev.get_info(info.sub_group_sizes))
        assert groups * smallest <= dev.get_info(info.max_work_group_size) < (groups + 1) * smallest


def test_aspect_selector_takes_cpp_aspect_and_deny_lists():
    # aspect_selector(aspect_list, deny_list), as C++ spells it with two vectors.
    dev = sycl.device(sycl.aspect_selector([sycl.aspect.cpu], [sycl.aspect.gpu]))
    assert dev.has(sycl.aspect.cpu) and not dev.has(sycl.aspect.gpu)
    with pytest.raises(sycl.exception) as e:
        sycl.device(sycl.aspect_selector([sycl.aspect.cpu], [sycl.aspect.cpu]))
    assert e.value.code() == sycl.errc.runtime


def test_queue_selector_with_context_chooses_among_the_context_devices():
    # queue(context, selector): the device comes from the context (SYCL 2020 4.6.5.1),
    # not from every visible device; here a context of one sub-device of the CPU.
    parent = sycl.device(sycl.cpu_selector_v)
    sub = parent.create_sub_devices(sycl.info.partition_property.partition_equally, 1)[-1]
    ctx = sycl.context(sub)
    for q in (sycl.queue(ctx, sycl.cpu_selector_v), sycl.queue(sycl.default_selector_v, ctx)):
        assert q.get_device() == sub and q.get_context() is ctx
    with pytest.raises(sycl.exception) as e:
        sycl.queue(ctx, sycl.gpu_selector_v)
    assert e.value.code() == sycl.errc.runtime


def test_device_selector_env(monkeypatch):
    monkeypatch.setenv("PYSYCL_DEVICE_SELECTOR", "native_cpu")
    assert [d.backend for d in sycl.device.get_devices()] == [sycl.backend.native_cpu]
    monkeypatch.setenv("PYSYCL_DEVICE_SELECTOR", "opencl:gpu,cuda:*")
    devs = sycl.device.get_devices()
    assert all(d.backend != sycl.backend.native_cpu for d in devs)
    if not devs:
        with pytest.raises(sycl.exception) as e:
            sycl.device()
        assert e.value.code() == sycl.errc.runtime
    monkeypatch.setenv("PYSYCL_DEVICE_SELECTOR", "!native_cpu")
    assert all(d.backend != sycl.backend.native_cpu for d in sycl.device.get_devices())
    monkeypatch.setenv("PYSYCL_DEVICE_SELECTOR", "bogus:gpu")
    with pytest.raises(sycl.exception) as e:
        sycl.device.get_devices()
    assert e.value.code() == sycl.errc.invalid and "bogus" in str(e.value)


def test_filter_terms():
    t = filters.parse("opencl:cpu,gpu;cuda:0")
    assert t == [(False, "opencl", "cpu"), (False, "opencl", "gpu"), (False, "cuda", "0")]
    assert filters.matches(t, "cuda", "gpu", 0) and not filters.matches(t, "cuda", "gpu", 1)
    assert filters.matches(filters.parse("cuda:*"), "cuda", "gpu", 3)
    assert not filters.matches(filters.parse("native_cpu"), "opencl", "cpu", 0)


def test_context_and_queue():
    dev = sycl.device(sycl.cpu_selector_v)
    ctx = sycl.context(dev)
    assert ctx.get_devices() == [dev]
    q = sycl.queue(dev, ctx, in_order=True)
    assert q.get_device() == dev and q.get_context() is ctx and q.is_in_order()
    others = [d for d in sycl.device.get_devices() if d.backend != dev.backend]
    if others:
        with pytest.raises(sycl.exception) as e:
            sycl.context([dev, others[0]])
        assert e.value.code() == sycl.errc.invalid
        with pytest.raises(sycl.exception):
            sycl.queue(others[0], ctx)


def test_registry():
    assert registry.get_driver("native_cpu").name == "native_cpu"
    assert registry.all_devices()[0].backend == "native_cpu"
    assert registry.backend_of_target("spirv64v1.2") == "opencl"
    with pytest.raises(sycl.exception) as e:
        registry.get_driver("vulkan")
    assert e.value.code() == sycl.errc.platform
    assert registry.get_compiler("native_cpu").target.name == "native_cpu"
