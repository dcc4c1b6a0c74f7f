"""Thread coarsening in the compiler, no device: which kernels link marks as candidates
(and why the others are not), the plan a build takes from ``PYSYCL_COARSEN``, the shape
of a coarsened kernel, and the launch geometry the image records. Results on devices:
tests/acceptance/test_coarsening.py."""
from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl import config
from pysycl.bundle import coarsening, property_sets as ps
from pysycl.bundle.kernel_id import get_kernel_id
from pysycl.bundle.linker import default_linked_kernel
from pysycl.errors import errc, exception
from pysycl.ir.clone import clone_module
from pysycl.ir.verifier import verify_module
from pysycl.passes.coarsen_candidates import ATTR, analyse_kernel, choose
from pysycl.passes.coarsen_threads import DONE_ATTR, EXTENT_PARAM, coarsen_kernel
from pysycl.passes.pipeline import PassOptions, device_kernel_pipeline

F32, I32, I64 = np.float32, np.int32, np.int64
R = sycl.properties(sycl.restrict)


def linked(kernel):
    lk = default_linked_kernel(get_kernel_id(kernel))
    return lk.module, lk.module.function(lk.name)


# Candidates --------------------------------------------------------------------------------
@sycl.kernel
def stencil(it: sycl.item[2], inp: sycl.annotated_ptr[F32, R], out: sycl.annotated_ptr[F32, R],
            rows: I64, cols: I64):
    r0, c0 = it.get_id(0), it.get_id(1)
    acc = F32(0)
    for i in range(-1, 2):
        r = r0 + i
        if r >= 0 and r < rows:
            acc += inp[r * cols + c0]
    out[r0 * cols + c0] = acc


@sycl.kernel
def rows_by_hand(it: sycl.item[2], inp: sycl.global_ptr[F32], out: sycl.global_ptr[F32],
                 cols: I64):
    r0 = it.get_id(0) * 2            # already two rows per work-item: no shared rows left
    c = it.get_id(1)
    out[r0 * cols + c] = inp[r0 * cols + c]
    out[(r0 + 1) * cols + c] = inp[(r0 + 1) * cols + c] * 2


@sycl.kernel
def columns_only(nd: sycl.nd_item[2], out: sycl.global_ptr[I64]):
    out[nd.get_global_linear_id()] = nd.get_local_id(1) + nd.get_group(1)


@sycl.device
def twice(x: F32) -> F32:
    return x * 2


@sycl.kernel
def calls_pure(it: sycl.item[1], x: sycl.global_ptr[F32]):
    x[it.get_id(0)] = twice(x[it.get_id(0)])


def test_stencil_is_a_candidate_with_reuse_along_rows_and_columns():
    _, fn = linked(stencil)
    assert fn.attrs[ATTR]["dims"] == 2 and fn.attrs[ATTR]["allowed"] == [0, 1]
    assert fn.attrs[ATTR]["reuse"] == [0]       # rows r0-1, r0, r0+1 of one pointer


def test_reuse_needs_two_offsets_of_one_pointer():
    assert linked(rows_by_hand)[1].attrs[ATTR]["reuse"] == []
    verdict = linked(calls_pure)[1].attrs[ATTR]     # a call of a pure function is fine
    assert verdict["allowed"] == [0] and verdict["reuse"] == []


def test_group_queries_in_one_dimension_leave_the_others():
    assert linked(columns_only)[1].attrs[ATTR]["allowed"] == [0]


@sycl.kernel
def no_barrier_ok(nd: sycl.nd_item[1], x: sycl.global_ptr[F32], s: sycl.local_accessor[F32, 1]):
    s[nd.get_local_id(0)] = x[nd.get_global_id(0)]
    sycl.group_barrier(nd.get_group())
    x[nd.get_global_id(0)] = s[0]


@sycl.kernel
def group_sum(nd: sycl.nd_item[1], x: sycl.global_ptr[F32]):
    x[nd.get_global_id(0)] = sycl.reduce_over_group(nd.get_group(), x[nd.get_global_id(0)],
                                                    sycl.plus())


@sycl.kernel
def barrier_only(nd: sycl.nd_item[2], x: sycl.global_ptr[F32]):
    v = x[nd.get_global_linear_id()]
    sycl.group_barrier(nd.get_group())
    x[nd.get_global_linear_id()] = v + 1


