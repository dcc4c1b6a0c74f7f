import pytest

import ir_samples
from ir_samples import L
from pysycl.errors import errc, exception
from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Op, Param, Region
from pysycl.ir.types import (BOOL, F32, I32, I64, AccessorType, PointerType)
from pysycl.ir.verifier import module_errors, verify_module


def kernel(params=(), name="m.k"):
    """A kernel with ``params`` and an empty body; returns (module, builder, values)."""
    ps = [Param(n, t) for n, t in params]
    body = Region()
    m = Module("m", [Function(name, "kernel", ps, body=body)])
    return m, Builder(body, L(7, 2)), [p.value for p in ps]


def rejects(m, *fragments):
    with pytest.raises(exception) as info:
        verify_module(m)
    assert info.value.code() == errc.build
    msg = str(info.value)
    for f in fragments:
        assert f in msg, msg
    return msg


@pytest.mark.parametrize("name", sorted(ir_samples.ALL))
def test_samples_verify(name):
    verify_module(ir_samples.ALL[name]())


def test_message_names_function_op_and_location():
    m, b, _ = kernel()
    x = b.const(1.0, F32)
    y = b.const(1, I32)
    b.op("add", x, y, type=F32)
    rejects(m, 'function "m.k", op "add" at kernels.py:7:2',
            "operand 1 has type i32, expected f32 (the result type)")


def test_shape_errors():
    m, b, _ = kernel()
    b.op("frobnicate")
    b.op("neg", type=F32)
    b.op("barrier")
    b.op("store", b.const(1, I32), b.const(1, I32), type=I32)
    b.insert(Op("cmp", [b.const(1, I32), b.const(2, I32)], BOOL))
    msg = rejects(m, "not an op of the catalogue", "has 0 operands, expected 1",
                  "missing attribute 'scope'", "produces no value", "missing attribute 'pred'")
    assert msg.count("\n") >= 5


def test_type_rules():
    m, b, (acc, ro) = kernel([("acc", AccessorType(F32, 2)), ("ro", AccessorType(F32, 1, "read_only"))])
    i = b.const(0, I64)
    b.op("cmp", i, i, type=I64, pred="lt")
    b.if_(i)
    b.op("for", i, b.const(1, I32), i, var="v", regions=[Region()])
    p = b.op("acc.ptr", acc, i, type=PointerType(F32))
    b.op("load", b.op("acc.ptr", acc, i, i, type=PointerType(F32)), type=I32)
    b.store(b.op("ptr.offset", b.op("acc.ptr", ro, i, type=PointerType(F32)), i,
                 type=PointerType(F32)), b.const(1.0, F32))
    b.const(1.5, I32)
    rejects(m, "cmp gives bool, not i64", "condition has type i64, expected bool",
            "lo, hi and step must have one integer type", "1 indices for a 2-dimensional accessor",
            "result type i32, the pointer points to f32",
            "writes through a pointer into a read_only accessor",
            "value 1.5 does not fit constant type i32")
    _ = p


def test_dominance_and_regions():
    m, b, (c,) = kernel([("c", BOOL)])
    then, _ = b.if_(c)
    inner = then.const(1, I32)
    b.op("neg", inner, type=I32)
    rejects(m, "operand 0 (the result of const at kernels.py:7:2) is not defined before this op")


def test_use_before_definition_in_same_region():
    m, b, _ = kernel()
    late = Op("const", type=I32, attrs={"value": 1})
    b.op("neg", late.result, type=I32)
    b.insert(late)
    rejects(m, "is not defined before this op")


def test_var_rules():
    m, b, (c,) = kernel([("c", BOOL)])
    then, _ = b.if_(c)
    then.var("x", I32)
    b.store_var("x", b.const(1, I32))          # declared only inside the if
    b.var("y", I32)
    b.store_var("y", b.const(1.0, F32))        # wrong type
    b.var("y", I32)                            # twice
    b.load_var("nope", I32)
    rejects(m, "var 'x' is not declared in a dominating position",
            "var 'y' has type i32; var.store uses f32", "var 'y' is declared twice",
            "var 'nope' is not declared")


def test_control_flow_placement():
    m, b, (c,) = kernel([("c", BOOL)])
    b.op("break", loc=L(20))
    then, _ = b.if_(c)
    then.op("yield", c)
    cond, body = b.while_()
    cond.op("continue")
    cond.op("yield", c)
    body.op("return")
    body.op("continue")
    msg = rejects(m, "break outside a loop body", "yield may only end the cond region of a while",
                  "continue outside a loop body", "nothing may follow a terminator")
    assert 'op "break" at kernels.py:20:4' in msg


def test_while_cond_must_yield():
    m, b, _ = kernel()
    b.while_()
    rejects(m, "a while's cond region must end with yield")


def test_items_regions_reset_loop_context():
    m, b, (n,) = kernel([("n", I64)])
    b.var("i", I64)
    loop = b.for_("i", b.const(0, I64), n, b.const(1, I64))
    items = loop.items()
    items.op("break")
    rejects(m, "break outside a loop body")
    m2, b2, _ = kernel()
    b2.items().op("barrier", scope="work_group")
    rejects(m2, "barrier inside wg.items")


def test_calls_and_returns():
    m = ir_samples.aggregates()
    k = m.function("agg.k")
    b = Builder(k.body, L(70))
    b.index = len(k.body.ops)
    b.op("call", b.const(1, I32), type=F32, callee="lib.scale")
    b.op("call", type=F32, callee="lib.missing")
    b.op("call", callee="agg.k")
    f = m.function("agg.norm2")
    f.body.ops[-1].operands = []
    rejects(m, "arguments (i32) do not match the parameters (f32) of 'lib.scale'",
            "callee 'lib.missing' is not in the module", "kernel 'agg.k' cannot be called",
            "returns void; function 'agg.norm2' returns f32")


def test_module_level_duplicates():
    m = ir_samples.vector_add()
    m.functions.append(ir_samples.vector_add().functions[0])
    m.spec_constants += ir_samples.aggregates().spec_constants * 2
    errors = module_errors(m)
    assert "function 'demo.vadd' is defined twice" in errors
    assert "specialization constant 'agg.coeff' is defined twice" in errors


def test_spec_and_device_global_references():
    m, b, _ = kernel()
    b.op("spec.get", type=F32, id="nope")
    b.op("dg.addr", type=PointerType(I32), id="nope")
    rejects(m, "specialization constant 'nope' is not declared",
            "device_global 'nope' is not declared")


def test_complex_ops_are_typed():
    from pysycl.ir.types import C64, F64
    m, b, (z,) = kernel([("z", C64)])
    b.op("mul", z, z, type=C64)
    rejects(m, "mul of complex numbers is an op of its own")
    m, b, (z,) = kernel([("z", C64)])
    b.op("cmp", z, z, type=BOOL, pred="eq")
    rejects(m, "compared part by part")
    m, b, (z,) = kernel([("z", C64)])
    b.op("complex.make", b.const(1.0, F64), b.const(2.0, F64), type=C64)
    rejects(m, "operand 0 has type f64, expected f32")
    m, b, (z,) = kernel([("z", C64)])
    b.op("complex.abs", z, type=F64)
    rejects(m, "result type f64, expected f32")
    m, b, (z,) = kernel([("z", C64)])
    b.op("complex.sqrt", b.const(1.0, F32), type=C64)
    rejects(m, "expected a complex type")
