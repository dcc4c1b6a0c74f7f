"""The process's one ORC LLJIT: host code made by LLVM in this process.

Native CPU kernels load into it (``native_cpu/executor.py``), and so do small C-callable
helpers of the other layers: the DLPack export's deleters, the CUDA driver's launch
call (``cuda/launch_call.py``). One JIT per process, made on first use (creating it loads LLVM's native
target, which a process that never needs host code should not pay for).

>>> addr = link_host_functions("define i32 @f() { ret i32 7 }", ["f"])["f"]
>>> import ctypes; ctypes.CFUNCTYPE(ctypes.c_int)(addr)()
7
"""
from __future__ import annotations

import functools
import itertools
import os
import threading
from typing import Sequence

import llvmlite.binding as llvm

from ..errors import errc, exception

_jit_lock = threading.Lock()
_jit: llvm.LLJIT | None = None
_library_ids = itertools.count()
# Trackers of linked helper functions: kept for the life of the process, because C code
# (a DLPack consumer, the CUDA driver) may call them at any time.
_host_functions: list = []


@functools.lru_cache(maxsize=None)
def init_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@functools.lru_cache(maxsize=None)
def host_target_machine() -> llvm.TargetMachine:
    """The host TargetMachine (host CPU and features, PIC). Host TMs may be reused across
    modules, unlike SPIR-V ones (which keep state of the module they emitted)."""
    init_llvm()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=3, reloc="pic", codemodel="default")


def lljit() -> llvm.LLJIT:
    """The process's LLJIT, made on first use."""
    global _jit
    with _jit_lock:
        if _jit is None:
            init_llvm()
            _jit = llvm.create_lljit_compiler(host_target_machine())
        return _jit


def next_library_name(kind: str) -> str:
    """A JIT library name not used before in this process (``pysycl_<kind>_<n>``)."""
    return f"pysycl_{kind}_{next(_library_ids)}"


def link_host_functions(llvm_ir: str, names: Sequence[str]) -> dict[str, int]:
    """Link C-callable host functions written as LLVM IR into the process's LLJIT and
    return their addresses by name. Symbols of the current process (Python's C API,
    libc) resolve. The code is never unloaded."""
    builder = llvm.JITLibraryBuilder().add_ir(llvm_ir).add_current_process()
    for name in names:
        builder.export_symbol(name)
    try:
        tracker = builder.link(lljit(), next_library_name("host"))
    except RuntimeError as e:
        raise exception(errc.build, f"linking host helper functions failed: {e}") from None
    _host_functions.append(tracker)
    return {name: int(tracker[name]) for name in names}


def _after_fork_in_child() -> None:
    global _jit_lock
    _jit_lock = threading.Lock()   # a thread of the parent may have held it


os.register_at_fork(after_in_child=_after_fork_in_child)
