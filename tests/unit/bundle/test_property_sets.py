"""DPC++ property sets: LLVM base64, text format, spec-constant and device-global sets."""
import random
import struct

import numpy as np
import pytest

from pysycl.bundle.property_sets import (
    DEVICE_GLOBALS, PADDING_LEAF_ID, SPEC_CONSTANTS, SPEC_CONSTANTS_DEFAULT_VALUES, BitBytes,
    PropertySetRegistry, assign_leaf_ids, base64_decode, base64_encode, decode_value,
    default_values_blob, device_global_descriptor,
    device_globals_property_set, encode_value, exported_symbols_property_set,
    imported_symbols_property_set, kernel_names_property_set, kernel_param_opt_mask,
    pack_spec_constant_descriptors, spec_constant_default_values_property_set,
    spec_constant_offsets, spec_constants_property_set, unpack_device_global_descriptor,
    unpack_spec_constant_descriptors)
from pysycl.errors import errc, exception
from pysycl.spec_values import value_bytes

NESTED = np.dtype([("a", np.float32), ("b", np.float32)])
A = np.dtype([("x", np.int32), ("n", NESTED)])


def assert_invalid(fn, *args):
    with pytest.raises(exception) as info:
        fn(*args)
    assert info.value.code() is errc.invalid
    return info.value


class TestBase64:
    # Vectors from DPC++'s sycl-post-link lit tests (sycl-spec-notes.md §3.2).
    def test_dpcpp_vectors(self):
        assert base64_encode(struct.pack("<Q", 2) + b"\x01") == "CAAAAAAAAAQA"
        assert base64_encode(struct.pack("<Q", 11) + b"\x7e\x06") == "LAAAAAAAAAgfGA"
        assert base64_encode(struct.pack("<QII", 64, 1, 1)).startswith("ABAAAAAAAAQAAAAAB")

    def test_lsb_first_differs_from_rfc4648(self):
        import base64
        data = b"\x01\x02\x03"
        assert base64_encode(data) != base64.b64encode(data).decode()
        assert base64_encode(b"\x00\x00\x00") == "AAAA"
        assert base64_encode(b"\xff\xff\xff") == "////"
        assert base64_encode(b"\x3f") == "/A"  # low 6 bits first
        assert base64_encode(b"") == ""

    def test_lengths_and_round_trip(self):
        rng = random.Random(1)
        for n in range(0, 40):
            data = bytes(rng.randrange(256) for _ in range(n))
            text = base64_encode(data)
            assert len(text) == (8 * n + 5) // 6
            assert "=" not in text
            assert base64_decode(text) == data

    def test_decode_rejects_garbage(self):
        assert_invalid(base64_decode, "AB=A")
        assert_invalid(base64_decode, "A")        # length 1 mod 4
        assert_invalid(base64_decode, "AÄ")
        assert_invalid(base64_decode, "/E")       # stray high bits in the last char
        assert base64_decode("/B") == b"\x7f"
        assert base64_decode("/A") == b"\x3f"


class TestValues:
    def test_u32(self):
        assert encode_value(0) == "1|0"
        assert encode_value(0xFFFFFFFF) == "1|4294967295"
        assert decode_value("1|42") == 42
        assert_invalid(encode_value, 1 << 32)
        assert_invalid(encode_value, -1)
        assert_invalid(encode_value, True)
        assert_invalid(decode_value, "1|4294967296")
        assert_invalid(decode_value, "1|-3")
        assert_invalid(decode_value, "1|")

    def test_bytes_with_bit_size(self):
        assert encode_value(BitBytes(b"\x01", 2)) == "2|CAAAAAAAAAQA"
        assert decode_value("2|CAAAAAAAAAQA") == BitBytes(b"\x01", 2)
        assert decode_value("2|LAAAAAAAAAgfGA").bit_size == 11
        full = decode_value(encode_value(b"abc"))
        assert full == b"abc" and type(full) is bytes
        assert BitBytes(b"\x01", 2) != b"\x01"  # same bytes, different bit size
        assert_invalid(BitBytes, b"\x01\x02", 3)

    def test_decode_errors(self):
        assert_invalid(decode_value, "3|1")
        assert_invalid(decode_value, "nonsense")
        assert_invalid(decode_value, "2|AAAA")  # shorter than its size field
        # size field says 16 bits but 1 byte follows
        assert_invalid(decode_value, "2|" + base64_encode(struct.pack("<Q", 16) + b"\x01"))


