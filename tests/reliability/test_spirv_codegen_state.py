"""SPIR-V made late in a long session is what a fresh process makes, and the OpenCL device
builds it (the test suite used to die about 1 run in 5 in Intel's OpenCL CPU runtime).

LLVM state left by earlier modules in the SPIR-V compile worker sometimes gave a module
an ID defined twice (an entry block's label reusing a type's ID); Intel's CPU runtime
takes such a module and crashes building it (SIGSEGV in its SimplifyCFG) when the
module holds a loop whose trip count is a specialization constant. One worker compiles
the kernel many times here, with ``spirv-val`` off so the driver gets exactly what LLVM
made; every module must equal the first and build, and the kernel runs with NumPy as
the reference. In a subprocess: a crash is a failure.
"""
import pytest

ROUNDS = 200

# What pysycl emits for ``for k in range(spec): acc += x[i] * (k + 1)`` (SpecId 0,
# default 3), in SPIR-V conventions.
LOOP_SUM_IR = r'''
target triple = "spirv64-unknown-unknown"
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64-G1"

define spir_kernel void @loop_sum(ptr addrspace(1) %x, ptr addrspace(1) %out) convergent {
entry:
  %i = alloca i64
  %acc = alloca i64
  %k = alloca i32
  %gid = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 0)
  br label %body
body:
  store i64 %gid, ptr %i, align 8
  store i64 0, ptr %acc, align 8
  %trips = call spir_func i32 @_Z20__spirv_SpecConstantii(i32 0, i32 3)
  %n = sext i32 %trips to i64
  br label %cond
cond:
  %kk = phi i64 [0, %body], [%next, %inc]
  %more = icmp slt i64 %kk, %n
  br i1 %more, label %loop, label %end
loop:
  %k32 = trunc i64 %kk to i32
  store i32 %k32, ptr %k, align 4
  %a = load i64, ptr %acc, align 8
  %ii = load i64, ptr %i, align 8
  %px = getelementptr i64, ptr addrspace(1) %x, i64 %ii
  %vx = load i64, ptr addrspace(1) %px, align 8
  %kv = load i32, ptr %k, align 4
  %k64 = sext i32 %kv to i64
  %k1 = add i64 %k64, 1
  %t = mul i64 %vx, %k1
  %s = add i64 %a, %t
  store i64 %s, ptr %acc, align 8
  br label %inc
inc:
  %next = add i64 %kk, 1
  br label %cond
end:
  %r = load i64, ptr %acc, align 8
  %io = load i64, ptr %i, align 8
  %po = getelementptr i64, ptr addrspace(1) %out, i64 %io
  store i64 %r, ptr addrspace(1) %po, align 8
  ret void
}

declare spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32) memory(none) nounwind willreturn
declare spir_func i32 @_Z20__spirv_SpecConstantii(i32, i32) nounwind
'''

CODE = f"""
import os
os.environ["PYSYCL_SPIRV_VALIDATE"] = "0"
import numpy as np
from pysycl.backends.base import KernelArg, KernelArgKind
from pysycl.backends.opencl.compiler import SpirvCompiler
from pysycl.backends.opencl.driver import OpenCLDriver

IR = {LOOP_SUM_IR!r}
drv = OpenCLDriver()
devices = drv.discover()
if not devices:
    print("no OpenCL device")
    raise SystemExit(0)
dev = devices[0]
q = drv.create_stream(dev, profiling=False)
rng = np.random.default_rng(20261125)
x = rng.integers(-10**6, 10**6, 64).astype(np.int64)
X = drv.alloc(dev, x.nbytes, "buffer")
O = drv.alloc(dev, x.nbytes, "buffer")
drv.copy(q, X, 0, memoryview(x), 0, x.nbytes).wait()
compiler = SpirvCompiler()
first = None
for i in range({ROUNDS}):
    spv = compiler.compile(IR, ["loop_sum"])
    first = first or spv
    assert spv == first, f"module {{i}} differs from the first"
    trips = int(rng.integers(0, 20))
    prg = drv.load(dev, spv, ["loop_sum"], {{0: np.int32(trips).tobytes()}})
    if i % 20 == 0:
        drv.launch(q, prg, "loop_sum", [x.size], None,
                   [KernelArg(KernelArgKind.mem, X), KernelArg(KernelArgKind.mem, O)]).wait()
        out = np.full_like(x, 12345)
        drv.copy(q, memoryview(out), 0, O, 0, out.nbytes).wait()
        np.testing.assert_array_equal(out, x * (trips * (trips + 1) // 2))
print("built", {ROUNDS})
"""


@pytest.mark.opencl
def test_many_modules_from_one_worker_build_on_the_device(run_python):
    out = run_python(CODE, timeout=600)
    if "no OpenCL device" in out:
        pytest.skip("no OpenCL device that takes SPIR-V")
    assert f"built {ROUNDS}" in out