@sycl.kernel
def sub_group_id(nd: sycl.nd_item[1], x: sycl.global_ptr[I64]):
    x[nd.get_global_id(0)] = nd.get_sub_group().get_local_id()


@sycl.kernel
def atomic_wait(it: sycl.item[1], flags: sycl.global_ptr[I32]):
    while sycl.atomic_ref(flags, 0).load() == 0:
        pass


@sycl.kernel
def atomic_cas(it: sycl.item[1], flags: sycl.global_ptr[I32]):
    sycl.atomic_ref(flags, 0).compare_exchange_strong(I32(0), I32(1))


@sycl.kernel
def rmw_spin(it: sycl.item[1], flags: sycl.global_ptr[I32]):
    while sycl.atomic_ref(flags, 0).fetch_add(I32(0)) < 5:
        pass


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(8)))
def wg_size(it: sycl.item[1], x: sycl.global_ptr[F32]):
    x[it.get_id(0)] = 1


@sycl.kernel(properties=sycl.properties(sycl.sub_group_size(32)))
def sg_size(it: sycl.item[1], x: sycl.global_ptr[F32]):
    x[it.get_id(0)] = 1


@sycl.kernel
def local_linear(nd: sycl.nd_item[2], x: sycl.global_ptr[I64]):
    x[nd.get_global_linear_id()] = nd.get_local_linear_id()


@sycl.kernel
def group_linear(nd: sycl.nd_item[2], x: sycl.global_ptr[I64]):
    x[nd.get_global_linear_id()] = nd.get_group_linear_id()


@sycl.kernel
def local_id_everywhere(nd: sycl.nd_item[1], x: sycl.global_ptr[I64]):
    x[nd.get_global_id(0)] = nd.get_local_id(0)


@sycl.device
def where(it: sycl.item[1]) -> I64:
    return it.get_id(0) * 2


@sycl.kernel
def calls_query(it: sycl.item[1], x: sycl.global_ptr[I64]):
    x[it.get_id(0)] = where(it)


@sycl.kernel
def reduces(nd: sycl.nd_item[1], x: sycl.global_ptr[F32], s: sycl.reducer[F32]):
    s += x[nd.get_global_id(0)]


@sycl.kernel
def reduces_over_a_range(it: sycl.item[1], x: sycl.global_ptr[F32], s: sycl.reducer[F32],
                         h: sycl.reducer[I64, 4]):
    s += x[it.get_id(0)]
    h[it.get_id(0) % 4] += 1


@sycl.kernel
def single(x: sycl.global_ptr[F32]):
    x[0] = 1


@pytest.mark.parametrize("kernel,why", [
    (no_barrier_ok, "local memory (parameter s)"),
    (group_sum, "group algorithm (group.reduce)"),
    (barrier_only, "group_barrier at "),
    (sub_group_id, "asks about its sub-group"),
    (atomic_wait, "atomic load (work-items may wait for each other)"),
    (atomic_cas, "atomic cmpxchg"),
    (rmw_spin, "atomic read-modify-write in a while loop"),
    (wg_size, "work-group property sycl-work-group-size"),
    (sg_size, "work-group property sycl-sub-group-size"),
    (local_linear, "local linear id"),
    (group_linear, "group linear id"),
    (local_id_everywhere, "local id or group in every dimension"),
    (calls_query, "which asks about its work-item"),
    (reduces, "reductions and an nd_item"),
    (single, "not a range or nd_range kernel"),
])
def test_what_rules_coarsening_out_says_why(kernel, why):
    module, fn = linked(kernel)
    assert ATTR not in fn.attrs
    verdict, reason = analyse_kernel(fn, module)
    assert verdict is None and why in reason
    assert choose(fn.attrs.get(ATTR), "cuda", 4) is None


# Plans -------------------------------------------------------------------------------------
REUSE_ROWS = {"dims": 2, "allowed": [0, 1], "reuse": [0, 1], "ops": 50}