class TestRegistryText:
    def test_text_form(self):
        reg = PropertySetRegistry()
        reg.add(DEVICE_GLOBALS, "m.dg", device_global_descriptor(1, True))
        reg.add("SYCL/kernel names", "m.k", 1)
        assert reg.to_text() == ("[SYCL/device globals]\n"
                                 "m.dg=2|ABAAAAAAAAQAAAAABAAAAA\n"
                                 "[SYCL/kernel names]\n"
                                 "m.k=1|1\n")

    def test_round_trip(self):
        reg = PropertySetRegistry({
            SPEC_CONSTANTS: {"m.a": pack_spec_constant_descriptors([(0, 0, 4)])},
            "SYCL/misc properties": {"optLevel": 2, "sanUsed": b"asan"},
            "SYCL/kernel param opt": {"k": kernel_param_opt_mask([True, False, True])},
            "empty set": {},
        })
        back = PropertySetRegistry.from_text(reg.to_text())
        assert back == reg
        assert list(back) == list(reg)
        assert back["SYCL/kernel param opt"]["k"].bit_size == 3
        assert back.to_dict() == reg.to_dict()

    def test_parser_tolerates_blank_lines_and_splits_first(self):
        reg = PropertySetRegistry.from_text("\n[S]\n\nk=1|5\nx|y=1|6\n")
        assert reg["S"] == {"k": 5, "x|y": 6}

    @pytest.mark.parametrize("text", [
        "k=1|1\n",                 # property before any set
        "[S\nk=1|1\n",             # unterminated header
        "[S]\nnovalue\n",
        "[S]\n=1|1\n",
        "[S]\nk=1|1\nk=1|2\n",     # repeated key
        "[S]\n[S]\n",              # repeated set
        "[S]\nk=9|1\n",
        "[]\n",
    ])
    def test_parser_rejects(self, text):
        assert_invalid(PropertySetRegistry.from_text, text)

    def test_names_that_cannot_round_trip_are_rejected(self):
        reg = PropertySetRegistry()
        assert_invalid(reg.add, "S", "a=b", 1)
        assert_invalid(reg.add, "S", "a\nb", 1)
        assert_invalid(reg.add_set, "bad]name")
        assert_invalid(reg.add, "S", "k", "string")


