"""The call of ``cuLaunchKernel`` from a bound launch: one LLVM-compiled Python builtin.

A launch loop is bound by the host. cuda-bindings converts and checks eleven Python
arguments at every call (measured on an H200 with a 32-thread kernel: 4.2-4.5 us per
launch; the driver alone, called in a native loop, 3.5-3.7 us), and a ``ctypes`` call
costs a foreign-function frame of its own. Here each bound launch (one kernel on one
stream) keeps its launch in one :data:`RECORD` of machine words, and a builtin made by
the process's LLVM JIT makes the call from it: ``call(version) -> CUresult`` is an
ordinary C function of Python's, as cheap to call as any builtin.

``call(version)`` launches only when the record's version is ``version`` (nonzero) and
the record's context is current on the calling thread; otherwise it returns -1 and
launches nothing. The bound launch writes the record and a new version under its lock
for every launch it makes, so a caller holding the version of one launch can launch
exactly that launch again, without a lock, for as long as nobody launched since
(``CudaKernel.bound``): the runtime's launch loop over the same arguments. The
parameter bytes are copied onto the native stack while the GIL is held, so a launch
writing new ones on another thread cannot change a call that is under way; the GIL is
released for the driver call, as cuda-bindings does (a launch blocks while the device's
queue is full).

It is not made where the GIL is disabled (the copy relies on it) nor where Python's C
API or ``libcuda`` cannot be reached through ``ctypes``: launches then go through
cuda-bindings.
"""
from __future__ import annotations

import ctypes
import functools
import sys
import threading

from ...errors import exception

# The record's machine words, in order.
FIELDS = ("launch", "function", "gx", "gy", "gz", "bx", "by", "bz", "shared", "stream",
          "storage", "storage_bytes", "pointers", "count", "version", "context",
          "get_context")
WORD = {name: i for i, name in enumerate(FIELDS)}
RECORD = ctypes.c_uint64 * len(FIELDS)
# Parameter bytes and pointers the call copies: CUDA's limit on a kernel's parameters
# is 4 KiB on every GPU before Volta, 32 KiB after it with CUDA 12.1; a launch with more
# (never made by our compiler) goes through cuda-bindings.
MAX_PARAM_BYTES = 4096
MAX_PARAMS = 512
_METH_O = 0x0008


def _ir(api: dict[str, int]) -> str:
    def word(name):
        return f"getelementptr i64, ptr %r, i64 {WORD[name]}"

    def c_api(name):
        return f"inttoptr (i64 {api[name]} to ptr)"

    loads = "".join(f"""  %p{n} = {word(n)}
  %w{n} = load i64, ptr %p{n}
  %{n} = trunc i64 %w{n} to i32
""" for n in ("gx", "gy", "gz", "bx", "by", "bz", "shared"))
    return f"""
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define ptr @pysycl_cuda_launch(ptr %self, ptr %arg) {{
entry:
  %bytes = alloca [{MAX_PARAM_BYTES} x i8], align 16
  %ptrs = alloca [{MAX_PARAMS} x ptr], align 8
  %current = alloca ptr, align 8
  %address = call ptr {c_api("PyTuple_GetItem")}(ptr %self, i64 0)
  %r = call ptr {c_api("PyLong_AsVoidPtr")}(ptr %address)
  %want = call i64 {c_api("PyLong_AsLongLong")}(ptr %arg)
  %minus = icmp eq i64 %want, -1
  br i1 %minus, label %maybe_raised, label %versioned
maybe_raised:
  %raised = call ptr {c_api("PyErr_Occurred")}()
  %is_raised = icmp ne ptr %raised, null
  br i1 %is_raised, label %fail, label %versioned
fail:
  ret ptr null
versioned:
  %pv = {word("version")}
  %have = load i64, ptr %pv
  %same = icmp eq i64 %have, %want
  %set = icmp ne i64 %want, 0
  %valid = and i1 %same, %set
  br i1 %valid, label %context, label %refuse
refuse:
  %no = call ptr {c_api("PyLong_FromLong")}(i64 -1)
  ret ptr %no
context:
  store ptr null, ptr %current
  %pg = {word("get_context")}
  %get = load ptr, ptr %pg
  %got = call i32 %get(ptr %current)
  %cur = load ptr, ptr %current
  %pc = {word("context")}
  %ctx = load ptr, ptr %pc
  %got_ok = icmp eq i32 %got, 0
  %ctx_ok = icmp eq ptr %cur, %ctx
  %is_current = and i1 %got_ok, %ctx_ok
  br i1 %is_current, label %sized, label %refuse
sized:
  %ps = {word("storage_bytes")}
  %size = load i64, ptr %ps
  %pn = {word("count")}
  %n = load i64, ptr %pn
  %big = icmp ugt i64 %size, {MAX_PARAM_BYTES}
  %many = icmp ugt i64 %n, {MAX_PARAMS}
  %too = or i1 %big, %many
  br i1 %too, label %refuse, label %copy
copy:
  %pst = {word("storage")}
  %storage = load ptr, ptr %pst
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %bytes, ptr %storage, i64 %size, i1 false)
  %base = ptrtoint ptr %storage to i64
  %ppt = {word("pointers")}
  %pointers = load ptr, ptr %ppt
  br label %head
head:
  %i = phi i64 [0, %copy], [%next, %body]
  %done = icmp uge i64 %i, %n
  br i1 %done, label %launch, label %body
body:
  %src = getelementptr ptr, ptr %pointers, i64 %i
  %at = load ptr, ptr %src
  %at_int = ptrtoint ptr %at to i64
  %offset = sub i64 %at_int, %base
  %moved = getelementptr i8, ptr %bytes, i64 %offset
  %dst = getelementptr ptr, ptr %ptrs, i64 %i
  store ptr %moved, ptr %dst
  %next = add i64 %i, 1
  br label %head
launch:
  %pl = {word("launch")}
  %fn = load ptr, ptr %pl
  %pf = {word("function")}
  %function = load ptr, ptr %pf
  %pstream = {word("stream")}
  %stream = load ptr, ptr %pstream
{loads}  %state = call ptr {c_api("PyEval_SaveThread")}()
  %err = call i32 %fn(ptr %function, i32 %gx, i32 %gy, i32 %gz, i32 %bx, i32 %by, i32 %bz,
                      i32 %shared, ptr %stream, ptr %ptrs, ptr null)
  call void {c_api("PyEval_RestoreThread")}(ptr %state)
  %err64 = zext i32 %err to i64
  %out = call ptr {c_api("PyLong_FromLong")}(i64 %err64)
  ret ptr %out
}}
"""


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


