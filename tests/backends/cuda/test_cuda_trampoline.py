"""The CUDA launch trampoline: LLVM-compiled code that calls ``cuLaunchKernel`` with the
arguments of one record. Checked here without a GPU, with a stand-in for the driver
function that records what it was called with."""
from __future__ import annotations

import ctypes

import numpy as np

from pysycl.backends.cuda.driver import _RECORD, _TRAMPOLINE_IR
from pysycl.backends.host_jit import link_host_functions

_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7,
                           ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def test_the_record_reaches_cuLaunchKernel_argument_for_argument():
    calls = []

    def stand_in(*args):
        calls.append(args)
        return len(calls) * 100 + 1     # a CUresult the caller gets back unchanged

    driver_fn = _LAUNCH(stand_in)
    address = link_host_functions(_TRAMPOLINE_IR, ["pysycl_cuda_launch"])["pysycl_cuda_launch"]
    trampoline = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(address)
    record = (ctypes.c_char * _RECORD.size)()
    rng = np.random.default_rng(3)
    for _ in range(3):
        function, stream, params = (int(x) for x in rng.integers(1, 2**62, 3))
        geometry = [int(x) for x in rng.integers(1, 2**31, 7)]
        _RECORD.pack_into(record, 0, ctypes.cast(driver_fn, ctypes.c_void_p).value,
                          function, *geometry, stream, params)
        assert trampoline(ctypes.addressof(record)) == len(calls) * 100 + 1
        assert calls[-1] == (function, *geometry, stream, params, None)
    assert len(calls) == 3


def test_it_is_made_on_a_thread_while_launches_go_through_the_bindings(monkeypatch):
    from pysycl.backends.cuda import driver
    import threading

    release, calls = threading.Event(), []

    def slow_make():
        calls.append(threading.current_thread().name)
        release.wait(10)
        return ("the trampoline", 1234)

    monkeypatch.setattr(driver, "_make_trampoline", slow_make)
    monkeypatch.setattr(driver, "_trampoline_made", [])
    monkeypatch.setattr(driver, "_trampoline_started", [])
    assert driver._trampoline() is None and driver._trampoline() is None
    release.set()
    for thread in threading.enumerate():
        if thread.name == "pysycl-cuda-trampoline":
            thread.join(10)
    assert driver._trampoline() == ("the trampoline", 1234)
    assert calls == ["pysycl-cuda-trampoline"]    # made once, not on the caller's thread


def test_launches_keep_the_bindings_when_it_cannot_be_made(monkeypatch):
    from pysycl.backends.cuda import driver
    import threading

    def broken():
        raise RuntimeError("LLVM could not link it")

    monkeypatch.setattr(driver, "_make_trampoline", broken)
    monkeypatch.setattr(driver, "_trampoline_made", [])
    monkeypatch.setattr(driver, "_trampoline_started", [])
    monkeypatch.setattr(threading, "excepthook", lambda args: None)   # (the thread's error)
    driver._trampoline()
    for thread in threading.enumerate():
        if thread.name == "pysycl-cuda-trampoline":
            thread.join(10)
    assert driver._trampoline() == (None, 0)     # asked once, answered for good