@pytest.mark.parametrize("verdict,backend,knob,plan", [
    (REUSE_ROWS, "cuda", "auto", (0, 4)),
    (REUSE_ROWS, "opencl", "auto", None),           # auto: CUDA only
    (REUSE_ROWS, "native_cpu", "auto", None),
    (REUSE_ROWS, "cuda", "off", None),
    (dict(REUSE_ROWS, ops=10_000), "cuda", "auto", None),   # too big to copy 8 times
    ({"dims": 2, "allowed": [0, 1], "reuse": [1], "ops": 9}, "cuda", "auto", None),
    ({"dims": 1, "allowed": [0], "reuse": [0], "ops": 9}, "cuda", "auto", None),
    ({"dims": 1, "allowed": [0], "reuse": [], "ops": 9}, "native_cpu", 2, (0, 2)),
    ({"dims": 3, "allowed": [1, 2], "reuse": [2], "ops": 9}, "opencl", 3, (2, 3)),
    ({"dims": 3, "allowed": [0, 1, 2], "reuse": [1, 2], "ops": 9}, "opencl", 8, (1, 8)),
    ({"dims": 2, "allowed": [1], "reuse": [0], "ops": 9}, "cuda", 4, (1, 4)),
    (None, "cuda", 4, None),
    # Reductions: auto coarsens by 32 (16 for larger bodies) on CUDA (fewer work-groups
    # and atomics), along the slowest dimension, even without reuse; small bodies only.
    ({"dims": 1, "allowed": [0], "reuse": [], "ops": 9, "reducers": True}, "cuda", "auto",
     (0, 32)),
    ({"dims": 1, "allowed": [0], "reuse": [], "ops": 120, "reducers": True}, "cuda",
     "auto", (0, 16)),
    ({"dims": 2, "allowed": [0, 1], "reuse": [], "ops": 9, "reducers": True}, "cuda",
     "auto", (0, 32)),
    ({"dims": 1, "allowed": [0], "reuse": [], "ops": 9, "reducers": True}, "opencl",
     "auto", None),
    ({"dims": 1, "allowed": [0], "reuse": [], "ops": 500, "reducers": True}, "cuda",
     "auto", None),
    ({"dims": 1, "allowed": [0], "reuse": [], "ops": 9, "reducers": True}, "opencl", 4,
     (0, 4)),
])
def test_plan_of_a_build(verdict, backend, knob, plan):
    assert choose(verdict, backend, knob) == plan


@pytest.mark.parametrize("raw,value", [("", "auto"), ("auto", "auto"), ("OFF", "off"),
                                       ("0", "off"), ("1", "off"), ("2", 2), (" 64 ", 64)])
def test_setting(monkeypatch, raw, value):
    monkeypatch.setenv("PYSYCL_COARSEN", raw)
    assert config.coarsen() == value


@pytest.mark.parametrize("raw", ["65", "-2", "four", "2.5"])
def test_bad_setting_is_named(monkeypatch, raw):
    monkeypatch.setenv("PYSYCL_COARSEN", raw)
    with pytest.raises(exception) as info:
        config.coarsen()
    assert info.value.code() == errc.invalid and f"PYSYCL_COARSEN={raw.strip()!r}" in str(info.value)


# The rewrite -------------------------------------------------------------------------------
def test_coarsened_kernel_shape():
    module, _ = linked(stencil)
    m = clone_module(module)
    fn = m.kernels[0]
    coarsen_kernel(fn, 0, 4)
    verify_module(m)
    assert fn.params[-1].name == EXTENT_PARAM and fn.attrs[DONE_ATTR] == {"dim": 0, "factor": 4}
    assert ATTR not in fn.attrs
    fast = fn.body.ops[-1]
    assert fast.name == "if"
    # Interior: four unguarded copies whose row checks are constants; elsewhere: four
    # copies each under its own "is this work-item in the range" check.
    inside, outside = fast.regions
    assert sum(op.name == "store" for op in inside.walk()) == 4
    assert not any(op.name == "cmp" and op.operands[1] is fn.params[3].value  # rows
                   for op in inside.walk())
    assert sum(op.name == "cmp" and op.operands[1] is fn.params[-1].value
               for op in outside.ops) == 4
    names = {op.attrs["name"] for op in fn.body.ops if op.name == "var"}
    assert {"acc", "acc@1", "acc@2", "acc@3"} <= names
    # No work-item query of the coarsened dimension is left in a copy.
    assert not any(op.name in ("wi.global_id", "wi.global_range") and op.attrs["dim"] == 0
                   for op in fast.walk())


