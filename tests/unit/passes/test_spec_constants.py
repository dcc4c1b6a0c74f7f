"""passes/spec_constants.py: numeric IDs over the linked module, descriptors, default
blob, emulated offsets and the three lowerings (seed 001)."""
import struct

import numpy as np
import pytest

import pysycl as sycl
from pysycl.bundle import property_sets as ps
from pysycl.errors import errc, exception
from pysycl.ir.core import Module
from pysycl.passes.link import link_modules
from pysycl.passes.spec_constants import (PADDING_LEAF_ID, assign_spec_constant_ids,
                                          lower_spec_constants, spec_constants_used)

# Seed 001's example: int, A{int x; Nested n}, Nested{float a, b} --------------------------
nested_t = np.dtype([("a", np.float32), ("b", np.float32)], align=True)
a_t = np.dtype([("x", np.int32), ("n", nested_t)], align=True)
id_int = sycl.specialization_id(np.int32, 42)
id_A = sycl.specialization_id(a_t, (1, (3.0, 4.0)))
id_Nested = sycl.specialization_id(nested_t, (5.0, 6.0))


@sycl.kernel(name="unit_spec_seed001")
def seed001(h: sycl.kernel_handler, out: sycl.global_ptr[np.float32]):
    i = h.get_specialization_constant(id_int)
    a = h.get_specialization_constant(id_A)
    n = h.get_specialization_constant(id_Nested)
    out[0] = np.float32(i) + np.float32(a.x) + a.n.a + a.n.b + n.a + n.b


def _linked(*kernels):
    return link_modules([k.ir_module() for k in kernels], "linked")


def test_seed001_ids_descriptors_and_default_blob():
    mod = _linked(seed001)
    ids = assign_spec_constant_ids(mod)
    s_int, s_a, s_n = id_int.unique_id, id_A.unique_id, id_Nested.unique_id
    assert ids.order == [s_int, s_a, s_n]
    assert ids.ids[s_int] == [(0, 0, 4)]
    assert ids.ids[s_a] == [(1, 0, 4), (2, 4, 4), (3, 8, 4)]
    assert ids.ids[s_n] == [(4, 0, 4), (5, 4, 4)]
    assert ids.default_values == struct.pack("<iiffff", 42, 1, 3.0, 4.0, 5.0, 6.0)
    assert ids.offsets == {s_int: 0, s_a: 4, s_n: 16}
    # the property sets, byte-exact
    sets = ps.spec_constants_property_set(ids.ids)
    assert sets[s_a] == struct.pack("<9I", 1, 0, 4, 2, 4, 4, 3, 8, 4)
    assert sets[s_int] == struct.pack("<3I", 0, 0, 4)
    assert ps.spec_constant_default_values_property_set(ids.default_values) == {
        "all": ids.default_values}
    # unpacks as (ids, blob) like the doc says
    layout, blob = ids
    assert blob == ids.default_values and layout is ids.ids


def test_seed001_property_sets_on_an_executable_image():
    ctx = sycl.context()
    dev = [d for d in ctx.get_devices() if d.backend == sycl.backend.native_cpu]
    exe = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, devices=dev[:1],
                                 kernel=seed001)
    (img,) = [i for i in exe if i.has_kernel(seed001)]
    sets = img.property_sets
    sc = sets["SYCL/specialization constants"]
    assert sc[id_A.unique_id] == struct.pack("<9I", 1, 0, 4, 2, 4, 4, 3, 8, 4)
    assert sc[id_Nested.unique_id] == struct.pack("<6I", 4, 0, 4, 5, 4, 4)
    assert sets["SYCL/specialization constants default values"]["all"] == \
        struct.pack("<iiffff", 42, 1, 3.0, 4.0, 5.0, 6.0)


# Seed 000's POD: {A a[2]; vec<int,2> b} with A{int x; float y} ------------------------------
pod_a_t = np.dtype([("x", np.int32), ("y", np.float32)], align=True)
pod_t = np.dtype([("a", pod_a_t, (2,)), ("b", sycl.vec(np.int32, 2))], align=True)
id_i32 = sycl.specialization_id(np.int32)
id_pod = sycl.specialization_id(pod_t, (((1, 2.0), (3, 4.0)), (5, 6)))


