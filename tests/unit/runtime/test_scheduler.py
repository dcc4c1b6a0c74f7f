"""Ordering of command groups: buffers (RAW/WAR/WAW), depends_on, in-order queues,
events, profiling and asynchronous errors."""
import threading
import time

import numpy as np
import pytest

from runtime_api import sycl


def _slow_writer(buf, value, delay):
    def cgf(cgh):
        acc = sycl.accessor(buf, cgh, sycl.write_only)

        def task():
            time.sleep(delay)
            acc[:] = value
        cgh.host_task(task)
    return cgf


def test_raw_war_waw_on_out_of_order_queue():
    q = sycl.queue()
    assert not q.is_in_order()
    data = np.zeros(4, np.int64)
    seen = {}
    with sycl.buffer(data) as buf:
        q.submit(_slow_writer(buf, 1, 0.2))                   # W1 (slow)

        def read(cgh):                                        # RAW after W1
            acc = sycl.accessor(buf, cgh, sycl.read_only)
            cgh.host_task(lambda: seen.setdefault("read", acc[0]))
        q.submit(read)
        q.submit(_slow_writer(buf, 2, 0.05))                  # WAR after the read, WAW
        q.wait()
    assert seen["read"] == 1
    assert data.tolist() == [2] * 4


def test_read_write_accumulates_in_submission_order():
    q = sycl.queue()
    a = np.zeros(1, np.int64)
    buf = sycl.buffer(a)
    for i in range(20):
        def cgf(cgh, i=i):
            acc = buf.get_access(cgh, sycl.read_write)

            def task():
                if i == 0:
                    time.sleep(0.05)
                acc[0] = acc[0] * 2 + 1
            cgh.host_task(task)
        q.submit(cgf)
    buf.close()
    assert a[0] == 2 ** 20 - 1


def test_host_accessor_waits_for_writers_and_blocks_later_commands():
    q = sycl.queue()
    buf = sycl.buffer((3,), np.float32)
    q.submit(_slow_writer(buf, 5.0, 0.1))
    with sycl.host_accessor(buf, sycl.read_write) as view:
        assert view.tolist() == [5.0] * 3
        ev = q.submit(_slow_writer(buf, 6.0, 0.0))
        time.sleep(0.05)
        assert ev.status != sycl.info.event_command_status.complete   # waits for the accessor
        view[0] = 9.0
    ev.wait()
    with sycl.host_accessor(buf, sycl.read_only) as view:
        assert view.tolist() == [6.0] * 3
        assert not view.flags.writeable


def test_buffer_writes_back_non_contiguous_array():
    base = np.zeros((4, 4), np.int32)
    col = base[:, 1]
    q = sycl.queue()
    with sycl.buffer(col) as buf:
        q.submit(_slow_writer(buf, 3, 0.0))
    assert base[:, 1].tolist() == [3] * 4 and base[:, 0].tolist() == [0] * 4


def test_no_init_on_read_only_is_an_accessor_error():
    q = sycl.queue()
    buf = sycl.buffer((2,), np.int32)
    with pytest.raises(sycl.exception) as e:
        q.submit(lambda cgh: sycl.accessor(buf, cgh, sycl.read_only, sycl.no_init))
    assert e.value.code() == sycl.errc.accessor


def test_depends_on_orders_host_tasks():
    q = sycl.queue()
    order = []
    e1 = q.submit(lambda cgh: cgh.host_task(lambda: (time.sleep(0.1), order.append(1))))
    e2 = q.submit(lambda cgh: (cgh.depends_on(e1), cgh.host_task(lambda: order.append(2))))
    e3 = q.host_task(lambda: order.append(3), depends_on=[e1, e2])
    e3.wait()
    assert order == [1, 2, 3]
    assert e1.status == sycl.info.event_command_status.complete


def test_in_order_queue_runs_in_submission_order():
    q = sycl.queue(in_order=True)
    order = []
    for i in range(10):
        q.host_task(lambda i=i: (time.sleep(0.01 if i == 0 else 0), order.append(i)))
    d = sycl.malloc_shared(1, np.int64, q)
    q.fill(d, 42)
    q.host_task(lambda: order.append(int(np.asarray(d)[0])))
    q.wait()
    assert order == list(range(10)) + [42]


