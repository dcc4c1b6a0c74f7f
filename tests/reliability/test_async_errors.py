"""Asynchronous errors are never lost (a host task's exception, a failed launch, a
failed debug check): without an ``async_handler`` ``wait()`` on the failed command and
``queue.wait()`` raise them; with one they go there; a command that depends on a
failed one does not run and its event carries the error; errors nobody saw when the
queue is collected go to the handler or stderr."""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl


@pytest.fixture
def rng():
    return np.random.default_rng(2122)


@sycl.kernel
def double(i: sycl.item[1], a: sycl.accessor[np.float32, 1]):
    a[i] = a[i] * 2.0


@sycl.kernel
def add_one(i: sycl.item[1], a: sycl.global_ptr[np.float32]):
    a[i] = a[i] + 1.0


class Boom(ValueError):
    pass


def _fail():
    raise Boom("host task failed")


def test_wait_on_failed_host_task_raises_the_original(queue):
    ev = queue.host_task(_fail)
    with pytest.raises(Boom, match="host task failed"):
        ev.wait()
    with pytest.raises(Boom):                 # the event keeps carrying it
        ev.wait()
    queue.wait()                              # delivered once: the queue does not repeat it
    queue.throw_asynchronous()


def test_queue_wait_raises_an_unseen_error(queue):
    queue.host_task(_fail)
    ok = queue.host_task(lambda: None)
    with pytest.raises(Boom):
        queue.wait()
    assert ok.status == sycl.info.event_command_status.complete
    queue.wait()                              # nothing left


def test_in_order_queue_wait_raises(device):
    q = sycl.queue(device, in_order=True)
    q.host_task(_fail)
    with pytest.raises(Boom):
        q.wait()


def test_several_errors_raise_one_exception_listing_them(queue):
    a, b = queue.host_task(_fail), queue.host_task(lambda: 1 / 0)
    with pytest.raises(sycl.exception) as info:
        queue.wait()
    assert info.value.code() == sycl.errc.runtime
    kinds = sorted(type(e).__name__ for e in info.value.exceptions)
    assert kinds == ["Boom", "ZeroDivisionError"]
    for ev in (a, b):                          # each event still raises its own
        with pytest.raises((Boom, ZeroDivisionError)):
            ev.wait()


def test_with_a_handler_errors_go_there_not_to_wait(device):
    seen = []
    q = sycl.queue(device, async_handler=seen.extend)
    ev = q.host_task(_fail)
    ev.wait()                                 # no raise: the handler takes errors
    q.wait()
    assert seen == []
    q.wait_and_throw()
    assert len(seen) == 1 and isinstance(seen[0], Boom)
    q.throw_asynchronous()
    assert len(seen) == 1                     # delivered once


def test_dependant_of_a_failed_command_does_not_run(queue, rng):
    x = rng.standard_normal(16).astype(np.float32)
    ran = []
    first = queue.host_task(_fail)
    second = queue.submit(lambda cgh: (cgh.depends_on(first),
                                       cgh.host_task(lambda: ran.append(1))))
    with pytest.raises(Boom):
        second.wait()                         # it carries the error it did not run for
    assert ran == []
    # A buffer whose writer failed: the reader does not run on its stale contents.
    data = x.copy()
    with pytest.raises(Boom):
        with sycl.buffer(data) as b:
            def write(cgh):
                acc = sycl.accessor(b, cgh)
                cgh.host_task(lambda: (acc.__setitem__(0, 7.0), _fail()))
            queue.submit(write)
            queue.submit(lambda cgh: cgh.parallel_for(sycl.range(16), double,
                                                      sycl.accessor(b, cgh)))
    assert data[0] == 7.0 and np.array_equal(data[1:], x[1:])   # no doubling ran


def test_a_failure_already_seen_no_longer_blocks(device, rng):
    q = sycl.queue(device, in_order=True)
    a = sycl.malloc_shared(8, np.float32, q)
    x = rng.standard_normal(8).astype(np.float32)
    try:
        np.asarray(a)[:] = x
        q.host_task(_fail)
        with pytest.raises(Boom):
            q.wait()
        q.parallel_for(sycl.range(8), add_one, a).wait()   # the queue is usable again
        np.testing.assert_allclose(np.asarray(a), x + 1.0, rtol=1e-6)
    finally:
        sycl.free(a, q)


def test_failed_debug_check_raises_at_wait(queue, monkeypatch):
    if queue.get_device().backend != sycl.backend.native_cpu:
        pytest.skip("debug checks report on native_cpu")
    monkeypatch.setenv("PYSYCL_DEBUG", "bounds")

    @sycl.kernel
    def past_end(it: sycl.item[1], x: sycl.accessor[np.float32, 1, sycl.read_only],
                 y: sycl.accessor[np.float32, 1, sycl.write_only]):
        y[it] = x[it.get_id(0) + 1]
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    bx, by = sycl.buffer(x), sycl.buffer(y)
    ev = queue.submit(lambda cgh: cgh.parallel_for(
        4, past_end, sycl.accessor(bx, cgh, sycl.read_only),
        sycl.accessor(by, cgh, sycl.write_only)))
    with pytest.raises(sycl.exception) as info:
        ev.wait()
    assert info.value.code() == sycl.errc.kernel and "past_end" in str(info.value)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))


@pytest.mark.parametrize("backend", ["native_cpu", "opencl"])
def test_unseen_error_of_a_collected_queue_goes_to_stderr(device, backend):
    if device.backend.name != backend:
        pytest.skip("one run per device")
    r = _run(f"""
        import gc, pysycl as sycl
        dev = [d for d in sycl.device.get_devices() if d.backend.name == {backend!r}][0]
        q = sycl.queue(dev)
        q.host_task(lambda: 1 / 0)
        import time; time.sleep(0.2)
        del q
        gc.collect()
        print("still running")
    """)
    assert r.returncode == 0, r.stderr
    assert "still running" in r.stdout
    assert "ZeroDivisionError" in r.stderr and "never" in r.stderr