@sycl.kernel(name="unit_spec_seed000")
def seed000(h: sycl.kernel_handler, out: sycl.global_ptr[np.int32]):
    out[0] = h.get_specialization_constant(id_i32)
    p = h.get_specialization_constant(id_pod)
    out[1] = p.a[1].x + p.b[1]


def test_seed000_composite_with_array_of_structs_and_vec():
    ids = assign_spec_constant_ids(_linked(seed000))
    assert ids.ids[id_i32.unique_id] == [(0, 0, 4)]
    assert ids.ids[id_pod.unique_id] == [(1, 0, 4), (2, 4, 4), (3, 8, 4), (4, 12, 4),
                                         (5, 16, 4), (6, 20, 4)]
    assert ids.offsets == {id_i32.unique_id: 0, id_pod.unique_id: 4}
    assert ids.default_values == struct.pack("<iififii", 0, 1, 2.0, 3, 4.0, 5, 6)


# Padding and over-aligned members ---------------------------------------------------------
pad_t = np.dtype([("c", np.int8), ("d", np.float64), ("s", np.int16)], align=True)   # 24 B
over_t = np.dtype({"names": ["c", "v"], "formats": [np.int8, np.float32],
                   "offsets": [0, 16], "itemsize": 32})                              # over-aligned
vec3_t = sycl.vec(np.float32, 3)
id_pad = sycl.specialization_id(pad_t, (1, 2.5, 3))
id_over = sycl.specialization_id(over_t, (7, 8.5))
id_vec3 = sycl.specialization_id(vec3_t, (1, 2, 3, 0))


@sycl.kernel(name="unit_spec_padding")
def padding(h: sycl.kernel_handler, out: sycl.global_ptr[np.float64]):
    p = h.get_specialization_constant(id_pad)
    o = h.get_specialization_constant(id_over)
    v = h.get_specialization_constant(id_vec3)
    out[0] = p.d + np.float64(o.v) + np.float64(v[2])


def test_padding_gets_padding_descriptors_and_consumes_no_id():
    ids = assign_spec_constant_ids(_linked(padding))
    P = PADDING_LEAF_ID
    assert ids.ids[id_pad.unique_id] == [(0, 0, 1), (P, 1, 7), (1, 8, 8), (2, 16, 2),
                                         (P, 18, 6)]
    assert ids.ids[id_over.unique_id] == [(3, 0, 1), (P, 1, 15), (4, 16, 4), (P, 20, 12)]
    assert ids.ids[id_vec3.unique_id] == [(5, 0, 4), (6, 4, 4), (7, 8, 4), (P, 12, 4)]
    # constants sit back to back (no alignment between them): 0, 24, 56
    assert ids.offsets == {id_pad.unique_id: 0, id_over.unique_id: 24, id_vec3.unique_id: 56}
    assert len(ids.default_values) == 24 + 32 + 16
    from pysycl.host_objects import value_bytes
    assert ids.default_values[:24] == value_bytes((1, 2.5, 3), pad_t)   # padding zeroed


# Separate compilation: IDs only after link ------------------------------------------------
id_m1 = sycl.specialization_id(np.float64, 1.0)
id_m2 = sycl.specialization_id(np.int16, 2)


@sycl.kernel(name="unit_spec_mod1")
def mod1(h: sycl.kernel_handler, out: sycl.global_ptr[np.float64]):
    out[0] = h.get_specialization_constant(id_m1)


@sycl.kernel(name="unit_spec_mod2")
def mod2(h: sycl.kernel_handler, out: sycl.global_ptr[np.int16]):
    out[0] = h.get_specialization_constant(id_m2)


def test_ids_are_assigned_over_the_linked_module():
    alone1 = assign_spec_constant_ids(_linked(mod1))
    alone2 = assign_spec_constant_ids(_linked(mod2))
    assert alone1.ids[id_m1.unique_id][0][0] == alone2.ids[id_m2.unique_id][0][0] == 0
    both = assign_spec_constant_ids(_linked(mod1, mod2))
    leaves = [l for v in both.ids.values() for l, _o, _s in v]
    assert sorted(leaves) == [0, 1]
    assert both.offsets == {id_m1.unique_id: 0, id_m2.unique_id: 8}   # f64 then i16


