import sys, time; sys.path.insert(0,'tests/backends/native_cpu')
import numpy as np
from test_native_kernels import conv3x3_module
from native_harness import llvm_text, acc_args, spec
import llvmlite.binding as llvm
from pysycl.backends.native_cpu.target import host_target_machine
from pysycl.backends.native_cpu.executor import default_executor
import numba
host_target_machine()
text = llvm_text(conv3x3_module())
n=4096
img = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
w = (np.arange(1, 10, dtype=np.float32) / 45); out = np.empty_like(img)
args = acc_args(img) + acc_args(w) + acc_args(out) + [spec()]
progs = {}
for extra in ["", ",+prefer-no-gather,+prefer-no-scatter"]:
    tm = llvm.Target.from_default_triple().create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten()+extra, opt=3, reloc="pic")
    t0=time.perf_counter()
    mod = llvm.parse_assembly(text)
    pto = llvm.create_pipeline_tuning_options(speed_level=3); pto.loop_vectorization=True; pto.slp_vectorization=False; pto.loop_interleaving=False
    pb = llvm.create_pass_builder(tm, pto); pb.getModulePassManager().run(mod, pb)
    s = str(mod); print(extra, "gathers", s.count("gather"), "vec", s.count("x float>"))
    obj = tm.emit_object(mod); print("compile ms", (time.perf_counter()-t0)*1e3)
    progs[extra] = default_executor().load(obj, ["conv3x3"])
@numba.njit(parallel=True)
def conv_numba(a, wt, o):
    h, wd = a.shape
    for i in numba.prange(h):
        for j in range(wd):
            if 1 <= i < h - 1 and 1 <= j < wd - 1:
                s = np.float32(0)
                for di in range(3):
                    for dj in range(3):
                        s += wt[3 * di + dj] * a[i + di - 1, j + dj - 1]
                o[i, j] = s
            else:
                o[i, j] = a[i, j]
o2 = np.empty_like(img); conv_numba(img, w, o2)
res = {k: [] for k in list(progs) + ["numba"]}
for r in range(7):
    for k, p in progs.items():
        t=time.perf_counter(); p.launch("conv3x3", (n,n), None, args); res[k].append(time.perf_counter()-t)
    t=time.perf_counter(); conv_numba(img, w, o2); res["numba"].append(time.perf_counter()-t)
for k, v in res.items(): print(repr(k), f"min {min(v)*1e3:.1f} med {sorted(v)[3]*1e3:.1f}")
