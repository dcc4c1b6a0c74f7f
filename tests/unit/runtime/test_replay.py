"""A launch loop's repeated launch made again (runtime/replay.py): made only for the
same range and the same live argument objects, recorded as a launch's event, and
refused (None: the general path launches) for anything else. The driver's call is a
stand-in here; the CUDA tests run the real one."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import pysycl as sycl
from pysycl.runtime.event import STREAM
from pysycl.runtime import args as args_mod
from pysycl.runtime.replay import arm


@sycl.kernel
def scale(i: sycl.item[1], x: sycl.global_ptr[np.float32], y: sycl.global_ptr[np.float32],
          k: np.float32):
    y[i[0]] = x[i[0]] * k


class Call:
    """The driver's ``call(version)``: counts launches, answers ``result``."""

    def __init__(self, result=0):
        self.versions, self.result = [], result

    def __call__(self, version):
        self.versions.append(version)
        return self.result


class Token:
    def wait(self):
        pass

    def is_complete(self):
        return True


def armed(in_order, k=np.float32(1.5), result=0):
    q = sycl.queue(sycl.cpu_selector_v, in_order=in_order)
    q._stream_in_order = True        # (as a CUDA stream: issue order is run order)
    rng = np.random.default_rng(4)
    x = sycl.malloc_shared(64, np.float32, q)
    y = sycl.malloc_shared(64, np.float32, q)
    x[:] = rng.random(64, dtype=np.float32)
    r = sycl.range(64)
    q.parallel_for(r, scale, x, y, k).wait()
    np.testing.assert_allclose(np.asarray(y), np.asarray(x) * k, rtol=1e-6)
    plan = q._plans.entries[scale]
    packed, _ = plan.packer.pack((x, y, k), plan.cgh)
    call = Call(result)
    again = arm(q, plan.packer.pointers, r, (x, y, k), packed, call, 7, Token())
    return q, again, call, (r, x, y, k)


@pytest.mark.parametrize("in_order", [False, True])
def test_the_same_launch_is_made_again_and_recorded(in_order):
    q, again, call, (r, x, y, k) = armed(in_order)
    events = [again(r, (x, y, k)), again(sycl.range(64), (x, y, k)),
              again(r, [x, y, k])]
    assert call.versions == [7, 7, 7]
    for ev in events:
        assert isinstance(ev, sycl.event) and ev._kind == STREAM
        ev.wait()
    if in_order:
        assert q._last is events[-1]
    q.wait_and_throw()


@pytest.mark.parametrize("in_order", [False, True])
def test_anything_else_takes_the_general_path(in_order):
    q, again, call, (r, x, y, k) = armed(in_order)
    other = sycl.malloc_shared(64, np.float32, q)
    other._karg = x._karg            # (not even a shared KernelArg object fools it)
    host = np.zeros(64, np.float32)
    for space, args in [(sycl.range(32), (x, y, k)), (64, (x, y, k)),
                        (sycl.nd_range(sycl.range(64), sycl.range(8)), (x, y, k)),
                        (r, (y, x, k)), (r, (x, host, k)), (r, (x, y)),
                        (r, (x, y, k, k)), (r, (x, y, np.float32(1.5))),
                        (r, (x, y, 1.5)), (r, (x, y, None))]:
        assert again(space, args) is None, (space, args)
    sycl.free(y, q)                  # a freed array is never launched with
    assert again(r, (x, y, k)) is None
    assert call.versions == []
    del other


def test_a_refused_or_failed_call_takes_the_general_path():
    q, again, call, (r, x, y, k) = armed(False, result=-1)
    assert again(r, (x, y, k)) is None and call.versions == [7]
    call.result = 700                # a driver error: the general path reports it
    assert again(r, (x, y, k)) is None


def test_in_order_waits_for_a_pending_command_or_an_error():
    q, again, call, (r, x, y, k) = armed(True)
    gate = threading.Event()
    q.host_task(lambda: gate.wait(10))     # the newest command, still running
    assert again(r, (x, y, k)) is None and call.versions == []
    gate.set()
    q.wait()
    failed = q.host_task(lambda: 1 / 0)    # the newest command failed, unseen
    deadline = time.monotonic() + 10
    while not failed._done and time.monotonic() < deadline:
        time.sleep(0.001)
    assert again(r, (x, y, k)) is None and call.versions == []
    with pytest.raises(ZeroDivisionError):
        q.wait_and_throw()