def test_unused_declared_constants_come_after_used_ones():
    m = _linked(mod2, mod1)
    m.spec_constants = list(reversed(m.spec_constants))
    used = spec_constants_used(m)
    ids = assign_spec_constant_ids(m)
    assert ids.order[:len(used)] == used


def test_undeclared_read_is_a_build_error():
    m = _linked(mod1)
    m.spec_constants = []
    with pytest.raises(exception) as info:
        assign_spec_constant_ids(m)
    assert info.value.code() == errc.build
    assert id_m1.unique_id in str(info.value)


def test_empty_module():
    ids, blob = assign_spec_constant_ids(Module("empty"))
    assert ids == {} and blob == b""


# Lowerings --------------------------------------------------------------------------------
def _ops(module, name):
    return [op for fn in module.functions for op in fn.walk() if op.name == name]


def test_three_lowerings_of_the_one_op():
    base = _linked(seed001)
    ids = assign_spec_constant_ids(base)
    lit = _linked(seed001)
    lower_spec_constants(lit, ids, "literal", {id_int.unique_id: np.int32(-7).tobytes()})
    consts = [op.attrs["value"] for op in _ops(lit, "const")]
    assert -7 in consts and not _ops(lit, "spec.get")
    assert np.array((1, (3.0, 4.0)), a_t).tobytes() in consts      # default of id_A
    emu = _linked(seed001)
    lower_spec_constants(emu, ids, "emulated")
    assert [op.attrs["offset"] for op in _ops(emu, "spec.load")] == [0, 4, 16]
    nat = _linked(seed001)
    lower_spec_constants(nat, ids, "native")
    assert [op.attrs["leaf_ids"] for op in _ops(nat, "spec.native")] == [(0,), (1, 2, 3), (4, 5)]
    assert nat.attrs["spec_constant_lowering"] == "native"
    with pytest.raises(exception) as info:
        lower_spec_constants(_linked(seed001), ids, "bogus")
    assert info.value.code() == errc.invalid


def test_buffer_and_native_values():
    ids = assign_spec_constant_ids(_linked(seed001))
    raw_a = np.array((9, (1.5, 2.5)), a_t).tobytes()
    buf = ids.buffer({id_A.unique_id: raw_a, "not.used": b"x"})
    assert buf[4:16] == raw_a and buf[:4] == struct.pack("<i", 42)
    assert ids.native_values({id_A.unique_id: raw_a}) == {
        1: struct.pack("<i", 9), 2: struct.pack("<f", 1.5), 3: struct.pack("<f", 2.5)}
    with pytest.raises(exception) as info:
        ids.buffer({id_A.unique_id: b"\0"})
    assert info.value.code() == errc.invalid
    sub = ids.restricted_to([id_Nested.unique_id])
    assert sub.ids == {id_Nested.unique_id: [(4, 0, 4), (5, 4, 4)]}   # IDs kept
    assert sub.offsets == {id_Nested.unique_id: 0}                      # own buffer layout
    assert sub.default_values == struct.pack("<ff", 5.0, 6.0)


id_complex = sycl.specialization_id(np.complex128, 1.5 - 2j)


@sycl.kernel(name="unit_spec_complex")
def spec_complex(h: sycl.kernel_handler, out: sycl.global_ptr[np.complex128]):
    out[0] = h.get_specialization_constant(id_complex)


def test_a_complex_constant_is_two_leaves_as_std_complex():
    """A struct {re, im}, as DPC++ sees std::complex: the pass and the property-set
    code (which works from the dtype) give the same leaves."""
    ids = assign_spec_constant_ids(_linked(spec_complex))
    assert ids.ids[id_complex.unique_id] == [(0, 0, 8), (1, 8, 8)]
    assert ps.assign_leaf_ids([("c", np.complex128)]) == {"c": [(0, 0, 8), (1, 8, 8)]}
    assert ids.default_values == struct.pack("<dd", 1.5, -2.0)
