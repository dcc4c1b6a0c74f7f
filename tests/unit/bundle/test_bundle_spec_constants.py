"""Seed 001's spec-constant example: numeric IDs, descriptors, default blob, offsets."""
from __future__ import annotations

import struct

import numpy as np

from pysycl.bundle import property_sets as ps
from pysycl.bundle.device_image import image_property_sets
from pysycl.ir.core import Function, Module, Op, Region
from pysycl.ir.types import VOID
from pysycl.passes.spec_constants import assign_spec_constant_ids, lower_spec_constants

from bundle_fakes import spec_decl

NESTED = np.dtype([("a", np.float32), ("b", np.float32)])
A = np.dtype([("x", np.int32), ("n", NESTED)])


def example_module(order=("id_int", "id_A", "id_Nested")):
    decls = {"id_int": spec_decl("id_int", np.int32, 42),
             "id_A": spec_decl("id_A", A, (1, (3.0, 4.0))),
             "id_Nested": spec_decl("id_Nested", NESTED, (5.0, 6.0))}
    body = Region([Op("spec.get", type=decls[s].type, attrs={"id": s}) for s in order])
    m = Module("m", [Function("k", "kernel", [], VOID, body)])
    m.spec_constants = [decls["id_Nested"], decls["id_int"], decls["id_A"]]  # declaration order differs
    return m


def test_ids_descriptors_blob_offsets():
    ids = assign_spec_constant_ids(example_module())
    assert ids.ids == {"id_int": [(0, 0, 4)], "id_A": [(1, 0, 4), (2, 4, 4), (3, 8, 4)],
                       "id_Nested": [(4, 0, 4), (5, 4, 4)]}
    assert ids.default_values == struct.pack("<ii4f", 42, 1, 3, 4, 5, 6)
    assert ids.offsets == {"id_int": 0, "id_A": 4, "id_Nested": 16}
    reg = image_property_sets(example_module(), ids)
    assert ps.unpack_spec_constant_descriptors(reg[ps.SPEC_CONSTANTS]["id_A"]) == [
        (1, 0, 4), (2, 4, 4), (3, 8, 4)]
    assert reg[ps.SPEC_CONSTANTS_DEFAULT_VALUES]["all"] == ids.default_values


def test_order_of_first_use_then_declared():
    ids = assign_spec_constant_ids(example_module(order=("id_Nested",)))
    assert ids.ids["id_Nested"] == [(0, 0, 4), (1, 4, 4)]
    assert [s for s in ids.offsets] == ["id_Nested", "id_int", "id_A"]


def test_padding_leaf():
    dt = np.dtype([("i", np.int32), ("c", np.int8)], align=True)
    m = example_module(order=())
    m.spec_constants = [spec_decl("p", dt, (1, 2))]
    assert assign_spec_constant_ids(m).ids["p"] == [(0, 0, 4), (1, 4, 1), (0xFFFFFFFF, 5, 3)]


def test_three_lowerings():
    for mode, name in (("literal", "const"), ("emulated", "spec.load"), ("native", "spec.native")):
        m = example_module()
        ids = assign_spec_constant_ids(m)
        lower_spec_constants(m, ids, mode, {"id_int": struct.pack("<i", 9)})
        ops = list(m.functions[0].walk())
        assert [op.name for op in ops] == [name] * 3
        if mode == "literal":
            assert ops[0].attrs["value"] == 9 and ops[1].attrs["value"] == struct.pack("<i2f", 1, 3, 4)
        elif mode == "emulated":
            assert [op.attrs["offset"] for op in ops] == [0, 4, 16]
        else:
            assert ops[1].attrs["leaf_ids"] == (1, 2, 3)
    assert ids.buffer({"id_int": struct.pack("<i", 9)})[:4] == struct.pack("<i", 9)
    assert ids.native_values({"id_A": struct.pack("<i2f", 7, 1, 2)}) == {
        1: struct.pack("<i", 7), 2: struct.pack("<f", 1), 3: struct.pack("<f", 2)}
