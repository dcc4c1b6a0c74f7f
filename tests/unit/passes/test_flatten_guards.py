"""``flatten_guards`` (CUDA's device pipeline): nested guards become one condition per
guarded access. Each kernel runs before and after the pass in the IR interpreter, on
random data, with memory that refuses any access out of range (the pass must never read
or write memory the source does not), and against NumPy; the shape of the rewrite is
checked on the IR, and that what must stay guarded does."""
from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from ir_interp import Ptr, run_kernel
from pysycl.bundle.kernel_id import get_kernel_id
from pysycl.bundle.linker import default_linked_kernel
from pysycl.ir.clone import clone_module
from pysycl.ir.parser import parse_module
from pysycl.ir.printer import print_module
from pysycl.ir.verifier import verify_module
from pysycl.passes.flatten_guards import flatten_guards
from pysycl.passes.pipeline import device_kernel_pipeline

F32, I64 = np.float32, np.int64
RNG = np.random.default_rng(20)


class Strict:
    """Flat memory whose out-of-range reads and writes raise (NumPy's wrap around)."""

    def __init__(self, array):
        self.array = array.reshape(-1)

    def _check(self, i):
        if not 0 <= int(i) < self.array.size:
            raise IndexError(f"access at {int(i)} of memory of {self.array.size} elements")
        return int(i)

    def __getitem__(self, i):
        return self.array[self._check(i)]

    def __setitem__(self, i, v):
        self.array[self._check(i)] = v


def ptr(array):
    return Ptr(Strict(array), 0)


def versions(kernel):
    """(name, module as linked, module after the pass)."""
    lk = default_linked_kernel(get_kernel_id(kernel))
    after = flatten_guards(clone_module(lk.module))
    verify_module(after)
    assert print_module(parse_module(print_module(after))) == print_module(after)
    return lk.name, lk.module, after


def ops_of(module, name):
    return [op for op in module.functions[0].walk() if op.name == name]


def guard_depth(module, op_name):
    """How many ``if`` ops enclose each ``op_name`` op."""
    out = []

    def walk(region, depth):
        for op in region.ops:
            if op.name == op_name:
                out.append(depth)
            for r in op.regions:
                walk(r, depth + (op.name == "if"))
    walk(module.functions[0].body, 0)
    return out


# The natural 3x3 convolution ------------------------------------------------------------
@sycl.kernel
def conv(it: sycl.item[2], inp: sycl.global_ptr[F32], out: sycl.global_ptr[F32],
         k: sycl.global_ptr[F32], rows: I64, cols: I64):
    r0 = it.get_id(0)
    c0 = it.get_id(1)
    acc = F32(0)
    for i in range(-1, 2):
        r = r0 + i
        if r >= 0 and r < rows:
            for j in range(-1, 2):
                c = c0 + j
                if c >= 0 and c < cols:
                    acc += k[(i + 1) * 3 + j + 1] * inp[r * cols + c]
    out[r0 * cols + c0] = acc


def conv_reference(img, k):
    padded = np.pad(img, 1)
    rows, cols = img.shape
    return sum(k[i, j] * padded[i:i + rows, j:j + cols] for i in range(3) for j in range(3))