def test_submit_returns_before_work_runs():
    q = sycl.queue()
    gate = threading.Event()
    ev = q.host_task(gate.wait)
    assert ev.status != sycl.info.event_command_status.complete
    gate.set()
    ev.wait()
    assert ev.status == sycl.info.event_command_status.complete


def test_profiling_timestamps():
    q = sycl.queue(enable_profiling=True)
    ev = q.host_task(lambda: time.sleep(0.02))
    ev.wait()
    s, b, e = (ev.profiling_command_submit, ev.profiling_command_start,
               ev.profiling_command_end)
    assert s <= b <= e and e - b >= 15_000_000


def test_profiling_without_enable_profiling_is_errc_invalid():
    # SYCL 2020 4.6.6: get_profiling_info throws errc::invalid on such a queue.
    q = sycl.queue()
    ev = q.host_task(lambda: None)
    with pytest.raises(sycl.exception) as e:
        ev.profiling_command_start
    assert e.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as e:
        ev.get_profiling_info(sycl.info.event_profiling.command_end)
    assert e.value.code() == sycl.errc.invalid


def test_get_info_refuses_descriptors_of_another_class():
    # C++ rejects dev.get_info<info::platform::name>() at compile time; here the
    # descriptor's value names an attribute the device also has.
    q = sycl.queue(enable_profiling=True)
    ev = q.host_task(lambda: None)
    ev.wait()
    dev = q.get_device()
    cases = [(dev, sycl.info.platform.name), (dev, sycl.info.queue.device),
             (q, sycl.info.device.name), (ev, sycl.info.event_profiling.command_end),
             (q.get_context(), sycl.info.device.platform)]
    for obj, descriptor in cases:
        with pytest.raises(sycl.exception) as e:
            obj.get_info(descriptor)
        assert e.value.code() == sycl.errc.invalid
        assert f"info.{type(descriptor).__name__.lstrip('_')}.{descriptor.name}" in str(e.value)
    with pytest.raises(sycl.exception) as e:
        ev.get_profiling_info(sycl.info.event.command_execution_status)
    assert e.value.code() == sycl.errc.invalid
    assert ev.get_profiling_info(sycl.info.event_profiling.command_end) >= \
        ev.get_profiling_info(sycl.info.event_profiling.command_start)
    assert dev.get_info(sycl.info.device.name) == dev.name