class TestSpecConstantSets:
    def test_design_example_ids_and_descriptors(self):
        layout = assign_leaf_ids([("id_int", np.int32), ("id_A", A), ("id_Nested", NESTED)])
        assert layout == {"id_int": [(0, 0, 4)],
                          "id_A": [(1, 0, 4), (2, 4, 4), (3, 8, 4)],
                          "id_Nested": [(4, 0, 4), (5, 4, 4)]}
        values = spec_constants_property_set(layout)
        assert values["id_A"] == struct.pack("<9I", 1, 0, 4, 2, 4, 4, 3, 8, 4)
        assert unpack_spec_constant_descriptors(values["id_A"]) == layout["id_A"]

    def test_design_example_defaults_blob_and_offsets(self):
        consts = [("id_int", np.int32, 42), ("id_A", A, (1, (3.0, 4.0))),
                  ("id_Nested", NESTED, (5.0, 6.0))]
        layout = assign_leaf_ids([(s, d) for s, d, _ in consts])
        blob = default_values_blob(list(reversed(consts)), layout)  # input order irrelevant
        assert blob == struct.pack("<iiffff", 42, 1, 3.0, 4.0, 5.0, 6.0)
        assert spec_constant_default_values_property_set(blob) == {"all": blob}
        assert spec_constant_offsets([(s, d) for s, d, _ in consts], layout) == \
            {"id_int": 0, "id_A": 4, "id_Nested": 16}

    def test_padding_leaves_like_dpcpp_lit_test(self):
        s = np.dtype([("i", np.int32), ("c", np.int8)], align=True)  # struct{int; char}
        assert assign_leaf_ids([("s", s)])["s"] == [(0, 0, 4), (1, 4, 1), (PADDING_LEAF_ID, 5, 3)]

    def test_inner_padding_sub_arrays_and_vec3(self):
        inner = np.dtype([("c", np.int8), ("d", np.float64)], align=True)
        outer = np.dtype([("h", np.float16), ("arr", np.int32, (2,)), ("in", inner)], align=True)
        assert assign_leaf_ids([("o", outer)], start=10)["o"] == [
            (10, 0, 2), (PADDING_LEAF_ID, 2, 2), (11, 4, 4), (12, 8, 4),
            (PADDING_LEAF_ID, 12, 4), (13, 16, 1), (PADDING_LEAF_ID, 17, 7), (14, 24, 8)]
        vec3 = np.dtype({"names": ["v"], "formats": [(np.float32, (3,))], "itemsize": 16})
        assert assign_leaf_ids([("v", vec3)])["v"] == [
            (0, 0, 4), (1, 4, 4), (2, 8, 4), (PADDING_LEAF_ID, 12, 4)]
        assert assign_leaf_ids([("m", np.dtype((np.float32, (2, 2))))])["m"] == [
            (0, 0, 4), (1, 4, 4), (2, 8, 4), (3, 12, 4)]

    def test_complex_is_two_leaves(self):
        assert assign_leaf_ids([("z", np.complex64)])["z"] == [(0, 0, 4), (1, 4, 4)]

    def test_shuffled_offsets_are_not_a_c_struct(self):
        swapped = np.dtype({"names": ["b", "a"], "formats": [np.int32, np.int16],
                            "offsets": [4, 0], "itemsize": 8})
        e = assert_invalid(assign_leaf_ids, [("m.s", swapped)])
        assert "m.s" in str(e)

    def test_rejects_bad_types(self):
        assert_invalid(assign_leaf_ids, [("o", np.dtype(object))])
        assert_invalid(assign_leaf_ids, [("a", np.int32), ("a", np.int32)])
        union = np.dtype({"names": ["a", "b"], "formats": [np.int32, np.float32],
                          "offsets": [0, 0]})
        assert_invalid(assign_leaf_ids, [("u", union)])

    def test_default_values(self):
        assert value_bytes(None, np.float64) == bytes(8)
        assert value_bytes([1, [3.0, 4.0]], A) == struct.pack("<iff", 1, 3.0, 4.0)
        padded = np.dtype([("i", np.int32), ("c", np.int8)], align=True)
        assert value_bytes((7, 1), padded) == struct.pack("<ib3x", 7, 1)
        assert_invalid(value_bytes, "not a number", np.int32)


class TestOtherSets:
    def test_device_globals(self):
        entries = [("m.counter", 4, False), ("m.table", 64, True)]
        values = device_globals_property_set(entries)
        assert values == {"m.counter": struct.pack("<II", 4, 0), "m.table": struct.pack("<II", 64, 1)}
        assert unpack_device_global_descriptor(values["m.table"]) == (64, True)
        # The raw layout of the notes' example {Size=1, DIS=1}, with its size prefix.
        assert struct.pack("<Q", 64) + device_global_descriptor(1, True) == \
            bytes.fromhex("4000000000000000" "01000000" "01000000")
        assert_invalid(device_global_descriptor, 0, False)
        assert_invalid(unpack_device_global_descriptor, b"\x00" * 5)

    def test_symbol_and_kernel_names(self):
        assert kernel_names_property_set(["a.k1", "a.k2"]) == {"a.k1": 1, "a.k2": 1}
        assert exported_symbols_property_set(["f"]) == {"f": 1}
        assert imported_symbols_property_set([]) == {}

    def test_kernel_param_opt(self):
        assert encode_value(kernel_param_opt_mask([True, False])) == "2|CAAAAAAAAAQA"
        mask = kernel_param_opt_mask([False] * 9 + [True])
        assert mask == BitBytes(b"\x00\x02", 10)

    def test_descriptor_bytes_must_be_triples(self):
        assert_invalid(unpack_spec_constant_descriptors, b"\x00" * 13)
