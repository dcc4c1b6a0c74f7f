"""Fakes for bundle tests that need no frontend, codegen or device: hand-built IR kernels
registered like ``@sycl.kernel`` functions, devices/contexts, and a toolchain whose
"codegen" prints IR and whose "driver" records launches (the real ``passes/link.py``
links)."""
from __future__ import annotations

import dataclasses
import types as pytypes

import numpy as np

from pysycl.backends.base import Driver, Target
from pysycl.bundle import toolchain
from pysycl.errors import errc, exception

from pysycl.ir.core import Function, Module, Op, Param, Region, SpecConstantDecl
from pysycl.ir.types import I32, VOID, IndexSpaceType, type_from_dtype
from pysycl.properties.aspects import aspect

FAKE_TARGET = Target("native_cpu", "native_cpu", "x86_64-unknown-linux", "", "object", {})
FAKE_SPIRV = Target("spirv64", "opencl", "spirv64-unknown-unknown", "", "spirv", {},
                    native_spec_constants=True)


class FakeDevice:
    def __init__(self, name, target=FAKE_TARGET, aspects=("cpu", "online_compiler", "online_linker")):
        self.name, self.target, self._aspects = name, target, set(aspects)
        self.max_work_item_sizes = (1024, 1024, 1024)
        self.max_work_group_size = 1024
        self.sub_group_sizes = (8, 16)

    def has(self, a):
        return aspect(a).name in self._aspects

    def __repr__(self):
        return f"FakeDevice({self.name})"


class FakeContext:
    def __init__(self, *devices):
        self._devices = list(devices)

    def get_devices(self):
        return list(self._devices)


class FakeKernel:
    """Stands in for a frontend KernelFunction."""

    def __init__(self, module_name, name, build):
        self.module_name, self.name, self._build = module_name, f"{module_name}.{name}", build
        self.kind = "kernel"

    def ir_module(self):
        return self._build(self.name)

    def signature(self):
        return pytypes.SimpleNamespace(params=(), index_kind="id", dims=1)


class FakeExternal(FakeKernel):
    is_declaration = False
    kind = "external"


def kernel_module(name, *, spec=(), calls=(), props=None, spec_decls=()):
    """A module with kernel ``name`` that reads spec constants ``spec`` and calls the
    imported externals ``calls``."""
    m = Module(name)
    body = Region()
    for sym in spec:
        decl = next(d for d in spec_decls if d.unique_id == sym)
        body.append(Op("spec.get", type=decl.type, attrs={"id": sym}))
    for callee in calls:
        body.append(Op("call", type=I32, attrs={"callee": callee}))
        m.functions.append(Function(callee, "declare", [], I32))
    body.append(Op("return"))
    k = Function(name, "kernel", [Param("i", IndexSpaceType("id", 1))], VOID, body,
                 properties=dict(props or {}))
    m.functions.insert(0, k)
    m.spec_constants = list(spec_decls)
    return m


def external_module(module_name, symbols):
    m = Module(module_name)
    for sym in symbols:
        body = Region([Op("const", type=I32, attrs={"value": 7})])
        body.append(Op("return", [body.ops[0].result]))
        m.functions.append(Function(sym, "external", [], I32, body))
    return m


def spec_decl(uid, dtype, default):
    dt = np.dtype(dtype)
    arr = np.zeros((), dt)
    arr[()] = default
    return SpecConstantDecl(uid, type_from_dtype(dt), arr.tobytes())


# -- fake codegen / compiler / driver -------------------------------------------------
@dataclasses.dataclass
class FakeProgram:
    binary: bytes
    names: list
    spec: dict


class _Done:
    """The completion token of a command that finished before its call returned."""

    def wait(self):
        pass

    def is_complete(self):
        return True


DONE = _Done()


class FakeDriver(Driver):
    """A driver filled in as backends/base.py asks, at the contract's defaults."""
    name = "fake"

    def __init__(self):
        self.launches, self.loads = [], 0

    def discover(self):
        return []

    def load(self, device, binary, kernel_names, spec_constants=None, *,
             device_global_ids=(), code_cache=None, context=None):
        self.loads += 1
        return FakeProgram(binary, list(kernel_names), dict(spec_constants or {}))

    def alloc(self, device, nbytes, kind, *, context=None):
        return bytearray(nbytes)

    def copy(self, stream, dst, dst_offset, src, src_offset, nbytes):
        dst[dst_offset:dst_offset + nbytes] = bytes(src[src_offset:src_offset + nbytes])
        return DONE

    def free(self, allocation):
        pass

    def fill(self, stream, dst, offset, pattern, nbytes):
        dst[offset:offset + nbytes] = (pattern * (nbytes // len(pattern) + 1))[:nbytes]
        return DONE

    def create_stream(self, device, profiling, *, context=None):
        return None

    def synchronize(self, stream):
        pass

    def launch(self, stream, program, kernel_name, global_size, local_size, args,
               local_mem_bytes=0, offset=None):
        self.launches.append((program, kernel_name, global_size, args))
        return DONE


class FakeCompiler:
    def __init__(self, target):
        self.target = target

    def compile(self, llvm_ir, kernel_names):
        return ("BIN:" + llvm_ir).encode()

    def disassemble(self, binary):
        return binary.decode()

    def check_binary(self, binary, link=False):
        if not bytes(binary).startswith(b"BIN:"):
            raise exception(errc.invalid, "not a fake binary")


def install_fake_toolchain(monkeypatch, tmp_path):
    driver = FakeDriver()
    monkeypatch.setenv("PYSYCL_CACHE_DIR", str(tmp_path / "cache"))
    toolchain.set_override("codegen", lambda m, t: f"; target {t.name}\n" + toolchain.print_ir(m))
    toolchain.set_override("compiler", FakeCompiler)
    toolchain.set_override("driver", lambda dev: driver)
    return driver


def remove_fake_toolchain():
    for n in ("codegen", "compiler", "driver"):
        toolchain.set_override(n, None)
