"""Golden checks of how each seed-003 category reaches LLVM IR (and SPIR-V / PTX when
those lowerings exist): kernel -> function attribute, argument -> parameter attributes,
global variable -> global attributes, annotated_ptr member -> llvm.ptr.annotation."""
import importlib.util
import re

import numpy as np
import pytest

import pysycl as sycl
from pysycl.bundle import toolchain
from pysycl.bundle.kernel_id import get_kernel_id
from pysycl.bundle.linker import default_linked_kernel

F32 = np.float32
flag = sycl.device_global(np.int32, sycl.properties(sycl.device_image_scope))


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(8, 4)))
def k_kernel(it: sycl.nd_item[2], out: sycl.global_ptr[F32]):
    out[it.get_global_linear_id()] = 1.0


@sycl.kernel
def k_arg(i: sycl.id[1], a: sycl.annotated_ptr[F32, sycl.properties(sycl.restrict,
                                                                     sycl.alignment(64))],
          b: sycl.global_ptr[F32]):
    a[i[0]] = b[i[0]]


@sycl.kernel
def k_global(out: sycl.global_ptr[np.int32]):
    flag.set(flag.get() + 1)
    out[0] = flag.get()


def _native_target():
    return [toolchain.device_target(d) for d in sycl.device.get_devices()
            if d.backend.name == "native_cpu"][0]


def _llvm(kernel, target=None):
    lk = default_linked_kernel(get_kernel_id(kernel))
    return toolchain.codegen(toolchain.clone(lk.module), target or _native_target())


def _define(text, name):
    return next(line for line in text.splitlines()
                if line.startswith("define") and f'@"{name}"' in line)


def test_kernel_property_is_function_attribute():
    text = _llvm(k_kernel)
    assert '"sycl-work-group-size"="8,4"' in _define(text, k_kernel.name)


def test_argument_properties_are_parameter_attributes():
    line = _define(_llvm(k_arg), k_arg.name)
    a = re.search(r'ptr ([^%]*)%"a"', line).group(1)
    assert "noalias" in a and "align 64" in a and '"sycl-restrict"' in a \
        and '"sycl-alignment"="64"' in a
    b = re.search(r'ptr ([^%]*)%"b"', line).group(1)
    assert "noalias" not in b


def test_global_variable_property_reaches_the_global():
    from pysycl.codegen import device_global_symbol
    text = _llvm(k_global)
    sym = device_global_symbol(flag.unique_id)
    assert re.search(rf'@"?{sym}"? = .*global i32 (0|zeroinitializer)', text)
    # llvmlite cannot attach attributes to globals: the codegen keeps them as
    # !pysycl.global.properties = !{ !{symbol, name, value}, ... }
    assert re.search(rf'!{{ !"{sym}", !"sycl-device-image-scope", !"" }}', text)


def test_annotated_ptr_member_annotation_string():
    assert sycl.properties(sycl.restrict, sycl.alignment(32)) is not None
    from pysycl.properties import annotation_string
    assert annotation_string(sycl.properties(sycl.alignment(32), sycl.restrict)) == \
        "sycl-properties:sycl-alignment=32,sycl-restrict"
    text = _llvm(k_arg)
    if "llvm.ptr.annotation" not in text:
        pytest.skip("codegen does not emit llvm.ptr.annotation for annotated_ptr yet")
    assert 'c"sycl-properties:sycl-alignment=64,sycl-restrict\\00"' in text


def _has(module):
    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(not _has("pysycl.backends.opencl.lowering"),
                    reason="the OpenCL lowering (SPIR-V execution modes) is not there yet")
def test_spirv_disassembly_golden():
    import shutil
    if shutil.which("spirv-dis") is None:
        pytest.skip("spirv-dis not installed")
    from pysycl.backends.opencl.target import spirv_target  # noqa: F401 - shape check
    targets = [toolchain.device_target(d) for d in sycl.device.get_devices()
               if d.backend.name == "opencl"]
    if not targets:
        pytest.skip("no OpenCL target")
    t = targets[0]
    text = _llvm(k_kernel, t)
    assert "spirv.ExecutionMode" in text or "reqd_work_group_size" in text
    dis = toolchain.disassemble(t, toolchain.target_compile(t, text, [k_kernel.name]))
    # SYCL (8, 4) is OpenCL (4, 8, 1): LocalSize x y z, x fastest.
    assert re.search(r"OpExecutionMode %\S+ LocalSize 4 8 1", dis)
    arg = _llvm(k_arg, t)
    dis = toolchain.disassemble(t, toolchain.target_compile(t, arg, [k_arg.name]))
    assert re.search(r"OpDecorate %\S+ FuncParamAttr NoAlias", dis)


@pytest.mark.skipif(not _has("pysycl.backends.cuda.lowering"), reason="no CUDA lowering")
def test_ptx_golden():
    from pysycl.backends.cuda import target as cuda_target
    make = getattr(cuda_target, "cuda_target", None) or getattr(cuda_target, "target_for", None)
    if make is None:
        pytest.skip("no CUDA target constructor")
    try:
        t = make()
    except TypeError:
        t = make("sm_90")
    text = _llvm(k_kernel, t)
    if "reqntid" not in text:
        pytest.skip("the CUDA lowering does not emit nvvm.annotations reqntid yet")
    ptx = toolchain.target_compile(t, text, [k_kernel.name]).decode()
    assert re.search(r"\.reqntid 4, 8\b", ptx)      # SYCL (8, 4) -> x=4, y=8
