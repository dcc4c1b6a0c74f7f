"""PTX generation and host-side launch plumbing: no GPU needed."""
from __future__ import annotations

import ctypes
import struct

import llvmlite.binding as llvm
import numpy as np
import pytest

from pysycl.backends.base import AddressSpace, KernelArg, KernelArgKind
from pysycl.backends.cuda import driver as drv
from pysycl.backends.cuda.compiler import PtxCompiler, compile_ptx
from pysycl.backends.cuda.target import (DATA_LAYOUT, LaunchBounds, cuda_axis, cuda_target,
                                         sm_for)
from pysycl.errors import errc, exception

from cuda_kernels_ir import FILL2D, GLOBALS, MATH, REDUCE, VADD


def test_target_names_and_address_spaces():
    t = cuda_target((9, 0))
    assert (t.name, t.cpu, t.backend, t.binary_format) == ("nvptx64-sm_90", "sm_90", "cuda", "ptx")
    assert t.addrspace(AddressSpace.global_) == 1 and t.addrspace(AddressSpace.local) == 3
    assert t.addrspace(AddressSpace.private) == 5 and t.addrspace(AddressSpace.generic) == 0
    assert t.addrspace(AddressSpace.constant) == 1
    assert sm_for((8, 9)) == "sm_89" and sm_for((13, 0)) == "sm_121" and sm_for((8, 5)) == "sm_80"
    assert [cuda_axis(i, 3) for i in range(3)] == [2, 1, 0]


def test_data_layout_is_the_target_machines():
    llvm.initialize_all_targets()
    tm = llvm.Target.from_triple("nvptx64-nvidia-cuda").create_target_machine(cpu="sm_90")
    assert str(tm.target_data) == DATA_LAYOUT


def test_vadd_ptx(sm90_compiler):
    ptx = sm90_compiler.compile(VADD, ["vadd"]).decode()
    assert ".version 7.8" in ptx and ".target sm_90" in ptx and ".address_size 64" in ptx
    assert ".visible .entry vadd(" in ptx
    assert "%tid.x" in ptx and "%ctaid.x" in ptx and "ld.global" in ptx
    assert "global_id_x" not in ptx          # device functions internalised and inlined
    assert sm90_compiler.disassemble(ptx.encode() + b"\0") == ptx


def test_libdevice_sinf_is_linked_and_inlined(sm90_compiler, libdevice):
    ptx = sm90_compiler.compile(MATH, ["math"]).decode()
    assert "__nv_sinf" not in ptx and "__nv_cos" not in ptx and ".extern .func" not in ptx
    assert ".ftz" not in ptx                 # nvvm-reflect-ftz off by default: IEEE denormals
    ftz = PtxCompiler(cuda_target((9, 0)), ftz=True).compile(MATH, ["math"]).decode()
    assert ".ftz" in ftz


def test_reqntid_from_attributes_and_annotations(sm90_compiler):
    bounds = LaunchBounds(reqd_work_group_size=(2, 32), max_registers=64)
    assert bounds.function_attributes() == '"nvvm.reqntid"="32,2" "nvvm.maxnreg"="64"'
    body = "define ptx_kernel void @k(ptr addrspace(1) %p) #0 { ret void }\n"
    ptx = sm90_compiler.compile(body + f"attributes #0 = {{ {bounds.function_attributes()} }}",
                                ["k"]).decode()
    assert ".reqntid 32, 2" in ptx and ".maxnreg 64" in ptx
    lines = LaunchBounds(max_work_group_size=(128,)).nvvm_annotations("k")
    legacy = ("define ptx_kernel void @k(ptr addrspace(1) %p) { ret void }\n"
              "!nvvm.annotations = !{!0}\n!0 = " + lines[0] + "\n")
    assert ".maxntid 128\n" in sm90_compiler.compile(legacy, ["k"]).decode()
    assert ".reqntid 256" in sm90_compiler.compile(REDUCE, ["reduce"]).decode()


def test_local_memory_and_device_globals_conventions(sm90_compiler):
    ptx = sm90_compiler.compile(REDUCE, ["reduce"]).decode()
    assert ".extern .shared .align 16 .b8 __pysycl_local_mem[];" in ptx
    assert "bar.sync \t0" in ptx and "atom.global.add" in ptx
    assert ".param .u32 reduce_param_2" in ptx
    ptx = sm90_compiler.compile(GLOBALS, ["use_globals"]).decode()
    assert ".visible .global .align 16 .b8 dg_scale[16]" in ptx
    assert ".visible .global .align 4 .u32 dg_counter" in ptx or "dg_counter" in ptx
    assert "%ctaid.y" in sm90_compiler.compile(FILL2D, ["fill2d"]).decode()


def test_missing_libdevice_is_a_build_error():
    with pytest.raises(exception) as info:
        compile_ptx(MATH, ["math"], cpu="sm_90", libdevice=None)
    assert info.value.code() is errc.build
    assert "libdevice not found: install pysycl[cuda]" in str(info.value)


@pytest.mark.parametrize("ir, names, message", [
    ("define void @k() { ret void }", ["k"], "ptx_kernel calling convention"),
    ("define ptx_kernel void @k() { ret i32 0 }", ["k"], "invalid LLVM IR"),
    ("define ptx_kernel void @k() { ret void }", ["nope"], "not defined"),
    ("declare void @ext()\ndefine ptx_kernel void @k() { call void @ext()\n ret void }",
     ["k"], "undefined device function(s): ext"),
])
def test_user_errors_are_build_errors(sm90_compiler, ir, names, message):
    with pytest.raises(exception) as info:
        sm90_compiler.compile(ir, names)
    assert info.value.code() is errc.build and message in str(info.value)