@pytest.mark.parametrize("shape", [(5, 7), (1, 4), (6, 1), (3, 3)])
def test_the_convolution_computes_the_same(shape):
    name, before, after = versions(conv)
    img = RNG.standard_normal(shape).astype(F32)
    k = RNG.standard_normal((3, 3)).astype(F32)
    results = []
    for module in (before, after):
        out = np.full(shape, np.nan, F32)
        run_kernel(module, name, {"inp": ptr(img), "out": ptr(out), "k": ptr(k),
                                  "rows": I64(shape[0]), "cols": I64(shape[1])},
                   shape, (1, shape[1]))
        results.append(out)
    np.testing.assert_allclose(results[0], conv_reference(img, k), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(results[1], results[0])


def test_the_convolution_has_one_guard_per_load():
    _, before, after = versions(conv)
    # (The loops are LLVM's to unroll: two loads, of the weight and of the pixel.)
    assert guard_depth(before, "load") == [2, 2]      # row check, then column check
    assert guard_depth(after, "load") == [1, 1]       # one combined condition
    # Each condition is the row's and the column's, as a select (never an `and` of a
    # value that may come from code run where the row check fails).
    conditions = [op.operands[0].owner for op in ops_of(after, "if")
                  if any(o.name == "load" for o in op.regions[0].walk())]
    assert len(conditions) == 1 and conditions[0].name == "select"
    # No loop is left inside a guard.
    assert all(d == 0 for d in guard_depth(after, "for"))


def test_the_device_pipeline_runs_it_for_cuda_only():
    lk = default_linked_kernel(get_kernel_id(conv))
    cuda = device_kernel_pipeline(backend="cuda").run(clone_module(lk.module))
    opencl = device_kernel_pipeline(backend="opencl").run(clone_module(lk.module))
    assert guard_depth(cuda, "load") == [1, 1]
    assert guard_depth(opencl, "load") == [2, 2]


# What must stay as written --------------------------------------------------------------
@sycl.kernel
def read_after(it: sycl.item[1], inp: sycl.global_ptr[F32], out: sycl.global_ptr[F32],
               n: I64):
    i = it.get_id(0)
    x = F32(-1)
    if i < n:
        x = F32(i) * 2          # read after the guard: must not run where it is false
        if x > 3:
            out[i] = inp[i] + x
    out[i + 8] = x


@sycl.kernel
def counted(it: sycl.item[1], flags: sycl.global_ptr[I64], out: sycl.global_ptr[I64]):
    i = it.get_id(0)
    total = I64(0)
    for k in range(4):
        if flags[i * 4 + k] > 0:
            total = total + 1   # read before written in the guarded code: stays guarded
            if total > 1:
                out[i] += 1


@sycl.kernel
def leaves(it: sycl.item[1], inp: sycl.global_ptr[F32], out: sycl.global_ptr[F32], n: I64):
    i = it.get_id(0)
    if i < n:
        for j in range(3):
            c = i + j
            if c >= n:
                break           # a loop that may be left early keeps its guard outside
            out[i] += inp[c]


@sycl.kernel
def long_loop(it: sycl.item[1], inp: sycl.global_ptr[F32], out: sycl.global_ptr[F32],
              n: I64, m: I64):
    i = it.get_id(0)
    if i < n:
        for j in range(m):      # not a short constant loop: the guard stays outside
            c = i + j
            if c < n:
                out[i] += inp[c]


@pytest.mark.parametrize("kernel", [read_after, leaves, long_loop])
def test_guards_that_do_not_qualify_stay(kernel):
    _, before, after = versions(kernel)
    assert print_module(after) == print_module(before)


def test_read_before_written_stays_guarded():
    name, before, after = versions(counted)
    # `total` is read only in the guarded code, but there before it is written (its
    # value comes from earlier iterations): the guard stays where it is.
    assert print_module(after) == print_module(before)
    flags = RNG.integers(-1, 2, 8 * 4).astype(I64)
    out = np.zeros(8, I64)
    run_kernel(after, name, {"flags": ptr(flags), "out": ptr(out)}, (8,), (8,))
    positives = (flags.reshape(8, 4) > 0).sum(axis=1)
    np.testing.assert_array_equal(out, np.maximum(positives - 1, 0))


@pytest.mark.parametrize("n", [0, 3, 8])
def test_results_of_kernels_left_alone_are_unchanged(n):
    name, _, after = versions(read_after)
    inp = RNG.standard_normal(8).astype(F32)
    out = np.zeros(16, F32)
    run_kernel(after, name, {"inp": ptr(inp), "out": ptr(out), "n": I64(n)}, (8,), (8,))
    i = np.arange(8, dtype=F32)
    x = np.where(np.arange(8) < n, i * 2, -1).astype(F32)
    want = np.where((np.arange(8) < n) & (x > 3), inp + x, 0).astype(F32)
    np.testing.assert_array_equal(out[:8], want)
    np.testing.assert_array_equal(out[8:], x)


# Locals of a guarded body -----------------------------------------------------------------
@sycl.kernel
def stencil_1d(it: sycl.item[1], inp: sycl.global_ptr[F32], out: sycl.global_ptr[F32],
               n: I64, lo: I64):
    i = it.get_id(0)
    acc = F32(0)
    if i >= lo:                   # a guard around a short loop whose locals are its own
        for k in range(-2, 3):
            j = i + k
            w = F32(k * k + 1)
            if j >= 0 and j < n:
                acc += w * inp[j]
    out[i] = acc


@pytest.mark.parametrize("lo", [0, 3, 20])
def test_a_guard_moves_into_a_short_loop(lo):
    name, before, after = versions(stencil_1d)
    assert guard_depth(before, "load") == [2] and guard_depth(after, "load") == [1]
    n = 16
    inp = RNG.standard_normal(n).astype(F32)
    results = []
    for module in (before, after):
        out = np.full(n, np.nan, F32)
        run_kernel(module, name, {"inp": ptr(inp), "out": ptr(out), "n": I64(n),
                                  "lo": I64(lo)}, (n,), (n,))
        results.append(out)
    padded = np.pad(inp, 2)
    want = sum(F32(k * k + 1) * padded[2 + k:2 + k + n] for k in range(-2, 3))
    want = np.where(np.arange(n) >= lo, want, 0).astype(F32)
    np.testing.assert_allclose(results[0], want, rtol=1e-5)
    np.testing.assert_array_equal(results[1], results[0])
