import io

import pytest

import ir_samples
from pysycl.errors import errc, exception
from pysycl.ir.core import Module
from pysycl.passes.pipeline import (PassManager, PassOptions, device_kernel_pipeline,
                                    native_cpu_kernel_pipeline)


class RenamePass:
    name = "rename"

    def run(self, m, options):
        return Module(m.name + ".renamed", m.functions)


def test_passes_run_in_declared_order_with_reasons_and_timings():
    seen = []

    def first(m, options):
        seen.append("first")

    pm = PassManager("demo")
    pm.add_pass(first, "runs first")
    pm.add_pass(RenamePass, "returns a new module")
    out = pm.run(ir_samples.vector_add())
    assert out.name == "demo.renamed" and seen == ["first"]
    assert pm.describe() == [("first", "runs first"), ("rename", "returns a new module")]
    assert [n for n, _ in pm.timings] == ["first", "rename"]
    assert all(t >= 0 for _, t in pm.timings)


def test_verification_after_each_pass_names_the_pass():
    def breaks_ir(m, options):
        m.functions[0].body.ops[0].attrs.clear()

    pm = PassManager("demo")
    pm.add_pass(breaks_ir, "a buggy pass")
    with pytest.raises(exception) as info:
        pm.run(ir_samples.vector_add(), PassOptions(verify=True))
    assert info.value.code() == errc.build
    assert str(info.value).startswith("after pass demo.breaks_ir: IR verification failed")
    pm.run(ir_samples.vector_add(), PassOptions(verify=False))  # no check: no error


def test_dump_ir_after_each_pass(monkeypatch):
    stream = io.StringIO()
    pm = native_cpu_kernel_pipeline()
    pm.run(ir_samples.tree_reduction(), PassOptions(verify=True, dump=frozenset({"ir"}),
                                                    dump_stream=stream))
    text = stream.getvalue()
    assert "// IR after native_cpu.work_group_fission (one thread runs a work-group" in text
    assert text.count("// IR after") == len(pm.describe()) == 9 and "wg.items" in text
    assert [n for n, _ in pm.describe()] == ["unroll_static_range", "forward_constant_vars",
                                             "coarsen_threads", "prepare_reducers_native", "lower_group_reduce",
                                             "strip_uniform_loops", "work_group_fission",
                                             "finish_reducers_native", "split_item_range"]
    monkeypatch.setenv("PYSYCL_DUMP", "ir")
    stream = io.StringIO()
    device_kernel_pipeline().run(Module("m"), PassOptions(dump_stream=stream))
    assert stream.getvalue() == ('// IR after device.unroll_static_range (sycl.static_range '
                                 'loops must be unrolled before codegen)\nmodule "m"\n'
                                 '// IR after device.coarsen_threads (the kernels a build '
                                 'coarsens run K work-items per thread, before any pass '
                                 'that reads work-item structure)\nmodule "m"\n'
                                 '// IR after device.lower_reducers (reducers start from the '
                                 'identity and combine through a work-group reduction and '
                                 'one write per work-group)\nmodule "m"\n'
                                 '// IR after device.lower_complex_group_ops (the group '
                                 'primitives move single numbers: a complex value goes '
                                 'through them as its parts (after lower_reducers, which '
                                 'makes group ops))\nmodule "m"\n')
    monkeypatch.setenv("PYSYCL_DUMP", "")
    stream = io.StringIO()
    device_kernel_pipeline().run(Module("m"), PassOptions(dump_stream=stream))
    assert stream.getvalue() == ""


def test_compile_pipeline_verifies_then_unrolls():
    from pysycl.passes.pipeline import compile_pipeline, run_compile_pipeline

    assert [n for n, _ in compile_pipeline().describe()] == ["verify", "unroll_static_range"]
    m = run_compile_pipeline(ir_samples.loop_break_continue())
    assert m.name == "loops"
    bad = ir_samples.vector_add()
    bad.functions[0].body.ops[0].name = "nope"
    with pytest.raises(exception, match="not an op of the catalogue"):
        run_compile_pipeline(bad)
