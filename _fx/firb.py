import numpy as np, time, sys, os, re
sys.path.insert(0, '.'); sys.path.insert(0, 'src'); sys.path.insert(0, '_fx')
import pysycl as sycl
import patch_args, pvw
from benchmarks import kernels as K
from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
q = sycl.queue()
n = 4 << 20
modes = os.environ.get("MODES", "literal,args,emulated").split(",")
for nt in [int(v) for v in os.environ.get("NTS", "7,16,33").split(",")]:
    x = sycl.malloc_shared((n + nt,), np.float32, q); np.asarray(x)[...] = np.random.rand(n + nt)
    t = sycl.malloc_shared((nt,), np.float32, q); np.asarray(t)[...] = np.random.rand(nt)
    y = sycl.malloc_shared((n,), np.float32, q)
    xa, ta = np.asarray(x), np.asarray(t)
    ref = sum(ta[k] * xa[k:k+n].astype(np.float64) for k in range(nt))
    for mode in modes:
        if mode == "args":
            run = lambda: q.submit(lambda h: h.parallel_for(sycl.range(n), K.fir_args, x, t, y, np.int32(nt))).wait()
            kern = K.fir_args
        else:
            if mode == "emulated":
                kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input, devices=[q.get_device()], kernel_ids=[sycl.get_kernel_id(K.fir_spec)])
                kb.set_specialization_constant(K.ntaps_id, np.int32(nt))
                em = sycl.build(kb, properties=sycl.properties(sycl.spec_constant_lowering("emulated")))
            def run(mode=mode):
                def cgf(h):
                    if mode == "emulated":
                        h.use_kernel_bundle(em)
                    else:
                        h.set_specialization_constant(K.ntaps_id, np.int32(nt))
                    h.parallel_for(sycl.range(n), K.fir_spec, x, t, y)
                q.submit(cgf).wait()
            kern = K.fir_spec
        np.asarray(y)[...] = 0
        t0 = time.perf_counter(); run(); b = (time.perf_counter() - t0) * 1e3
        err = np.abs(np.asarray(y) - ref).max()
        ts = []
        for _ in range(int(os.environ.get("REPS", 15))):
            t0 = time.perf_counter(); run(); ts.append(time.perf_counter() - t0)
        print(f"nt={nt:3d} {mode:9s} first {b:7.1f} ms  median {np.median(ts)*1e3:7.2f} ms  min {min(ts)*1e3:7.2f}  err {err:.2e}", flush=True)
