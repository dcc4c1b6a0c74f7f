import numpy as np, time, sys, os
sys.path.insert(0, '.'); sys.path.insert(0, 'src')
import pysycl as sycl
from benchmarks import kernels as K
q = sycl.queue()
n = 1024
a = np.random.rand(n, n).astype(np.float32); b = np.random.rand(n, n).astype(np.float32)
da = sycl.malloc_shared((n, n), np.float32, q); db = sycl.malloc_shared((n, n), np.float32, q); dc = sycl.malloc_shared((n, n), np.float32, q)
np.asarray(da)[...] = a; np.asarray(db)[...] = b
def run():
    def cgf(cgh):
        cgh.parallel_for(sycl.nd_range(sycl.range(n, n), sycl.range(K.TILE, K.TILE)), K.matmul_tiled, da, db, dc, np.int64(n),
                         cgh.local_accessor(np.float32, (K.TILE, K.TILE)), cgh.local_accessor(np.float32, (K.TILE, K.TILE)))
    q.submit(cgf).wait()
t0 = time.perf_counter(); run(); print("first ms %.1f" % ((time.perf_counter() - t0) * 1e3))
print("err", np.abs(np.asarray(dc) - a @ b).max())
ts = []
for _ in range(int(os.environ.get("REPS", 7))):
    t0 = time.perf_counter(); run(); ts.append(time.perf_counter() - t0)
print("matmul median %.1f min %.1f" % (np.median(ts) * 1e3, min(ts) * 1e3))
