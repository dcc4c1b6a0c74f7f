"""Performance sanity (printed, not asserted): 3x3 convolution over 4096x4096 float32
against np.copyto of the image and numba parallel; cold compile and object load times.
Run with ``-s`` to see the numbers."""
from __future__ import annotations

import time

import numpy as np
import pytest

from native_harness import COMPILER, acc_args, llvm_text, load, spec
from pysycl.backends.native_cpu.executor import default_executor
from test_native_kernels import conv3x3_module, conv3x3_numpy


def _best(fn, repeat=7):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def test_conv3x3_optimised_ir_is_vectorised():
    opt = COMPILER.optimized_ir(llvm_text(conv3x3_module()))
    assert "x float>" in opt, "the inner work-item loop was not vectorised"


def test_conv3x3_4096_performance():
    n = 4096
    img = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    w = (np.arange(1, 10, dtype=np.float32) / 45)
    out = np.empty_like(img)
    prog = load(conv3x3_module())
    args = acc_args(img) + acc_args(w) + acc_args(out) + [spec()]
    t_sycl = _best(lambda: prog.launch("conv3x3", (n, n), None, args))
    ref = conv3x3_numpy(img[:512], w)
    np.testing.assert_allclose(out[1:511], ref[1:511], rtol=1e-4, atol=1e-5)
    dst = np.empty_like(img)
    t_copy = _best(lambda: np.copyto(dst, img))
    line = f"conv3x3 4096^2 f32: pysycl {t_sycl * 1e3:.2f} ms, np.copyto {t_copy * 1e3:.2f} ms"
    numba = pytest.importorskip("numba")

    @numba.njit(parallel=True, fastmath=False)
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
    o2 = np.empty_like(img)
    t_numba = _best(lambda: conv_numba(img, w, o2))
    np.testing.assert_allclose(o2, out, rtol=1e-5, atol=1e-5)
    print(f"\n{line}, numba parallel {t_numba * 1e3:.2f} ms, ratio pysycl/numba "
          f"{t_sycl / t_numba:.2f}")


@pytest.mark.parametrize("which", ["vector_add", "conv3x3"])
def test_compile_and_load_times(which):
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[2] / "unit" / "ir"))
    import ir_samples
    module = ir_samples.vector_add() if which == "vector_add" else conv3x3_module()
    names = [k.name for k in module.kernels]
    text = llvm_text(module)
    COMPILER.compile(text)  # warm the TargetMachine
    compiles, loads = [], []
    for _ in range(5):
        t = time.perf_counter()
        obj = COMPILER.compile(text, names)
        compiles.append(time.perf_counter() - t)
        t = time.perf_counter()
        default_executor().load(obj, names)
        loads.append(time.perf_counter() - t)
    print(f"\nIR->object ({which}, O3): median {sorted(compiles)[2] * 1e3:.1f} ms; "
          f"object load: median {sorted(loads)[2] * 1e3:.2f} ms")
