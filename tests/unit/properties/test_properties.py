"""Compile-time properties: values, meta strings, lists, routing."""
import numpy as np
import pytest

from pysycl.errors import errc, exception
from pysycl.properties import (
    alignment, annotation_string, aspect, device_has, device_image_scope,
    device_image_scope_key, from_meta, host_access, host_access_mode, host_access_read,
    implement_in_csr, init_mode, init_mode_enum, lookup_property, max_linear_work_group_size,
    max_work_group_size, meta_string, no_init, no_init_key, properties, property,
    registered_properties, restrict, restrict_key, spec_constant_lowering, sub_group_size,
    to_meta, work_group_size, work_group_size_hint)


def invalid(fn, *args, match=None):
    with pytest.raises(exception, match=match) as info:
        fn(*args)
    assert info.value.code() is errc.invalid
    return info.value


class TestMetaString:
    def test_integers_and_bools(self):
        assert meta_string(0) == "0"
        assert meta_string(-3) == "-3"
        assert meta_string(np.int64(7)) == "7"
        assert meta_string(True) == "true" and meta_string(False) == "false"
        assert meta_string(np.True_) == "true"

    def test_floats_like_std_to_string(self):
        assert meta_string(1.5) == "1.500000"
        assert meta_string(np.float32(0.25)) == "0.250000"
        assert meta_string(1e-7) == "0.000000"
        assert meta_string(-2.0) == "-2.000000"
        assert meta_string(float("inf")) == "inf"

    def test_enum_none_tuple_str(self):
        assert meta_string(host_access_mode.write) == "1"
        assert meta_string(aspect.fp64) == "6"
        assert meta_string(None) == ""
        assert meta_string((8, 4, 2)) == "8,4,2"
        assert meta_string("literal") == "literal"

    def test_unconvertible(self):
        invalid(meta_string, object())


class TestCatalogue:
    @pytest.mark.parametrize("prop,name,value", [
        (work_group_size(8, 8), "sycl-work-group-size", "8,8"),
        (work_group_size(1, 2, 4), "sycl-work-group-size", "1,2,4"),
        (work_group_size_hint(32), "sycl-work-group-size-hint", "32"),
        (max_work_group_size(16, 4), "sycl-max-work-group-size", "16,4"),
        (max_linear_work_group_size(4), "sycl-max-linear-work-group-size", "4"),
        (sub_group_size(16), "sycl-sub-group-size", "16"),
        (device_has(aspect.fp16, aspect.atomic64), "sycl-device-has", "5,28"),
        (device_has(), "sycl-device-has", ""),
        (restrict, "sycl-restrict", ""),
        (alignment(64), "sycl-alignment", "64"),
        (device_image_scope, "sycl-device-image-scope", ""),
        (host_access(host_access_mode.read), "sycl-host-access", "0"),
        (host_access(host_access_mode.none), "sycl-host-access", "3"),
        (init_mode(init_mode_enum.reset), "sycl-init-mode", "1"),
        (implement_in_csr(False), "sycl-implement-in-csr", "false"),
        (spec_constant_lowering("emulated"), "sycl-spec-constant-lowering", "emulated"),
    ])
    def test_meta_name_and_value(self, prop, name, value):
        assert prop.meta_name == name
        assert prop.meta_value == value
        # Reading the IR string back gives the same property.
        assert type(prop).from_meta(value) == prop

    def test_categories(self):
        assert work_group_size(1).category == "kernel"
        assert restrict.categories == {"kernel_arg", "pointer"}
        assert alignment(4).categories == {"kernel_arg", "pointer"}
        assert host_access().category == "global_variable"
        assert spec_constant_lowering().category == "build"
        assert no_init.category == "accessor" and no_init.meta_name is None

    def test_aspect_numbers_match_dpcpp(self):
        assert [int(a) for a in (aspect.cpu, aspect.gpu, aspect.accelerator, aspect.custom,
                                 aspect.fp16, aspect.fp64, aspect.image)] == [1, 2, 3, 4, 5, 6, 9]
        assert (aspect.online_compiler, aspect.online_linker, aspect.queue_profiling) == (10, 11, 12)
        assert (aspect.usm_device_allocations, aspect.usm_host_allocations,
                aspect.usm_shared_allocations, aspect.usm_system_allocations) == (13, 14, 15, 17)
        assert (aspect.usm_atomic_host_allocations, aspect.usm_atomic_shared_allocations,
                aspect.atomic64, aspect.host_debuggable, aspect.emulated) == (26, 27, 28, 32, 40)
        assert len(aspect) == 19

    def test_device_has_accepts_names_and_dedups(self):
        assert device_has("fp16", 5, aspect.fp16).value == (aspect.fp16,)
        invalid(device_has, "warp_drive", match="warp_drive")
        invalid(device_has, 7)

    def test_sizes(self):
        assert work_group_size(4, 2)[0] == 4
        assert work_group_size(np.int32(4)).value == (4,)
        invalid(work_group_size, match="1 to 3")
        invalid(work_group_size, 1, 2, 3, 4)
        invalid(work_group_size, 0, match="positive")
        invalid(work_group_size, 2.0)
        invalid(work_group_size, True)
        invalid(sub_group_size, -8)
        invalid(max_linear_work_group_size, 0)

    def test_argument_checks(self):
        invalid(alignment, 3, match="power of two")
        invalid(alignment, 0)
        invalid(host_access, "sometimes", match="read, write, read_write, none")
        assert host_access("write") == host_access(host_access_mode.write) == host_access(1)
        invalid(init_mode, 5)
        invalid(implement_in_csr, 1)
        e = invalid(spec_constant_lowering, "fastest")
        assert "'auto', 'literal', 'emulated'" in str(e)
        assert spec_constant_lowering("native").mode == "native"   # what SPIR-V images report
        assert spec_constant_lowering().mode == "auto"

    def test_equality_and_hash(self):
        assert host_access_read == host_access(host_access_mode.read)
        assert host_access_read != host_access(host_access_mode.write)
        assert work_group_size(8) != work_group_size_hint(8)
        assert hash(alignment(8)) == hash(alignment(8))
        assert restrict_key() == restrict

    def test_registry(self):
        assert lookup_property("sycl-work-group-size") is work_group_size
        assert lookup_property("device_has") is device_has
        assert lookup_property("nope") is None
        assert no_init_key in registered_properties()

    def test_new_property_needs_no_other_change(self):
        class latency_hint(property):
            meta_name = "sycl-test-latency-hint"
            category = "kernel"

            def __init__(self, n):
                self._value = n

            @classmethod
            def from_meta(cls, text):
                return cls(int(text))

        p = properties(latency_hint(3), sub_group_size(8))
        assert to_meta(p.of_category("kernel")) == {"sycl-sub-group-size": "8",
                                                    "sycl-test-latency-hint": "3"}
        assert from_meta({"sycl-test-latency-hint": "3"}) == properties(latency_hint(3))

    def test_bad_category_rejected(self):
        with pytest.raises(TypeError):
            class bad(property):
                meta_name = "sycl-bad"
                category = "everywhere"


