"""``fission_uniform.optimise_fission`` (what the native CPU pipeline runs after fission):
the rewritten kernels compute what the plain split computes (IR interpreter)."""
import numpy as np
import pytest

import ir_samples
import test_pass_fission as base
from ir_interp import run_kernel
from pysycl.ir.parser import parse_module
from pysycl.ir.printer import print_module
from pysycl.ir.verifier import verify_module
from pysycl.passes.lower_group_reduce import lower_group_reduce
from pysycl.passes.pipeline import native_cpu_kernel_pipeline
from pysycl.passes.work_group_fission import work_group_fission


def fission(m):
    work_group_fission(m, optimise=True)
    verify_module(m)
    assert print_module(parse_module(print_module(m))) == print_module(m)
    return m


@pytest.mark.parametrize("kind", ["for", "while"])
@pytest.mark.parametrize("local,groups", [(1, 3), (2, 2), (8, 4), (16, 2), (32, 1)])
def test_optimised_reduction_matches_numpy(kind, local, groups):
    rng = np.random.default_rng(local * 7 + groups)
    inp = rng.integers(-50, 50, local * groups).astype(np.float32)
    m = fission(ir_samples.tree_reduction(kind))
    out, args = base.reduce_args(inp, groups, local, int(np.log2(local)))
    run_kernel(m, "red.sum", args, (local * groups,), (local,))
    np.testing.assert_array_equal(out, inp.reshape(groups, local).sum(axis=1))


def test_optimised_reduction_keeps_fewer_per_item_vars():
    plain = work_group_fission(ir_samples.tree_reduction("while"))
    opt = fission(ir_samples.tree_reduction("while"))

    def per_item(m):
        return sorted(op.attrs["name"] for op in m.functions[0].body.ops
                      if op.name == "var" and op.attrs.get("per_item"))
    assert len(per_item(opt)) <= len(per_item(plain))


def test_optimised_uniform_break():
    m = fission(base._uniform_break_kernel())
    out = np.zeros(8, np.int64)
    run_kernel(m, "brk.k", {"acc": out, "stop": np.int64(4)}, (8,), (4,))
    np.testing.assert_array_equal(out, np.full(8, 0 + 1 + 2 + 3))


@pytest.mark.parametrize("op,fn", [("plus", np.sum), ("minimum", np.min), ("maximum", np.max)])
def test_optimised_group_reduce(op, fn):
    m = base._group_sum_kernel(op)
    lower_group_reduce(m)
    fission(m)
    inp = np.arange(24, dtype=np.float32)[::-1].copy()
    out = np.zeros(24, np.float32)
    run_kernel(m, "gr.k", {"inp": inp, "out": out}, (24,), (6,))
    np.testing.assert_array_equal(out, np.repeat(fn(inp.reshape(4, 6), axis=1), 6))


def test_native_pipeline_runs_the_optimisation():
    m = native_cpu_kernel_pipeline().run(ir_samples.tree_reduction("while"))
    out, args = base.reduce_args(np.arange(16, dtype=np.float32), 2, 8, 3)
    run_kernel(m, "red.sum", args, (16,), (8,))
    np.testing.assert_array_equal(out, [28, 92])