_C_API = ("PyTuple_GetItem", "PyLong_AsVoidPtr", "PyLong_AsLongLong", "PyErr_Occurred",
          "PyLong_FromLong", "PyEval_SaveThread", "PyEval_RestoreThread")
_lock = threading.Lock()
_made: list = []    # [(maker or None, cuLaunchKernel, cuCtxGetCurrent)] once made
_started: list = []


def launch_call():
    """``(make, cuLaunchKernel, cuCtxGetCurrent)``: ``make(record)`` is the builtin
    ``call(version)`` of one record, and the two driver functions' addresses
    go into the record; ``(None, 0, 0)`` where it cannot be made (launches go through
    cuda-bindings); None while it is being made.

    Making it takes LLVM's JIT about 10 ms, which the first launch of a process should
    not wait for: it is made on a thread of its own, started by the first call, and
    launches go through cuda-bindings until it is there."""
    if _made:
        return _made[0]
    with _lock:
        if not _started:
            _started.append(True)
            # Not a daemon: interpreter exit waits for LLVM to finish rather than
            # tearing the interpreter down under it.
            threading.Thread(target=_make_in_background, name="pysycl-cuda-launch").start()
    return None


def _make_in_background() -> None:
    made = (None, 0, 0)   # whatever goes wrong here, launches keep cuda-bindings' path
    try:
        made = make_launch_call()
    finally:
        with _lock:
            _made.append(made)


def make_launch_call(library: str = "libcuda.so.1"):
    """What :func:`launch_call` returns, made now from ``library``'s driver functions
    (the one cuda-bindings loaded, by its soname: the exported ``cuLaunchKernel`` treats
    stream 0 as the legacy default stream, and stream 0 is never launched on through
    here, see ``CudaKernel.bound``; every other handle means the same to both of the
    driver's variants)."""
    gil = getattr(sys, "_is_gil_enabled", None)
    if gil is not None and not gil():
        return None, 0, 0
    try:
        cuda = ctypes.CDLL(library)
        targets = [ctypes.cast(getattr(cuda, name), ctypes.c_void_p).value
                   for name in ("cuLaunchKernel", "cuCtxGetCurrent")]
        make = builtin_maker()
    except (OSError, AttributeError, RuntimeError, exception):
        return None, 0, 0   # no libcuda symbol, no C API, or LLVM could not make it
    return (make, *targets)


@functools.lru_cache(maxsize=None)
def builtin_maker():
    """``make(record)``: the builtin ``call(version)`` of one :data:`RECORD` (made once
    per process: the LLVM function, and the method definition every builtin refers
    to, live as long as it does). The builtin holds the record: it reads it for as
    long as anyone can call it."""
    api = ctypes.pythonapi
    addresses = {name: ctypes.cast(getattr(api, name), ctypes.c_void_p).value
                 for name in _C_API}
    # A prototype of our own (not pythonapi's shared function object), holding the GIL.
    new_function = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                                     ctypes.c_void_p)(("PyCFunction_NewEx", api))
    from ..host_jit import link_host_functions   # LLVM's JIT, loaded on first launch
    address = link_host_functions(_ir(addresses), ["pysycl_cuda_launch"])[
        "pysycl_cuda_launch"]
    method = _MethodDef(b"cuda_launch", address, _METH_O,
                        b"cuda_launch(version) -> CUresult, or -1 when the record changed")
    at = ctypes.addressof(method)

    def make(record):
        return new_function(at, (ctypes.addressof(record), record), None)
    make.method = method   # (kept alive with the function)
    return make