def test_unseen_error_of_a_collected_queue_goes_to_its_handler(device):
    seen = []
    q = sycl.queue(device, async_handler=seen.extend)
    q.host_task(_fail).wait()
    del q
    gc.collect()
    assert len(seen) == 1 and isinstance(seen[0], Boom)


def test_unseen_error_at_exit_is_printed():
    r = _run("""
        import time, pysycl as sycl
        q = sycl.queue()
        ev = q.host_task(lambda: 1 / 0)
        while ev.status != sycl.info.event_command_status.complete:
            time.sleep(0.01)
    """)
    assert r.returncode == 0
    assert "ZeroDivisionError" in r.stderr



def test_in_order_launch_after_an_unseen_failure_does_not_run(device, rng):
    """The shortcut of a kernel launched before (queue.parallel_for's fast path) also
    leaves a launch after a failed, unseen command unrun."""
    q = sycl.queue(device, in_order=True)
    a = sycl.malloc_shared(8, np.float32, q)
    x = rng.standard_normal(8).astype(np.float32)
    try:
        np.asarray(a)[:] = x
        q.parallel_for(sycl.range(8), add_one, a).wait()
        q.parallel_for(sycl.range(8), add_one, a).wait()      # the shortcut is set up
        q.host_task(_fail)
        ev = q.parallel_for(sycl.range(8), add_one, a)
        with pytest.raises(Boom):
            ev.wait()
        np.testing.assert_allclose(np.asarray(a), x + 2.0, rtol=1e-6)
        q.wait()                              # seen through ev: nothing left
    finally:
        sycl.free(a, q)


def test_queue_and_context_take_an_async_handler_alone():
    """SYCL 2020's queue(async_handler) and context(async_handler): a lone callable that
    takes the exception list is the handler (a selector takes a device); a queue without
    a handler of its own uses its context's (4.13.1.2)."""
    seen = []

    def async_handler(exceptions):
        for e in exceptions:
            seen.append(e)

    q = sycl.queue(async_handler)
    assert q.get_device() == sycl.device()
    q.host_task(_fail)
    q.wait_and_throw()
    assert len(seen) == 1 and isinstance(seen[0], Boom)
    q2 = sycl.queue(lambda exc_list: seen.extend(exc_list),
                    sycl.property_list([sycl.property.queue.in_order()]))
    assert q2.is_in_order()
    q2.host_task(_fail)
    q2.wait_and_throw()
    assert len(seen) == 2
    ctx = sycl.context(async_handler)
    q3 = sycl.queue(ctx, sycl.default_selector_v)
    q3.host_task(_fail)
    q3.wait_and_throw()
    assert len(seen) == 3 and all(isinstance(e, Boom) for e in seen)
    # A selector stays a selector.
    assert sycl.queue(lambda dev: 1 if dev == sycl.device() else -1).get_device() == sycl.device()


@pytest.mark.parametrize("fatal", [KeyboardInterrupt, SystemExit])
def test_interrupt_in_a_host_task_is_raised_not_handed_to_the_handler(device, fatal):
    """KeyboardInterrupt/SystemExit from a host task end the program, not a command:
    queue.wait()/wait_and_throw() raise them even with an async_handler, which never
    sees them (it could swallow them), and other errors still reach the handler."""
    seen = []
    q = sycl.queue(device, async_handler=seen.extend)

    def stop():
        raise fatal()

    q.host_task(_fail).wait()
    q.host_task(stop)
    with pytest.raises(fatal):
        q.wait_and_throw()
    assert seen == []
    q.wait_and_throw()                # the ordinary error is kept for the handler
    assert len(seen) == 1 and isinstance(seen[0], Boom)
    q.host_task(stop)
    with pytest.raises(fatal):
        q.wait()
    q.wait_and_throw()
    assert len(seen) == 1
    plain = sycl.queue(device)
    for run in (_fail, stop, _fail):
        plain.host_task(run)
    with pytest.raises(fatal):        # not folded into a sycl.exception with other errors
        plain.wait_and_throw()
    with pytest.raises(sycl.exception, match="2 asynchronous errors"):
        plain.wait_and_throw()


@pytest.mark.parametrize("fatal", [KeyboardInterrupt, SystemExit])
def test_host_tasks_queued_behind_an_interrupted_one_still_run(device, fatal, monkeypatch):
    # A host task ending in KeyboardInterrupt/SystemExit ends its thread: the tasks
    # queued behind it on that thread must still run, and every wait return. (One
    # thread in the pool, so that they queue behind it.)
    import threading
    import time

    from pysycl.runtime import scheduler
    pool = scheduler._HostPool()
    pool.MAX_THREADS = 1
    monkeypatch.setattr(scheduler, "_host_pool", pool)
    monkeypatch.setattr(threading, "excepthook", lambda args: None)   # (the thread's end)
    q = sycl.queue(device)
    gate, ran = threading.Event(), []

    def stop():
        gate.wait(10)
        raise fatal()

    def record(i):
        return lambda: ran.append(i)
    events = [q.host_task(stop)]
    events += [q.host_task(record(i)) for i in range(8)]   # queued while stop() waits
    gate.set()
    deadline = time.monotonic() + 20
    while not all(e._done for e in events) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert all(e._done for e in events), "host tasks queued behind the interrupt never ran"
    assert sorted(ran) == list(range(8))
    with pytest.raises(fatal):
        q.wait_and_throw()
