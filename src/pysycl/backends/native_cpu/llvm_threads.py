"""The heavy LLVM calls of a compile, made without llvmlite's process-wide lock.

llvmlite makes every LLVM C-API call under one process-wide lock
(``llvmlite.binding.ffi``), so the kernels of a bundle built on several threads
(``bundle.executables``) took turns inside LLVM: a cold build of 160 small kernels kept
1.0 core busy with 2 threads on 2 cores. LLVM itself runs concurrent work on distinct
``LLVMContext``\\s, modules, pass managers and ``TargetMachine``\\s. The calls that do
the work of a compile (parse, verify, the optimisation pipeline, object emission) are
made here straight through ctypes (which releases the GIL), on objects the calling
thread made and shares with no one: its own context, module, pass builder and target
machine. Every other call keeps the lock. Where llvmlite does not have the layout
expected (a later release), the locked calls are used.

>>> callable(raw_function("LLVMPY_VerifyModule"))
True
"""
from __future__ import annotations

import functools
from ctypes import c_char_p, string_at

import llvmlite.binding as llvm
from llvmlite.binding import ffi


@functools.lru_cache(maxsize=None)
def raw_function(name: str):
    """The ctypes function behind llvmlite's locked wrapper ``ffi.lib.<name>`` (its
    argument and result types are the wrapper's), or the wrapper itself."""
    wrapper = getattr(ffi.lib, name)
    return getattr(wrapper, "_cfn", wrapper)


def parse(text: str, context: llvm.ContextRef) -> llvm.ModuleRef:
    """``llvm.parse_assembly(text, context)``: ``context`` is the caller's own."""
    buf = c_char_p(text.encode("utf-8"))
    with ffi.OutputString() as err:
        mod = llvm.ModuleRef(raw_function("LLVMPY_ParseAssembly")(context, buf, err), context)
        if err:
            mod.close()
            raise RuntimeError(f"LLVM IR parsing error\n{err}")
    return mod


def verify(mod: llvm.ModuleRef) -> None:
    """``mod.verify()``: RuntimeError with LLVM's message."""
    with ffi.OutputString() as err:
        if raw_function("LLVMPY_VerifyModule")(mod, err):
            raise RuntimeError(str(err))


def run_pipeline(pass_builder, mod: llvm.ModuleRef) -> None:
    """The pass builder's default module pipeline on ``mod`` (``pm.run(mod, pb)``)."""
    mpm = pass_builder.getModulePassManager()
    raw_function("LLVMPY_RunNewModulePassManager")(mpm, mod, pass_builder)


def emit_object(tm: llvm.TargetMachine, mod: llvm.ModuleRef) -> bytes:
    """``tm.emit_object(mod)``: ``tm`` is the calling thread's own."""
    with ffi.OutputString() as err:
        buf = raw_function("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, err)
        if not buf:
            raise RuntimeError(str(err))
    try:
        return string_at(raw_function("LLVMPY_GetBufferStart")(buf),
                         raw_function("LLVMPY_GetBufferSize")(buf))
    finally:
        raw_function("LLVMPY_DisposeMemoryBuffer")(buf)