def test_pipeline_coarsens_what_the_plan_names():
    module, fn = linked(stencil)
    m = device_kernel_pipeline().run(clone_module(module),
                                     PassOptions(verify=True, extra={"coarsen": {fn.name: (0, 2)}}))
    assert m.kernels[0].attrs[DONE_ATTR] == {"dim": 0, "factor": 2}
    same = device_kernel_pipeline().run(clone_module(module), PassOptions(verify=True))
    assert DONE_ATTR not in same.kernels[0].attrs and ATTR in same.kernels[0].attrs


def test_bad_plan_is_refused():
    module, _ = linked(stencil)
    with pytest.raises(ValueError):
        coarsen_kernel(clone_module(module).kernels[0], 2, 4)


# The image and the launch -----------------------------------------------------------------
@pytest.mark.parametrize("size,local,launch", [
    ((10, 7), None, (3, 7)), ((12, 7), None, (3, 7)), ((1,), None, (1,)), ((0, 4), None, (0, 4)),
    ((64, 64), (8, 32), (16, 64)), ((72, 8), (4, 8), (20, 8)), ((8, 3), (8, 1), (8, 3))])
def test_launch_geometry(size, local, launch):
    got, kept, extent = coarsening.Coarsening(0, 4).geometry(size, local)
    assert got == launch and kept == local and extent == size[0]
    if local is not None:
        assert all(g % l == 0 for g, l in zip(got, local))
    assert got[0] * 4 >= size[0]


def test_image_records_the_plan_and_one_more_argument():
    reg = ps.PropertySetRegistry({ps.KERNEL_PARAM_OPT: {"k": ps.kernel_param_opt_mask([False] * 5)}})
    assert coarsening.with_plans(reg, {}) is reg
    out = coarsening.with_plans(reg, {"k": (1, 4)})
    assert out.get(coarsening.COARSENING_SET) == {"k": b"\x01\x00\x00\x00\x04\x00\x00\x00"}
    assert out[ps.KERNEL_PARAM_OPT]["k"].bit_size == 6 and reg[ps.KERNEL_PARAM_OPT]["k"].bit_size == 5

    class Image:
        _registry = out
    c = coarsening.of_image(Image, "k", 2)
    assert (c.dim, c.factor) == (1, 4) and coarsening.of_image(Image, "other", 2) is None


@pytest.mark.parametrize("raw,dims", [(b"\x01\x00\x00\x00", 2), (b"\x02\x00\x00\x00\x04\x00\x00\x00", 2),
                                      (b"\x00\x00\x00\x00\x01\x00\x00\x00", 2),
                                      (b"\x00\x00\x00\x00\xff\x00\x00\x00", 2),
                                      (b"\x00\x00\x00\x00\x04\x00\x00\x00", None)])
def test_malformed_record_is_invalid(raw, dims):
    class Image:
        _registry = ps.PropertySetRegistry({coarsening.COARSENING_SET: {"k": raw}})
    with pytest.raises(exception) as info:
        coarsening.of_image(Image, "k", dims)
    assert info.value.code() == errc.invalid and "kernel k" in str(info.value)


def test_reducer_copies_share_the_accumulators_and_stride_by_the_launch():
    """The copies combine into the reducers' one accumulator each (a scalar and a span),
    and copy k is work-item ``id + k * ceil(G / K)``; the work-group reduction that
    lower_reducers appends comes after all of them, once per reducer element."""
    module, fn = linked(reduces_over_a_range)
    assert fn.attrs[ATTR]["reducers"] is True
    accs = {r["acc"] for r in fn.attrs["reducers"]}
    coarsen_kernel(fn, 0, 4)
    names = {op.attrs["name"] for op in fn.walk() if op.name.startswith("var")}
    assert accs <= names and not any(n.partition("@")[0] in accs and "@" in n for n in names)
    decls = [op.attrs["name"] for op in fn.body.ops if op.name == "var"]
    assert all(decls.count(acc) == 1 for acc in accs)
    assert any(op.name == "floordiv" for op in fn.body.ops)    # the stride ceil(G / K)
    device_kernel_pipeline().run(module, PassOptions(verify=True))
    reduces_at = [i for i, op in enumerate(fn.body.ops) if op.name == "group.reduce"]
    assert len(reduces_at) == 1 + 4
    assert all(op.name != "group.reduce" for top in fn.body.ops[:reduces_at[0]]
               for op in top.walk())