class TestPropertiesList:
    def test_order_insensitive(self):
        a = properties(work_group_size(8, 8), sub_group_size(16), device_has(aspect.fp64))
        b = properties(device_has(aspect.fp64), work_group_size(8, 8), sub_group_size(16))
        assert a == b and hash(a) == hash(b)
        assert list(a) == list(b)  # canonical iteration order
        assert a != properties(work_group_size(8, 4), sub_group_size(16), device_has(aspect.fp64))

    def test_has_and_get(self):
        p = properties(device_image_scope, host_access(host_access_mode.read))
        assert p.has_property(device_image_scope_key)
        assert p.has_property(device_image_scope)
        assert p.has_property(host_access)
        assert not p.has_property(init_mode)
        assert p.get_property(host_access).value is host_access_mode.read
        assert p.get_property(device_image_scope_key) is device_image_scope
        e = invalid(p.get_property, init_mode)
        assert "init_mode" in str(e)
        invalid(p.has_property, 42)

    def test_duplicates_rejected(self):
        e = invalid(properties, work_group_size(8), work_group_size(4))
        assert "work_group_size" in str(e)
        invalid(properties, restrict, restrict)
        invalid(properties, "not a property")

    def test_key_class_of_singleton_accepted(self):
        assert properties(restrict_key) == properties(restrict)

    def test_iteration_len_contains(self):
        p = properties(alignment(16), restrict)
        assert len(p) == 2
        assert [type(x) for x in p] == [alignment, restrict_key]
        assert alignment(16) in p and alignment(8) not in p and restrict_key in p
        assert len(properties()) == 0

    def test_category_routing(self):
        p = properties(work_group_size(4), restrict, device_image_scope,
                       spec_constant_lowering("literal"), no_init)
        assert p.of_category("kernel") == properties(work_group_size(4))
        assert p.of_category("pointer") == properties(restrict)
        assert p.of_category("kernel_arg") == properties(restrict)
        assert p.of_category("global_variable") == properties(device_image_scope)
        assert p.of_category("build") == properties(spec_constant_lowering("literal"))
        assert p.of_category("accessor") == properties(no_init)
        invalid(p.of_category, "nowhere")

    def test_merge(self):
        a = properties(work_group_size(8))
        b = properties(sub_group_size(16), work_group_size(8))
        assert (a | b) == properties(work_group_size(8), sub_group_size(16))
        assert a.merge(None) is a
        e = invalid(a.merge, properties(work_group_size(4)))
        assert "work_group_size" in str(e)


class TestMetaAndAnnotation:
    def test_to_meta(self):
        p = properties(sub_group_size(32), work_group_size(2, 4), no_init,
                       device_has(aspect.gpu))
        assert to_meta(p) == {"sycl-device-has": "2", "sycl-sub-group-size": "32",
                              "sycl-work-group-size": "2,4"}
        assert to_meta(None) == {}
        assert to_meta([restrict]) == {"sycl-restrict": ""}

    def test_annotation_string_matches_seed_rules(self):
        assert annotation_string(properties(restrict, alignment(32))) == \
            "sycl-properties:sycl-alignment=32,sycl-restrict"
        assert annotation_string(properties(restrict)) == "sycl-properties:sycl-restrict"
        assert annotation_string(properties()) == "sycl-properties:"

    def test_from_meta_round_trip_and_unknown(self):
        p = properties(work_group_size(8, 8), device_image_scope, host_access_read,
                       implement_in_csr(True), init_mode(init_mode_enum.reprogram))
        assert from_meta(to_meta(p)) == p
        invalid(from_meta, {"sycl-unknown": "1"})
        invalid(from_meta, {"sycl-work-group-size": "8,x"})
        invalid(from_meta, {"sycl-restrict": "1"})
