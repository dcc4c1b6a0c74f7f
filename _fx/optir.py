import sys, os, re, numpy as np
sys.path.insert(0, '.'); sys.path.insert(0, 'src'); sys.path.insert(0, '_fx')
import pysycl as sycl, patch_args, pvw
from benchmarks import kernels as K
from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
q = sycl.queue()
nt = int(os.environ.get("NT", 16)); n = 1024
x = sycl.malloc_shared((n + nt,), np.float32, q); t = sycl.malloc_shared((nt,), np.float32, q); y = sycl.malloc_shared((n,), np.float32, q)
mode = os.environ.get("MODE", "literal")
if mode == "args":
    kern = K.fir_args
else:
    def cgf(h):
        h.set_specialization_constant(K.ntaps_id, np.int32(nt)); h.parallel_for(sycl.range(n), K.fir_spec, x, t, y)
    kern = K.fir_spec
kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input, devices=[q.get_device()], kernel_ids=[sycl.get_kernel_id(kern)])
if kern is K.fir_spec: kb.set_specialization_constant(K.ntaps_id, np.int32(nt))
kb = sycl.build(kb, properties=sycl.properties(sycl.spec_constant_lowering(mode if mode != "args" else "literal")))
import time
for img in kb:
    src = img.asm["llvm"]
    open("/tmp/fx/in.ll", "w").write(src)
    t0 = time.perf_counter(); s = NativeCpuCompiler().optimized_ir(src); t1 = time.perf_counter()
    open("/tmp/fx/opt.ll", "w").write(s)
    print("opt ms %.1f" % ((t1 - t0) * 1e3), {w: len(re.findall(rf"<{w} x float>", s)) for w in (4, 8, 16)}, "gathers", s.count("gather"))