def test_arguments_that_can_change_are_never_armed():
    q, _again, _call, (r, x, y, k) = armed(False)
    pointers = q._plans.entries[scale].packer.pointers
    for args in [(x, y, np.array(1.5, np.float32)), (x, np.zeros(64, np.float32), k),
                 (x, y, [1.5])]:
        packed = [x._karg, y._karg, None, None]
        assert arm(q, pointers, r, args, packed, Call(), 1, Token()) is None


class Foreign:
    """Stands for another library's CUDA array: an address and a shape; the stream its
    library would order work on now is the library's (``LIBRARY``)."""

    def __init__(self, address, shape):
        self.address, self.shape = address, shape


LIBRARY = {"stream": 5, "asked": 0}


def probe(value):
    LIBRARY["asked"] += 1
    return (value.address, value.shape), LIBRARY["stream"]


def split_probe(value):
    return probe(value)


def _library_stream():
    LIBRARY["asked"] += 1
    return LIBRARY["stream"]


# A library whose current stream is asked once for all its arrays (as CuPy's, PyTorch's).
split_probe.stream = _library_stream
split_probe.where = lambda value: (value.address, value.shape)


def remember(q, value, how=probe):
    """What the general path remembers of an array it exported and needed no ordering
    for on ``q``'s stream."""
    import weakref
    entry = args_mod._Known(weakref.ref(value), q.get_device(), (value.address, None, 256),
                            how, how(value)[0])
    entry.ordered = (q._stream, LIBRARY["stream"])
    args_mod._known[id(value)] = entry
    return entry


@pytest.mark.parametrize("in_order", [False, True])
@pytest.mark.parametrize("how", [probe, split_probe], ids=["own probe", "library stream"])
def test_other_libraries_arrays_are_asked_again_and_held(in_order, how):
    q, _again, _call, (r, x, y, k) = armed(in_order)
    pointers = q._plans.entries[scale].packer.pointers
    a, b = Foreign(0x7000, (64,)), Foreign(0x9000, (64,))
    try:
        ka, kb = remember(q, a, how).karg, remember(q, b, how).karg
        call, token = Call(), Token()
        again = arm(q, pointers, r, (a, b, k), [ka, kb, None], call, 3, token)
        held = len(q._held)
        LIBRARY["asked"] = 0
        assert again(r, (a, b, k)) is not None and call.versions == [3]
        assert LIBRARY["asked"] == (1 if how is split_probe else 2)
        shared = q._held._shared
        assert shared[0] is token and shared[1][0] is a and shared[1][1] is b
        assert len(q._held) == held + 1
        assert again(r, (a, b, k)) is not None and len(q._held) == held + 1  # held once
        other = Foreign(0x7000, (64,))        # the same address, another object
        for args in [(other, b, k), (a, x, k), (a, Foreign(0x9000, (64,)), k)]:
            assert again(r, args) is None
        LIBRARY["stream"] = 6                 # the library's stream changed: order again
        assert again(r, (a, b, k)) is None
        LIBRARY["stream"] = 5
        b.address = 0xB000                    # moved (a resized tensor)
        assert again(r, (a, b, k)) is None
        b.address, b.shape = 0x9000, (32,)    # reshaped
        assert again(r, (a, b, k)) is None
        b.shape = (64,)
        assert again(r, (a, b, k)) is not None and call.versions == [3, 3, 3]
        q._held.sweep()                       # (the token is complete: let go)
        assert again(r, (a, b, k)) is not None
        shared = q._held._shared
        assert shared[0] is token and shared[1][0] is a and shared[1][1] is b
    finally:
        args_mod._known.pop(id(a), None)
        args_mod._known.pop(id(b), None)
        LIBRARY["stream"] = 5
    q.wait()


def test_a_foreign_array_needing_an_order_is_never_armed():
    q, _again, _call, (r, x, y, k) = armed(False)
    pointers = q._plans.entries[scale].packer.pointers
    a = Foreign(0x7000, (64,))
    try:
        entry = remember(q, a)
        entry.ordered = (None, None)          # its producer needed a wait last time
        assert arm(q, pointers, r, (a, y, k), [entry.karg, y._karg, None], Call(), 1,
                   Token()) is None
    finally:
        args_mod._known.pop(id(a), None)


