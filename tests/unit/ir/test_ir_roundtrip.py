import random

import numpy as np
import pytest

import ir_samples
from pysycl.errors import errc, exception
from pysycl.ir.builder import Builder
from pysycl.ir.compare import module_difference
from pysycl.ir.core import Function, Module, Region
from pysycl.ir.parser import parse_module
from pysycl.ir.printer import format_attr, print_module
from pysycl.ir.types import F32, parse_type
from pysycl.ir.verifier import verify_module


@pytest.mark.parametrize("name", sorted(ir_samples.ALL))
@pytest.mark.parametrize("locs", [True, False])
def test_print_parse_print_is_identity(name, locs):
    m = ir_samples.ALL[name]()
    verify_module(m)
    text = print_module(m, locs=locs)
    back = parse_module(text)
    assert print_module(back, locs=locs) == text
    verify_module(back)
    if locs:
        assert module_difference(m, back) is None


def test_printed_form_reads_well():
    text = print_module(ir_samples.vector_add())
    assert text.splitlines()[0] == 'module "demo" attributes {source = "kernels.py"}'
    assert ('kernel @"demo.vadd"(%it: item<1>, %a: accessor<f32,1,read_only> {sycl-restrict = ""}, '
            '%b: accessor<f32,1,read_only>, %c: accessor<f32,1,write_only>) properties '
            '{sycl-work-group-size = "16"} loc("kernels.py":1:0) {') in text
    assert '  %0 = wi.global_id {dim = 0} : i64 loc("kernels.py":3:8)' in text
    assert '  %5 = add %2, %4 : f32 loc("kernels.py":4:11)' in text
    assert "loc(" not in print_module(ir_samples.vector_add(), locs=False)


def test_declarations_print():
    text = print_module(ir_samples.aggregates())
    assert 'spec_const "agg.coeff" : [3 x f32] default = x"0000803f0000004000004040"' in text
    assert 'device_global "agg.count" : i32 properties {sycl-device-image-scope = ""}' in text
    assert 'declare @"lib.scale"(%x: f32) -> f32\n' in text
    assert '%"weird name": f32' in text


def test_device_global_initial_value_round_trips():
    from pysycl.ir.core import DeviceGlobalDecl
    init = np.array([2.5, -1.0], np.float32).tobytes()
    m = Module("g", device_globals=[DeviceGlobalDecl("g.v", parse_type("[2 x f32]"), {}, init),
                                    DeviceGlobalDecl("g.z", F32)])
    text = print_module(m)
    assert 'device_global "g.v" : [2 x f32] init = x"00002040000080bf"' in text
    assert 'device_global "g.z" : f32\n' in text + "\n"
    back = parse_module(text)
    assert [d.initial for d in back.device_globals] == [init, b""]
    with pytest.raises(exception) as info:
        parse_module(text.replace('x"00002040000080bf"', 'x"0000"'))
    assert "8 bytes" in str(info.value)


SPECIAL_FLOATS = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-310, 0.1, 1e300,
                  np.frombuffer(np.uint64(0xFFF8000000000001).tobytes(), np.float64)[0],
                  np.frombuffer(np.uint64(0x7FF0000000000001).tobytes(), np.float64)[0]]


@pytest.mark.parametrize("x", SPECIAL_FLOATS)
def test_float_attributes_round_trip_bit_exactly(x):
    m = Module("f", attrs={"x": float(x), "l": [float(x)]})
    back = parse_module(print_module(m))
    assert np.float64(back.attrs["x"]).tobytes() == np.float64(x).tobytes()
    assert isinstance(back.attrs["x"], float)
    assert module_difference(m, back) is None


def test_attribute_values_of_every_kind():
    value = {"i": -7, "b": False, "s": 'q"\\\n\u00e9\u200b', "y": b"\x00\x01", "n": None,
             "t": F32, "l": [1, [2]], "tu": (1,), "e": (), "d": {"needs quote": 1}}
    m = Module("a", attrs=value)
    back = parse_module(print_module(m))
    assert back.attrs == value
    assert isinstance(back.attrs["tu"], tuple) and isinstance(back.attrs["l"], list)
    assert format_attr(value["d"]) == '{"needs quote" = 1}'
    assert format_attr(np.float32(0.5)) == "0.5"


def test_struct_type_attribute_round_trips():
    t = ir_samples.POINT
    back = parse_module(print_module(Module("s", attrs={"t": t, "u": [t]})))
    assert back.attrs["t"] == t and back.attrs["u"] == [t]
    assert parse_type(str(t)) == t


def _err(text):
    with pytest.raises(exception) as info:
        parse_module(text)
    assert info.value.code() == errc.invalid
    return str(info.value)


def test_parse_errors_name_line_and_column():
    msg = _err('module "m"\n\nkernel @"k"() {\n  %0 = add %1, %1 : f32\n}\n')
    assert msg.startswith("IR parse error at line 4 col 12:") and "undefined value %1" in msg
    assert "line 1 col 1" in _err('modul "m"\n')
    assert "unterminated string" in _err('module "m\n')
    assert "bad type" in _err('module "m"\n\ndeclare @"f"(%x: f99)\n')
    assert "redefinition of %0" in _err(
        'module "m"\n\nkernel @"k"() {\n  %0 = const {value = 1} : i32\n'
        '  %0 = const {value = 1} : i32\n}\n')


def test_values_of_a_closed_region_are_not_visible():
    text = ('module "m"\n\nkernel @"k"(%c: bool) {\n  if %c {\n    %0 = const {value = 1} : i32\n'
            '  } {\n  }\n  %1 = add %0, %0 : i32\n}\n')
    assert "undefined value %0" in _err(text)


def test_parser_evaluates_nothing_and_bounds_nesting():
    assert "expected" in _err('module "m" attributes {x = __import__("os")}\n')
    deep = 'module "m" attributes {x = ' + "[" * 500 + "]" * 500 + "}\n"
    assert "nesting deeper" in _err(deep)
    assert "bad type" in _err('module "m"\n\ndeclare @"f"(%x: ' + "[1 x " * 5000 + "f32" +
                             "]" * 5000 + ")\n")


def test_mutated_text_parses_or_fails_with_errc_invalid():
    text = print_module(ir_samples.aggregates()) + print_module(ir_samples.tree_reduction())
    rng = random.Random(1234)
    for _ in range(400):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(chars))
            action = rng.random()
            if action < 0.4:
                del chars[i]
            elif action < 0.8:
                chars.insert(i, rng.choice('{}()[]%":,=x\n -0123456789abc!@'))
            else:
                chars[i] = rng.choice('{}"%\n')
        try:
            parse_module("".join(chars))
        except exception as e:
            assert e.code() == errc.invalid


def test_empty_body_and_declaration_differ():
    m = Module("m", [Function("m.f", "device", [], body=Region()),
                     Function("m.g", "declare", [])])
    text = print_module(m)
    assert 'func @"m.f"() {\n}\n' in text and 'declare @"m.g"()\n' in text
    back = parse_module(text)
    assert back.functions[0].body is not None and back.functions[1].body is None


def test_builder_ops_print_in_order():
    r = Region()
    b = Builder(r)
    x = b.const(2.0, F32)
    b.op("mul", x, x, type=F32)
    m = Module("b", [Function("b.f", "device", [], body=r)])
    assert "%1 = mul %0, %0 : f32" in print_module(m)
