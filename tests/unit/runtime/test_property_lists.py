"""Property lists as SYCL 2020 writes them (4.5.4): sycl.property_list and the
sycl.property.queue/buffer namespaces, besides the keyword forms."""
import threading

import numpy as np
import pytest

import pysycl as sycl

P = sycl.property


def test_queue_property_list(device):
    q = sycl.queue(device, sycl.property_list([P.queue.in_order(), P.queue.enable_profiling()]))
    assert q.is_in_order()
    assert q.has_property(P.queue.in_order) and q.has_property(P.queue.enable_profiling)
    assert q.get_property(P.queue.in_order) == P.queue.in_order()
    order = []
    for i in range(5):       # in order: host tasks run one after another, in submit order
        q.host_task(lambda i=i: order.append(i))
    ev = q.fill(sycl.malloc_device(4, np.int32, q), 1)
    q.wait()
    assert order == list(range(5))
    submit, start, end = (ev.get_profiling_info(getattr(sycl.info.event_profiling, n))
                          for n in ("command_submit", "command_start", "command_end"))
    assert submit <= start <= end


def test_queue_keyword_and_list_forms_agree(device):
    a = sycl.queue(device, in_order=True)
    b = sycl.queue(device, properties=sycl.property_list([P.queue.in_order()]))
    c = sycl.queue(device, properties=P.queue.in_order())
    for q in (a, b, c):
        assert q.is_in_order() and q.has_property("in_order")
        assert not q.has_property(P.queue.enable_profiling)
        with pytest.raises(sycl.exception) as e:
            q.get_property(P.queue.enable_profiling)
        assert e.value.code() == sycl.errc.invalid


def test_queue_positional_forms_of_cpp(device):
    # C++'s queue(property_list), queue(selector, async_handler, property_list),
    # queue(device, async_handler, property_list) and queue(context, device or selector,
    # async_handler, property_list), told apart by type; property_list(p1, p2).
    seen = []
    handler = seen.extend
    ctx = sycl.context(device)
    in_order = sycl.property_list(P.queue.in_order(), P.queue.enable_profiling())
    assert len(in_order) == 2
    queues = [sycl.queue(device, handler, in_order), sycl.queue(ctx, device, handler, in_order),
              sycl.queue(ctx, lambda d: 1 if d == device else -1, handler, [P.queue.in_order()]),
              sycl.queue(device, [P.queue.in_order()], async_handler=handler)]
    for q in queues:
        assert q.get_device() == device and q.is_in_order() and q._async_handler is handler
    assert queues[1].get_context() is ctx and queues[2].get_context() is ctx
    assert sycl.queue(in_order).is_in_order()
    assert sycl.queue(sycl.default_selector_v, handler)._async_handler is handler
    failing = queues[0].host_task(lambda: 1 / 0)
    failing.wait()
    queues[0].wait_and_throw()
    assert len(seen) == 1 and isinstance(seen[0], ZeroDivisionError)
    with pytest.raises(sycl.exception) as e:
        sycl.queue(device, handler, async_handler=handler)
    assert e.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as e:
        sycl.queue(device, handler, 42)
    assert e.value.code() == sycl.errc.invalid and "42" in str(e.value)


@pytest.mark.parametrize("bad", [[P.buffer.use_host_ptr()], ["in_order"], [42],
                                 [P.queue.in_order(), P.queue.in_order()]])
def test_queue_refuses_what_is_not_a_queue_property(device, bad):
    with pytest.raises(sycl.exception) as e:
        sycl.queue(device, properties=bad)
    assert e.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as e:
        sycl.queue(device, sycl.property_list(bad))
    assert e.value.code() == sycl.errc.invalid


def test_buffer_use_host_ptr_works_in_the_array(queue):
    data = np.random.default_rng(1).random(16)
    buf = sycl.buffer(data, sycl.property_list([P.buffer.use_host_ptr()]))
    assert buf.has_property(P.buffer.use_host_ptr) and not buf.has_property(P.buffer.use_mutex)
    with sycl.host_accessor(buf) as h:
        assert np.asarray(h).ctypes.data == data.ctypes.data
    queue.submit(lambda cgh: cgh.fill(sycl.accessor(buf, cgh, sycl.write_only), 2.5)).wait()
    buf.close()
    np.testing.assert_array_equal(data, np.full(16, 2.5))
    with pytest.raises(sycl.exception) as e:
        sycl.buffer(np.arange(10.0)[::2], properties=[P.buffer.use_host_ptr()])
    assert e.value.code() == sycl.errc.invalid


