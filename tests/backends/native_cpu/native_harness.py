"""Build hand-written IR, lower it for the native CPU, compile, load and pack arguments."""
from __future__ import annotations

import struct

import numpy as np

from pysycl.backends.base import KernelArg, KernelArgKind
from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
from pysycl.backends.native_cpu.executor import default_executor
from pysycl.backends.native_cpu.lowering import NativeCpuLowering
from pysycl.backends.native_cpu.target import native_cpu_target
from pysycl.codegen import lower_module
from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Param, Region
from pysycl.ir.types import AccessorType, PointerType

COMPILER = NativeCpuCompiler()


def llvm_text(module: Module, debug: bool = False) -> str:
    return str(lower_module(module, NativeCpuLowering(native_cpu_target(), debug=debug)))


def load(module: Module, device_globals=(), debug: bool = False):
    text = llvm_text(module, debug)
    obj = COMPILER.compile(text, [k.name for k in module.kernels])
    return default_executor().load(obj, [k.name for k in module.kernels], device_globals)


def kernel(name: str, params: list[Param], **props) -> tuple[Module, Builder, list]:
    """A one-kernel module; returns (module, body builder, param values)."""
    body = Region()
    fn = Function(name, "kernel", params, body=body, properties=props)
    return Module(name, [fn]), Builder(body), [p.value for p in params]


def acc_ptr(b: Builder, acc, *idx):
    return b.op("acc.ptr", acc, *idx, type=PointerType(acc.type.elem))


def acc_args(arr: np.ndarray, offset: int = 0) -> list[KernelArg]:
    """accessor<T, D> over the whole of ``arr``: mem, D access ranges, D memory ranges,
    D access offsets (0), the buffer's element offset in the memory."""
    return ([KernelArg(KernelArgKind.mem, arr.ctypes.data)]
            + [i64(n) for n in arr.shape * 2] + [i64(0)] * arr.ndim + [i64(offset)])


def i64(v: int) -> KernelArg:
    return KernelArg(KernelArgKind.scalar, struct.pack("<q", int(v)))


def scalar(v, dtype) -> KernelArg:
    return KernelArg(KernelArgKind.scalar, np.array(v, dtype=dtype).tobytes())


def local(nbytes: int, *ranges: int) -> list[KernelArg]:
    return [KernelArg(KernelArgKind.local, nbytes)] + [i64(r) for r in ranges]


def spec(buf: np.ndarray | None = None) -> KernelArg:
    return KernelArg(KernelArgKind.mem, 0 if buf is None else buf.ctypes.data)


def acc_type(t, dims=1, mode="read_write"):
    return AccessorType(t, dims, mode)