def test_llvm_crash_in_worker_is_a_build_error_and_worker_restarts():
    comp = PtxCompiler(cuda_target((9, 0)), in_worker=True)
    crash = ("define ptx_kernel void @k(ptr addrspace(1) %a) {\n %v = load fp128, ptr addrspace(1) %a\n"
             " %w = fdiv fp128 %v, %v\n store fp128 %w, ptr addrspace(1) %a\n ret void\n}")
    with pytest.raises(exception) as info:
        comp.compile(crash, ["k"])
    assert info.value.code() is errc.build and "LLVM ERROR" in str(info.value)
    assert b".entry vadd(" in comp.compile(VADD, ["vadd"])


def _fake_device(max_threads=1024):
    dev = drv.CudaDevice(-7, None, (9, 0))
    drv._limit_cache[-7] = {"max_threads": max_threads, "shared_optin": 232448}
    return dev


def test_range_launches_get_tiles_that_divide_the_range():
    rng = np.random.default_rng(2)
    shapes = [(8192, 8192), (1, 4096), (4096, 1), (3, 1024), (100, 100), (7,), (1 << 20,),
              (16, 16, 16), (4, 6, 512)]
    shapes += [tuple(int(x) for x in rng.integers(1, 3000, d)) for d in (1, 2, 3) * 20]
    for shape in shapes:
        block = drv._default_block(shape)
        threads = int(np.prod(block))
        assert all(g % b == 0 for g, b in zip(shape, block)), (shape, block)
        assert threads <= 256, (shape, block)
        if len(shape) > 1 and shape[-1] % 32 == 0 and shape[-2] % 8 == 0:
            assert block[-2:] == (8, 32), (shape, block)   # a 2-D tile
        if all(s == 1 for s in shape[:-1]) and shape[-1] % 256 == 0:
            assert block[-1] == 256, (shape, block)         # one row: all of it along x


def test_launch_geometry_reverses_dimensions():
    dev = _fake_device()
    assert drv._geometry((1024,), (128,), dev) == (8, 1, 1, 128, 1, 1)
    # SYCL (rows=64, cols=96): cols are CUDA x
    assert drv._geometry((64, 96), (2, 32), dev) == (3, 32, 1, 32, 2, 1)
    # A range launch: a 32-wide tile along x, the rest of 256 threads across y and z.
    assert drv._geometry((4, 6, 512), None, dev) == (16, 1, 4, 32, 6, 1)
    assert drv._geometry((1000,), None, dev)[3] == 250
    with pytest.raises(exception) as info:
        drv._geometry((100,), (32,), dev)
    assert info.value.code() is errc.nd_range
    with pytest.raises(exception):
        drv._geometry((4096,), (2048,), dev)


def test_arg_packer_layout():
    A = KernelArg
    args = [A(KernelArgKind.mem, 0x1234), A(KernelArgKind.scalar, struct.pack("<i", -5)),
            A(KernelArgKind.local, 100), A(KernelArgKind.scalar, struct.pack("<q", 7)),
            A(KernelArgKind.bytes, b"abcdefghijkl"), A(KernelArgKind.local, 8),
            A(KernelArgKind.mem, None)]
    packer = drv._ArgPacker(args)
    shared = packer.pack(args, scratch_bytes=40)
    # scratch 40 -> first local at 48, 100 bytes -> next at 160, 8 bytes -> total 176
    assert shared == 176
    assert not packer.holds(args, 40)     # local offsets: packed at every launch
    ptrs = [packer.pointers[i] for i in range(len(args))]
    read = lambda i, n: ctypes.string_at(ptrs[i], n)
    assert struct.unpack("<Q", read(0, 8))[0] == 0x1234
    assert struct.unpack("<i", read(1, 4))[0] == -5
    assert struct.unpack("<I", read(2, 4))[0] == 48
    assert struct.unpack("<q", read(3, 8))[0] == 7 and ptrs[3] % 8 == 0
    assert read(4, 12) == b"abcdefghijkl"
    assert struct.unpack("<I", read(5, 4))[0] == 160
    assert struct.unpack("<Q", read(6, 8))[0] == 0
    assert packer.params == ctypes.addressof(packer.pointers)


def test_arg_packer_repeats_only_the_same_live_arguments():
    # ``holds``: the buffer holds these very KernelArg objects (not equal ones) and
    # scratch size already. The packer refers to them weakly: a freed array's
    # KernelArg, and the memory it holds, goes.
    import gc
    import weakref
    A = KernelArg
    rng = np.random.default_rng(8)
    words = [int(v) for v in rng.integers(1, 2**62, 6)]
    args = [A(KernelArgKind.mem, words[0]), A(KernelArgKind.scalar, struct.pack("<q", words[1]))]
    packer = drv._ArgPacker(args, remembers=True)
    read = lambda i: struct.unpack("<Q", ctypes.string_at(packer.pointers[i], 8))[0]  # noqa
    assert not packer.holds(args, 0)
    assert packer.pack(args, 0) == 0 and [read(0), read(1)] == words[:2]
    assert packer.holds(list(args), 0)
    assert not packer.holds(list(args), 16)                     # other scratch bytes
    assert not packer.holds([A(KernelArgKind.mem, words[0]), args[1]], 0)   # equal
    assert not packer.holds(args[:1], 0)
    other = [A(KernelArgKind.mem, words[2]), A(KernelArgKind.scalar, struct.pack("<q", words[3]))]
    assert packer.pack(other, 16) == 16 and [read(0), read(1)] == words[2:4]
    assert packer.holds(other, 16) and not packer.holds(args, 16)
    gone = weakref.ref(other[0])
    del other
    gc.collect()
    assert gone() is None                                        # not kept by the packer
    assert not packer.holds([A(KernelArgKind.mem, words[2]), args[1]], 16)