def test_an_nd_range_is_compared_by_its_ranges():
    q, _again, _call, (r, x, y, k) = armed(False)
    pointers = q._plans.entries[scale].packer.pointers
    nd = sycl.nd_range(sycl.range(64), sycl.range(8))
    parts = (nd.global_range, nd.local_range, nd.offset)
    call = Call()
    again = arm(q, pointers, parts, (x, y, k), [x._karg, y._karg, None], call, 2, Token())
    assert again(nd, (x, y, k)) is not None
    assert again(sycl.nd_range(sycl.range(64), sycl.range(8)), (x, y, k)) is not None
    for other in [sycl.nd_range(sycl.range(64), sycl.range(16)),
                  sycl.nd_range(sycl.range(64), sycl.range(8), sycl.id(8)),
                  sycl.range(64), parts[0], 64]:
        assert again(other, (x, y, k)) is None, other
    assert call.versions == [2, 2]
    q.wait()


def test_a_plan_arms_only_with_the_driver_record_of_its_own_launch():
    # The plan arms ``again`` after a launch the driver reports the repeat of one in its
    # records, with that launch's version; the one armed before stays as ``again2``
    # (alternating launches); a record another thread's launch wrote is never taken.
    q = sycl.queue(sycl.cpu_selector_v)
    x = sycl.malloc_shared(64, np.float32, q)
    y = sycl.malloc_shared(64, np.float32, q)
    r, k = sycl.range(64), np.float32(2)
    q.parallel_for(r, scale, x, y, k).wait()
    plan = q._plans.entries[scale]
    real, versions, steal = plan.bound, iter(range(1, 100)), []
    calls = {}   # version -> Call

    def bound(global_size, local_size, packed, local_bytes):
        # As the CUDA driver's: two records, the most recent first.
        token = real(global_size, local_size, packed, local_bytes)
        key = tuple(map(id, packed))
        repeated = key in bound.records
        bound.records = [key] + [k for k in bound.records if k != key][:1]
        version = next(versions)
        calls[version] = Call()
        launched = id(packed) if not steal else id(steal)   # another thread's launch
        bound.replay[:] = (calls[version], version, launched) if repeated else (None, 0, 0)
        return token
    bound.replay, bound.records = [None, 0, 0], []
    plan.bound, plan.replay, plan.poll, plan.replays = bound, bound.replay, False, True
    q.parallel_for(r, scale, x, y, k)
    assert plan.again is None               # a first launch is not a loop yet
    q.parallel_for(r, scale, x, y, k)
    xy = plan.again
    assert xy is not None and plan.again2 is None
    q.parallel_for(r, scale, x, y, k)      # made again: the driver is not asked
    assert len(calls) == 2 and [len(c.versions) for c in calls.values()] == [0, 1]
    q.parallel_for(r, scale, y, x, k)      # another launch: the general path
    q.parallel_for(r, scale, y, x, k)      # its repeat: armed, the other kept
    assert plan.again is not xy and plan.again2 is xy
    before = len(calls)
    for _ in range(3):                     # alternating: both made again
        q.parallel_for(r, scale, x, y, k)
        q.parallel_for(r, scale, y, x, k)
    assert len(calls) == before
    def replays():
        return sum(len(c.versions) for c in calls.values())
    before, made = len(calls), replays()
    q.submit(lambda h: h.parallel_for(r, scale, x, y, k))   # a command group's: the same
    assert len(calls) == before and replays() == made + 1
    buf = sycl.buffer(np.zeros(64, np.float32))

    def with_accessor(h):
        h.require(sycl.accessor(buf, h))
        h.parallel_for(r, scale, x, y, k)
    q.submit(with_accessor)                # a command group with an accessor: a command
    q.submit(lambda h: (h.depends_on(q.submit_barrier()), h.parallel_for(r, scale, x, y, k)))
    assert replays() == made + 1
    steal.append(True)
    q.parallel_for(r, scale, x, x, k)
    q.parallel_for(r, scale, x, x, k)      # the record names another launch: not armed
    assert plan.again2 is not None and plan.again2 is not plan.again
    q.wait()