def test_buffer_use_mutex_is_held_for_write_back(queue):
    events = []

    class Recording:
        def __init__(self):
            self.lock = threading.Lock()

        def acquire(self, *a):
            events.append("acquire")
            return self.lock.acquire(*a)

        def release(self):
            events.append("release")
            self.lock.release()

        __enter__ = acquire

        def __exit__(self, *exc):
            self.release()

    mutex = Recording()
    data = np.random.default_rng(2).random(8)[::2]       # not contiguous: written back
    buf = sycl.buffer(data, properties=sycl.property_list([P.buffer.use_mutex(mutex)]))
    assert buf.get_property(P.buffer.use_mutex).get_mutex_ptr() is mutex
    queue.submit(lambda cgh: cgh.fill(sycl.accessor(buf, cgh, sycl.write_only), 7.0)).wait()
    buf.close()
    assert events == ["acquire", "release"] and (data == 7.0).all()
    with pytest.raises(sycl.exception):
        P.buffer.use_mutex(object())


def test_buffer_context_bound(device):
    ctx = sycl.context(device)
    q_in, q_out = sycl.queue(ctx, device), sycl.queue(device)
    data = np.zeros(4)
    buf = sycl.buffer(data, properties=[P.buffer.context_bound(ctx)])
    assert buf.get_property(P.buffer.context_bound).get_context() is ctx
    q_in.submit(lambda cgh: cgh.fill(sycl.accessor(buf, cgh, sycl.write_only), 3.0)).wait()
    with pytest.raises(sycl.exception) as e:
        q_out.submit(lambda cgh: cgh.fill(sycl.accessor(buf, cgh), 1.0))
    assert e.value.code() == sycl.errc.invalid and "context_bound" in str(e.value)
    buf.close()
    assert (data == 3.0).all()


def test_buffer_of_a_shape_takes_a_positional_property_list(device):
    # buffer(shape, dtype, property_list), as C++'s buffer(range, property_list).
    ctx = sycl.context(device)
    q = sycl.queue(ctx, device)
    shape = tuple(int(v) for v in np.random.default_rng(3).integers(2, 6, 2))
    buf = sycl.buffer(shape, np.int32, sycl.property_list(P.buffer.context_bound(ctx)))
    assert buf.get_property(P.buffer.context_bound).get_context() is ctx
    q.submit(lambda cgh: cgh.fill(sycl.accessor(buf, cgh, sycl.write_only), np.int32(9))).wait()
    with sycl.host_accessor(buf, sycl.read_only) as view:
        assert view.shape == shape and (np.asarray(view) == 9).all()
    with pytest.raises(sycl.exception) as e:
        sycl.queue(device).submit(lambda cgh: cgh.fill(sycl.accessor(buf, cgh), np.int32(1)))
    assert e.value.code() == sycl.errc.invalid


def test_context_property_list(device):
    ctx = sycl.context(device, sycl.property_list([]))
    assert not ctx.has_property(P.queue.in_order)
    with pytest.raises(sycl.exception) as e:
        sycl.context(device, sycl.property_list([P.queue.in_order()]))
    assert e.value.code() == sycl.errc.invalid


def test_property_namespace_is_the_property_base():
    assert isinstance(P.queue.in_order(), sycl.property)
    assert isinstance(sycl.restrict, sycl.property) and not isinstance(3, sycl.property)
    assert P.no_init is sycl.no_init
    assert sycl.property_list([P.queue.in_order()]) == sycl.properties(P.queue.in_order())


def test_queue_get_info(device):
    ctx = sycl.context(device)
    q = sycl.queue(ctx, device)
    assert q.get_info(sycl.info.queue.device) == device
    assert q.get_info(sycl.info.queue.context) is ctx
