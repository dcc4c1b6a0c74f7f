import pytest

import ir_samples
from pysycl.errors import errc, exception
from pysycl.ir.builder import Builder
from pysycl.ir.core import DeviceGlobalDecl, Function, Module, Param, Region, SpecConstantDecl
from pysycl.ir.types import F32, F64, I32
from pysycl.ir.verifier import verify_module
from pysycl.passes.link import link_modules, reachable_module, unresolved_symbols


def library(name="lib", ret=F32):
    body = Region()
    b = Builder(body)
    x = Param("x", F32)
    b.op("return", b.op("mul", x.value, x.value, type=F32) if ret == F32 else
         b.op("cast", x.value, type=ret))
    return Module(name, [Function("lib.scale", "external", [x], ret, body)],
                  spec_constants=[SpecConstantDecl("agg.coeff", ir_samples.aggregates()
                                                   .spec_constants[0].type, b"\x00" * 12)])


def test_declarations_resolve_against_externals():
    app = ir_samples.aggregates()
    assert unresolved_symbols(app) == ["lib.scale"]
    linked = link_modules([app, library()], "app+lib")
    verify_module(linked)
    assert unresolved_symbols(linked) == []
    assert [f.name for f in linked.functions] == ["agg.norm2", "lib.scale", "agg.k"]
    assert linked.function("lib.scale").kind == "external"
    assert [s.unique_id for s in linked.spec_constants] == ["agg.coeff"]
    assert app.function("lib.scale").kind == "declare"  # inputs untouched


def test_link_order_does_not_matter_for_resolution():
    linked = link_modules([library(), ir_samples.aggregates()], "lib+app")
    verify_module(linked)
    assert unresolved_symbols(linked) == []


def test_signature_mismatch_names_the_symbol():
    with pytest.raises(exception) as info:
        link_modules([ir_samples.aggregates(), library(ret=F64)], "x")
    assert info.value.code() == errc.build
    assert str(info.value) == ("symbol 'lib.scale' is (f32) -> f32 in module 'agg' but "
                               "(f32) -> f64 in module 'lib'")


def test_duplicate_kernel_and_symbol_name_both_modules():
    a, b = ir_samples.vector_add(), ir_samples.vector_add()
    b.name = "demo2"
    with pytest.raises(exception, match="kernel 'demo.vadd' is defined in both module 'demo' "
                                        "and module 'demo2'"):
        link_modules([a, b], "x")
    with pytest.raises(exception, match="symbol 'lib.scale' is defined in both module 'lib' "
                                        "and module 'lib2'"):
        link_modules([library(), library("lib2")], "x")


def test_one_device_function_in_two_images_links_once():
    """Each kernel image holds the device functions it calls: two kernels of one Python
    module bring the same one, which links once; a different body under the same name
    is an error naming it."""
    def image(name, scale):
        lib = library(name)
        fn = lib.functions[0]
        fn.kind = "device"
        if scale != 1:
            Builder(fn.body).op("mul", fn.params[0].value, fn.params[0].value, type=F32)
        return lib
    linked = link_modules([image("k1", 1), image("k2", 1)], "x")
    assert [f.name for f in linked.functions] == ["lib.scale"]
    with pytest.raises(exception) as info:
        link_modules([image("k1", 1), image("k2", 2)], "x")
    assert info.value.code() == errc.build
    assert "device function 'lib.scale' differs between module 'k1' and module 'k2'" in \
        str(info.value)


def test_declaration_resolving_to_a_non_exported_function_is_an_error():
    lib = library()
    lib.functions[0].kind = "device"
    with pytest.raises(exception, match="imported by module 'agg' is a device function in "
                                        "module 'lib', not an exported @sycl.external"):
        link_modules([ir_samples.aggregates(), lib], "x")


def test_global_declarations_merge_by_id_and_type():
    a = Module("a", device_globals=[DeviceGlobalDecl("g", I32)])
    b = Module("b", device_globals=[DeviceGlobalDecl("g", I32), DeviceGlobalDecl("h", F32)])
    assert [d.unique_id for d in link_modules([a, b], "ab").device_globals] == ["g", "h"]
    c = Module("c", device_globals=[DeviceGlobalDecl("g", F32)])
    with pytest.raises(exception, match="device_global 'g' has type i32 in one module and f32 "
                                        "in module 'c'"):
        link_modules([a, c], "ac")


def test_reachable_module_keeps_what_a_kernel_needs():
    linked = link_modules([ir_samples.aggregates(), library(), ir_samples.vector_add()], "all")
    split = reachable_module(linked, ["agg.k"], "agg.k.image")
    verify_module(split)
    assert [f.name for f in split.functions] == ["agg.norm2", "lib.scale", "agg.k"]
    assert [s.unique_id for s in split.spec_constants] == ["agg.coeff"]
    assert [d.unique_id for d in split.device_globals] == ["agg.count"]
    vadd = reachable_module(linked, ["demo.vadd"])
    assert [f.name for f in vadd.functions] == ["demo.vadd"]
    assert vadd.spec_constants == [] and vadd.device_globals == []
    with pytest.raises(exception, match="no function 'nope'"):
        reachable_module(linked, ["nope"])