def test_static_event_wait_takes_a_list():
    # SYCL's static event::wait(event_list) and event::wait_and_throw(event_list).
    q = sycl.queue()
    gate = threading.Event()
    done = []
    evs = [q.host_task(lambda i=i: (gate.wait(), done.append(i))) for i in range(3)]
    gate.set()
    sycl.event.wait(evs)
    assert sorted(done) == [0, 1, 2]
    assert all(e.status == sycl.info.event_command_status.complete for e in evs)
    seen = []
    qh = sycl.queue(async_handler=seen.extend)
    bad = qh.host_task(lambda: 1 / 0)
    sycl.event.wait_and_throw([bad, sycl.event()])
    assert len(seen) == 1 and isinstance(seen[0], ZeroDivisionError)
    failing = q.host_task(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        sycl.event.wait([failing])
    with pytest.raises(sycl.exception) as e:
        sycl.event.wait([evs[0], 5])
    assert e.value.code() == sycl.errc.invalid


def test_host_task_exception_reaches_async_handler():
    seen = []
    q = sycl.queue(async_handler=seen.extend)
    q.host_task(lambda: 1 / 0)
    after = q.host_task(lambda: None)
    q.wait_and_throw()
    assert len(seen) == 1 and isinstance(seen[0], ZeroDivisionError)
    assert after.status == sycl.info.event_command_status.complete
    q.wait_and_throw()                       # handled errors are not repeated
    assert len(seen) == 1


def test_host_task_exception_raised_without_handler():
    q = sycl.queue()
    q.host_task(lambda: (_ for _ in ()).throw(ValueError("boom")))
    with pytest.raises(ValueError, match="boom"):
        q.wait_and_throw()
    q.host_task(lambda: None).wait()        # the queue is still usable
    q.throw_asynchronous()


def test_default_event_is_complete():
    ev = sycl.event()
    ev.wait()
    assert ev.status == sycl.info.event_command_status.complete
    assert ev.get_backend() == sycl.device().get_backend()


def test_event_get_backend_is_its_queues():
    for dev in sycl.device.get_devices():
        q = sycl.queue(dev)
        assert q.host_task(lambda: None).get_backend() == dev.get_backend()
        assert q.submit_barrier().get_backend() == dev.get_backend()


def test_long_dependency_chain_does_not_recurse():
    q = sycl.queue(in_order=True)
    gate = threading.Event()
    q.host_task(gate.wait)
    d = sycl.malloc_shared(1, np.int64, q)
    for _ in range(3000):
        q.fill(d, 1)
    gate.set()
    q.wait()
    assert np.asarray(d)[0] == 1


@sycl.kernel
def _copy_scaled(it: sycl.item[1], src: sycl.global_ptr[np.float32],
                 dst: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    dst[i] = src[i] * 2.0


def test_launches_holding_arrays_are_forgotten_once_finished(queue):
    # Launches with host arrays as arguments hold them until they finish. An out-of-order
    # queue forgets finished launches as it goes (asking the backend), so a long launch
    # loop neither keeps every array alive nor rescans a growing list at each launch.
    rng = np.random.default_rng(7)
    src = rng.standard_normal(64, dtype=np.float32)
    dst = np.zeros_like(src)
    longest = 0
    for n in range(3000):
        ev = queue.parallel_for(sycl.range(64), _copy_scaled, src, dst)
        if n % 400 == 399:
            ev.wait()   # everything before it on the queue's stream finished too
        longest = max(longest, len(queue._outstanding))
    queue.wait()
    np.testing.assert_array_equal(dst, src * 2)
    assert longest <= 2 * 400 + 256


@pytest.mark.parametrize("in_order", [False, True])
def test_host_task_waiting_for_itself_is_an_error_not_a_hang(in_order):
    # q.wait() (or its own event's wait) inside a host task of q would wait for that
    # host task: errc.invalid instead of a deadlock. Other queues can be waited on.
    q = sycl.queue(in_order=in_order)
    other = sycl.queue()
    other_done = other.host_task(lambda: time.sleep(0.01))
    seen = []
    own = []

    def task():
        for what, wait in (("queue", q.wait), ("event", lambda: own[0].wait()),
                           ("other", other.wait)):
            try:
                wait()
                seen.append((what, "waited"))
            except sycl.exception as e:
                seen.append((what, e.code()))
    own.append(q.host_task(task))
    finished = threading.Event()
    threading.Thread(target=lambda: (own[0].wait(), finished.set()), daemon=True).start()
    assert finished.wait(30), "the host task hung"
    assert seen == [("queue", sycl.errc.invalid), ("event", sycl.errc.invalid),
                    ("other", "waited")]
    assert other_done.status == sycl.info.event_command_status.complete
    q.wait()


def test_event_get_wait_list():
    # SYCL 2020 4.6.6: the events a command waits for (depends_on, the earlier user of
    # a buffer, the previous command of an in-order queue).
    q = sycl.queue()
    gate = threading.Event()
    first = q.host_task(lambda: gate.wait(10))
    second = q.host_task(lambda: None)
    both = q.host_task(lambda: None, depends_on=[first, second, first])
    assert both.get_wait_list() == [first, second] and first.get_wait_list() == []
    buf = sycl.buffer(np.zeros(4))

    def use(mode):
        def cgf(cgh):
            acc = sycl.accessor(buf, cgh, mode)
            cgh.host_task(lambda: acc[0])
        return cgf
    writer = q.submit(use(sycl.read_write))
    reader = q.submit(use(sycl.read_only))
    assert reader.get_wait_list() == [writer]
    in_order = sycl.queue(in_order=True)
    head = in_order.host_task(lambda: gate.wait(10))
    tail = in_order.host_task(lambda: None)
    assert tail.get_wait_list() == [head]
    gate.set()
    q.wait()
    in_order.wait()
    assert sycl.event().get_wait_list() == []
    buf.close()
