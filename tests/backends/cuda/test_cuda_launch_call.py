"""The CUDA launch call: an LLVM-compiled builtin that calls ``cuLaunchKernel`` with
the arguments of one record, only for the record's current version and context.
Checked here without a GPU, with stand-ins for the two driver functions that record
what they were called with."""
from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

from pysycl.backends.cuda import launch_call as lc

_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7,
                           ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_GET_CONTEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))


class StandIn:
    """cuLaunchKernel and cuCtxGetCurrent stand-ins, and one record wired to them."""

    def __init__(self, params: np.ndarray, offsets: list[int]):
        self.calls, self.current, self.result = [], 0xC0, 0
        self.storage = (ctypes.c_char * params.nbytes).from_buffer(params)
        base = ctypes.addressof(self.storage)
        self.pointers = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        self.offsets = offsets
        self.launch_fn = _LAUNCH(self.launch)
        self.get_fn = _GET_CONTEXT(self.get_context)
        self.record = lc.RECORD()
        fields = dict(launch=ctypes.cast(self.launch_fn, ctypes.c_void_p).value,
                      get_context=ctypes.cast(self.get_fn, ctypes.c_void_p).value,
                      context=0xC0, storage=base, storage_bytes=params.nbytes,
                      pointers=ctypes.addressof(self.pointers), count=len(offsets))
        for name, value in fields.items():
            self.record[lc.WORD[name]] = value

    def launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        p = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        words = [ctypes.c_uint64.from_address(p[i]).value for i in range(len(self.offsets))]
        moved = [p[i] - ctypes.addressof(self.storage) for i in range(len(self.offsets))]
        self.calls.append(((function, gx, gy, gz, bx, by, bz, shared, stream, extra),
                           words, moved))
        return self.result

    def get_context(self, out):
        out[0] = self.current
        return 0


def wired(params, offsets, geometry, function=0xF0, stream=0x5E):
    stand_in = StandIn(params, offsets)
    call = lc.builtin_maker()(stand_in.record)
    for name, value in zip(("gx", "gy", "gz", "bx", "by", "bz", "shared"), geometry):
        stand_in.record[lc.WORD[name]] = value
    stand_in.record[lc.WORD["function"]] = function
    stand_in.record[lc.WORD["stream"]] = stream
    return stand_in, call


def test_the_record_reaches_cuLaunchKernel_with_a_copy_of_the_parameters():
    rng = np.random.default_rng(3)
    for count in (0, 1, 5):
        params = rng.integers(0, 2**63, max(count, 1) * 2, dtype=np.uint64)
        offsets = [16 * i + 8 * int(rng.integers(0, 2)) for i in range(count)]
        geometry = [int(x) for x in rng.integers(1, 2**31, 7)]
        function, stream = (int(x) for x in rng.integers(1, 2**62, 2))
        stand_in, call = wired(params, offsets, geometry, function, stream)
        for version in (1, 2, 9):
            stand_in.result = int(rng.integers(0, 1000))
            stand_in.record[lc.WORD["version"]] = version
            assert call(version) == stand_in.result      # the CUresult, unchanged
            args, words, moved = stand_in.calls[-1]
            assert args == (function, *geometry, stream, None)
            # Every parameter's bytes, read through a copy (not the buffer itself).
            assert words == [int(params.view(np.uint8)[o:o + 8].view(np.uint64)[0])
                             for o in offsets]
            assert all(m != o for m, o in zip(moved, offsets))
        assert len(stand_in.calls) == 3


def test_it_launches_nothing_for_another_version_or_context():
    params = np.arange(4, dtype=np.uint64)
    stand_in, call = wired(params, [0, 8], [1, 1, 1, 32, 1, 1, 0])
    record = stand_in.record
    assert call(0) == -1          # version 0: nothing to launch again
    record[lc.WORD["version"]] = 7
    assert call(6) == -1 and call(8) == -1
    stand_in.current = 0xC1       # another context is current on this thread
    assert call(7) == -1
    stand_in.current = 0xC0
    record[lc.WORD["storage_bytes"]] = lc.MAX_PARAM_BYTES + 8
    assert call(7) == -1          # more than the call copies: cuda-bindings' launch
    record[lc.WORD["storage_bytes"]] = params.nbytes
    assert stand_in.calls == []
    assert call(7) == 0 and len(stand_in.calls) == 1
    with pytest.raises(TypeError):
        call("7")
    with pytest.raises(OverflowError):
        call(2**70)


def test_a_parameter_write_during_the_call_does_not_reach_it():
    # The call copies the parameters before it lets other threads run: a launch that
    # writes new ones meanwhile (another thread) cannot change it.
    params = np.arange(2, dtype=np.uint64) + 40
    stand_in, call = wired(params, [0, 8], [1, 1, 1, 1, 1, 1, 0])
    seen = []

    def launch_and_overwrite(*args):
        params[:] = 0                           # what another thread's launch would do
        seen.append([ctypes.c_uint64.from_address(
            ctypes.cast(args[9], ctypes.POINTER(ctypes.c_void_p))[i]).value for i in (0, 1)])
        return 0
    fn = _LAUNCH(launch_and_overwrite)
    stand_in.record[lc.WORD["launch"]] = ctypes.cast(fn, ctypes.c_void_p).value
    stand_in.record[lc.WORD["version"]] = 1
    assert call(1) == 0 and seen == [[40, 41]]


def test_it_is_made_on_a_thread_while_launches_go_through_the_bindings(monkeypatch):
    release, calls = threading.Event(), []

    def slow_make():
        calls.append(threading.current_thread().name)
        release.wait(10)
        return ("the maker", 1234, 5678)

    monkeypatch.setattr(lc, "make_launch_call", slow_make)
    monkeypatch.setattr(lc, "_made", [])
    monkeypatch.setattr(lc, "_started", [])
    assert lc.launch_call() is None and lc.launch_call() is None
    release.set()
    for thread in threading.enumerate():
        if thread.name == "pysycl-cuda-launch":
            thread.join(10)
    assert lc.launch_call() == ("the maker", 1234, 5678)
    assert calls == ["pysycl-cuda-launch"]    # made once, not on the caller's thread


def test_launches_keep_the_bindings_when_it_cannot_be_made(monkeypatch):
    def broken():
        raise RuntimeError("LLVM could not link it")

    monkeypatch.setattr(lc, "make_launch_call", broken)
    monkeypatch.setattr(lc, "_made", [])
    monkeypatch.setattr(lc, "_started", [])
    monkeypatch.setattr(threading, "excepthook", lambda args: None)   # (the thread's error)
    lc.launch_call()
    for thread in threading.enumerate():
        if thread.name == "pysycl-cuda-launch":
            thread.join(10)
    assert lc.launch_call() == (None, 0, 0)     # asked once, answered for good


def test_the_builtin_keeps_its_record():
    import gc
    import weakref
    params = np.arange(2, dtype=np.uint64)
    stand_in, _call = wired(params, [0, 8], [1, 1, 1, 1, 1, 1, 0])
    record = lc.RECORD(*stand_in.record)          # referred to by nothing but the builtin
    record[lc.WORD["version"]] = 4
    call = lc.builtin_maker()(record)
    alive = weakref.ref(record)
    del record
    gc.collect()
    assert alive() is not None
    assert call(4) == 0 and len(stand_in.calls) == 1
    del call
    gc.collect()
    assert alive() is None


def test_no_driver_library_means_no_launch_call():
    assert lc.make_launch_call("libpysycl-no-such-driver.so") == (None, 0, 0)
