"""The IR the frontend emits for each construct of the kernel language (printed without
locations, checked by the IR verifier)."""
import math

import numpy as np
import pytest

from pysycl.frontend import registry
from frontend_sycl import body_text, ir_text, sycl
import frontend_other_module as other

N = 4
SCALE = np.float32(0.5)
SHAPE = (2, 3)


@sycl.struct
class Point:
    x: np.float32
    y: np.int32


def lines(text):
    return [ln.strip() for ln in text.splitlines()]


# Promotion (NEP 50) -------------------------------------------------------------------
@sycl.kernel
def k_promote(it: sycl.item[1], a: sycl.accessor[np.float32, 1, sycl.read_write],
              b: sycl.accessor[np.int32, 1, sycl.read_write]):
    x = a[0] + 1
    y = b[0] + 1
    z = a[0] * 2.5
    w = b[0] / 2
    a[1] = math.sqrt(x) + np.sin(x) + sycl.math.exp(x)


def test_weak_literals_keep_the_typed_side():
    text = body_text(k_promote)
    assert 'var {name = "x", type = !f32}' in text
    assert 'var {name = "y", type = !i32}' in text
    assert 'var {name = "z", type = !f32}' in text
    assert 'var {name = "w", type = !f64}' in text          # true division of ints
    assert "const {value = 1} : i32" in text
    assert "const {value = 1.0} : f32" in text


def test_float32_math_stays_float32():
    text = body_text(k_promote)
    for f in ("math.sqrt", "math.sin", "math.exp"):
        assert any(ln.endswith(": f32") and f in ln for ln in lines(text)), f
    assert "f64" not in "".join(ln for ln in lines(text) if "math." in ln)


@sycl.kernel
def k_floor(it: sycl.item[1], a: sycl.accessor[np.int32, 1, sycl.read_write]):
    a[0] = a[1] // -3
    a[1] = a[2] % 4
    a[2] = -7 // 2 + 2 ** 3


def test_floordiv_and_mod_ops_and_literal_folding():
    text = body_text(k_floor)
    assert "floordiv" in text and "= mod " in text
    assert "const {value = -3} : i32" in text
    assert "const {value = 4} : i32" in text  # -7 // 2 + 8 folded with Python semantics


@sycl.kernel
def k_int64_literal(it: sycl.item[1], a: sycl.accessor[np.float64, 1, sycl.read_write]):
    n = 3
    f = 1.0
    a[0] = n + f


def test_literal_defaults():
    text = body_text(k_int64_literal)
    assert 'var {name = "n", type = !i64}' in text
    assert 'var {name = "f", type = !f64}' in text


# Locals, control flow --------------------------------------------------------------------
@sycl.kernel
def k_control(it: sycl.item[1], a: sycl.accessor[np.int32, 1, sycl.read_write]):
    i = it.get_id(0)
    total = 0
    for j in range(10, 0, -2):
        if j == 4:
            continue
        total += j
    while total > 3:
        total -= 1
        if total == 7:
            break
    for u in sycl.static_range(N):
        total += u
    ok = i > 0 and i < 5 or i == 9
    v = 1 if ok else 2
    c = 0 < i <= 5
    assert total >= 0, "negative"
    a[i] = total + v + c


def test_control_flow_ops():
    text = body_text(k_control)
    assert 'for %' in text and '{var = "j"}' in text
    assert "const {value = -2} : i64" in text
    assert '{unroll = true, var = "u"}' in text
    assert "while {" in text and "yield" in text and "break" in text and "continue" in text
    assert 'assert' in text and '{msg = "negative"}' in text
    for temp in ("and.", "or.", "ifexp.", "cmp."):
        assert f'var {{name = "{temp}' in text, temp
    # one var per name, all at function entry
    decls = [ln for ln in lines(text) if ln.startswith("var {")]
    assert len(decls) == len({d.split('"')[1] for d in decls})
    body = lines(text)[1:]
    assert all(ln.startswith("var {") for ln in body[:len(decls)])


@sycl.kernel
def k_reassign_param(it: sycl.item[1], a: sycl.accessor[np.int32, 1, sycl.read_write], n: np.int32):
    n = n + 1
    a[0] = n


def test_reassigned_parameter_gets_a_slot():
    text = body_text(k_reassign_param)
    assert 'var {name = "n", type = !i32}' in text
    assert 'var.store %n {name = "n"}' in text


# Memory -----------------------------------------------------------------------------
@sycl.kernel
def k_memory(it: sycl.item[2], a: sycl.accessor[np.float32, 2, sycl.read_only],
             out: sycl.accessor[np.float32, 2, sycl.write_only], p: sycl.global_ptr[np.float32]):
    r = a.get_range(1)
    rng = a.get_range()
    out[it] = a[it.get_id(0), it.get_id(1)] + r + rng[0]
    q = p + 2
    q[1] = p[3]
    idx = it.get_id()
    out[idx] = 1.0


def test_accessor_and_usm_access():
    text = body_text(k_memory)
    assert "acc.range %a {dim = 1} : i64" in text
    assert text.count("acc.ptr %a") == 1 and "acc.ptr %out" in text
    assert "ptr.offset %p" in text
    assert text.count("wi.global_id {dim = 0}") >= 2
    assert "tuple.make" in text and "tuple.get" in text


@sycl.kernel
def k_struct(it: sycl.item[1], pts: sycl.accessor[Point, 1, sycl.read_write], p: Point):
    s = Point(1, 2.0)
    s.x = s.x + p.x
    pts[0] = s
    pts[1].y = 7
    p.y = 3
    q = Point(y=1, x=2)
    pts[2] = q


def test_structs():
    text = body_text(k_struct)
    assert "struct.make" in text
    assert 'ptr.field' in text and '{field = "x"}' in text
    assert 'var.store %p {name = "p"}' in text  # modified in place -> slot


ARR = np.dtype((np.float32, 4))


@sycl.kernel
def k_arrays(it: sycl.item[1], a: sycl.accessor[ARR, 1, sycl.read_write],
             out: sycl.accessor[np.float32, 1, sycl.read_write]):
    buf = sycl.private_array(np.float32, 8)
    for i in range(len(buf)):
        buf[i] = i
    row = a[0]
    total = np.float32(0)
    for x in row:
        total += x
    out[0] = total + buf[3] + row[1] + len(row)
    a[1][2] = 5.0


def test_fixed_and_private_arrays():
    text = body_text(k_arrays)
    assert 'var {name = "buf", type = ![8 x f32]}' in text
    assert "var.addr {name = \"buf\"}" in text and "ptr.elem" in text
    assert "array.get" in text
    assert "const {value = 8} : i64" in text


V4 = sycl.vec(np.float32, 4)


@sycl.device
def dot(a: V4, b: V4) -> np.float32:
    c = a * b + 1.0
    return c[0] + c[1] + a[2] + c[3]


@sycl.kernel
def k_vec(it: sycl.item[1], v: sycl.accessor[V4, 1, sycl.read_write],
          out: sycl.accessor[np.float32, 1, sycl.write_only]):
    x = v[0]
    x[2] = 3.0
    v[1] = x * 2.0
    out[0] = dot(x, v[1])


def test_vec_elementwise_and_indexing():
    text = body_text(k_vec, dot.name)
    assert "mul %a, %b : vec<f32,4>" in text
    assert "vec.make" in text and "vec.get" in text
    kernel = body_text(k_vec)
    assert "ptr.elem" in kernel   # x[2] = 3.0 writes the lane in place


@sycl.device
def divmod_(a, b):
    return a // b, a % b


@sycl.kernel
def k_tuples(it: sycl.item[1], out: sycl.accessor[np.int32, 1, sycl.write_only]):
    q, r = divmod_(out.get_range(0), 3)
    x, y = 1, 2
    x, y = y, x
    out[0] = q + r + x + y


def test_tuples_and_multiple_returns():
    m = k_tuples.ir_module()
    ir_text(m)
    f = [f for f in m.functions if f.name.startswith(divmod_.name)][0]
    assert str(f.return_type) == "tuple<i64,i64>"
    assert f.name == divmod_.name + "[i64,i64]"


# Work items, groups, atomics ------------------------------------------------------
@sycl.kernel
def k_nd(nd: sycl.nd_item[2], a: sycl.accessor[np.int32, 1, sycl.read_write],
         loc: sycl.local_accessor[np.int32, 1]):
    g = nd.get_group()
    sg = nd.get_sub_group()
    lid = nd.get_local_id(1)
    loc[lid] = nd.get_global_id(0) + nd.get_group(1) + g.get_group_id(0)
    sycl.group_barrier(g)
    s = sycl.reduce_over_group(g, loc[0], sycl.plus())
    m = sycl.reduce_over_group(sg, sg.get_local_id(), sycl.maximum())
    ref = sycl.atomic_ref(a, 0, order=sycl.memory_order.acq_rel, scope=sycl.memory_scope.work_group)
    old = ref.fetch_add(s)
    ref.fetch_max(m)
    expected = np.int32(0)
    ok = sycl.atomic_ref(a[1]).compare_exchange_strong(expected, 5)
    a[2] = ref.load() + old + nd.get_global_linear_id() + nd.get_local_range(0) + ok
    sycl.atomic_ref(a, 3).store(1)
    sycl.group_barrier(sg)


def test_nd_item_groups_and_atomics():
    text = body_text(k_nd)
    for op in ("wi.local_id {dim = 1}", "wi.global_id {dim = 0}", "wi.group_id {dim = 1}",
               "wi.group_id {dim = 0}", 'barrier {scope = "work_group"}',
               'group.reduce', '{op = "plus", scope = "work_group"}',
               '{op = "maximum", scope = "sub_group"}', "sg.local_id",
               '{op = "add", order = "acq_rel", scope = "work_group"}',
               '{op = "max", order = "acq_rel", scope = "work_group"}',
               'atomic.cmpxchg', 'order = "relaxed", scope = "device"', "atomic.load",
               "atomic.store", "wi.global_linear_id", "wi.local_range {dim = 0}",
               'barrier {scope = "sub_group"}', "acc.ptr %loc"):
        assert op in text, op
    assert "ptr<local,i32>" in text
    assert 'var.store' in text and '{name = "expected"}' in text


# Spec constants, device globals, host objects ----------------------------------------
coeff = sycl.specialization_id(np.float32, 3.0)
pt_id = sycl.specialization_id(Point, Point(1.5, 2))
hits = sycl.device_global(np.int32)
table = sycl.device_global(np.dtype((np.int32, 8)))
origin = sycl.device_global(Point)
count_id = sycl.specialization_id(np.int32, 4)


@sycl.kernel
def k_spec(h: sycl.kernel_handler, out: sycl.accessor[np.float32, 1, sycl.write_only],
           p: sycl.spec_constant[np.int32, count_id]):
    c = h.get_specialization_constant(coeff)
    out[0] = c * h.get_specialization_constant(pt_id).x + p.get() * SCALE
    hits.set(hits.get() + 1)
    table[2] = table[1]
    origin.y = origin.y + 1


def test_spec_constants_and_device_globals():
    m = k_spec.ir_module()
    text = ir_text(m)
    mod = __name__
    assert f'spec_const "{mod}.coeff" : f32 default = x"00004040"' in text
    assert f'spec_const "{mod}.pt_id"' in text
    ph = f"{mod}.count_id"        # a placeholder reads its constant under its own ID
    assert f'spec_const "{ph}" : i32 default = x"04000000"' in text
    assert "@param" not in text
    assert f'spec.get {{id = "{mod}.coeff"}} : f32' in text
    assert f'spec.get {{id = "{ph}"}} : i32' in text
    assert 'struct.get' in text and '{field = "x"}' in text
    assert f'device_global "{mod}.hits" : i32' in text
    assert f'dg.addr {{id = "{mod}.table"}} : ptr<global,[8 x i32]>' in text
    assert 'ptr.field' in text and '{field = "y"}' in text
    assert [p.name for p in m.kernels[0].params] == ["h", "out"]  # no IR param for p
    assert "const {value = 0.5} : f32" in text  # frozen np.float32 global


def test_closure_variables_are_frozen():
    k = 5
    scale_id = sycl.specialization_id(np.int32, 7)

    @sycl.kernel
    def k_closure(h: sycl.kernel_handler, out: sycl.accessor[np.int32, 1, sycl.write_only]):
        out[0] = k + h.get_specialization_constant(scale_id) + SHAPE[1]

    text = ir_text(k_closure.ir_module())
    assert "const {value = 8} : i64" not in text
    assert "const {value = 5} : i32" in text and "const {value = 3} : i32" in text
    # made in a function: the ID is its definition site
    assert "spec_const" in text and "@" in text.split("spec_const")[1].splitlines()[0]


# Calls ------------------------------------------------------------------------------
@sycl.external
def ext_local(x: np.float32) -> np.float32:
    return x + 1


@sycl.kernel
def k_calls(it: sycl.item[1], out: sycl.accessor[np.float32, 1, sycl.write_only]):
    out[0] = other.scale(1.0, 2.0) + ext_local(3.0) + other.ext_twice(1.0) + other.ext_decl(2)


def test_device_and_external_calls():
    m = k_calls.ir_module()
    text = ir_text(m)
    kinds = {f.name: f.kind for f in m.functions}
    assert kinds == {k_calls.name: "kernel", other.scale.name: "device", "ext_local": "declare",
                     "ext_twice": "declare", "ext_declared_elsewhere": "declare"}
    assert f'call %' in text and f'{{callee = "{other.scale.name}"}}' in text
    assert m.functions[0].kind == "kernel"


def test_library_image_of_an_external_definition():
    m = other.ext_twice.ir_module()
    text = ir_text(m)
    assert [(f.name, f.kind) for f in m.functions] == [("ext_twice", "external"),
                                                      (other.scale.name, "device")]
    assert 'external @"ext_twice"(%x: f32) -> f32' in text


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(8, 4)), name="custom.name")
def k_props(nd: sycl.nd_item[2], p: sycl.annotated_ptr[np.float32, sycl.properties(sycl.restrict)],
            a: sycl.accessor[np.int32, 1, sycl.read_only, sycl.properties(sycl.restrict)]):
    p[0] = a[0]


def test_kernel_and_argument_properties():
    m = k_props.ir_module()
    f = m.function("custom.name")
    assert f.properties == {"sycl-work-group-size": "8,4"}
    # annotated_ptr: parameter properties, plus the pointer annotation (seed 003)
    assert f.params[1].properties == {"sycl-restrict": "",
                                      "pysycl-ptr-annotation": "sycl-properties:sycl-restrict"}
    assert str(f.params[1].type) == "ptr<global,f32>"
    assert f.params[2].properties == {"sycl-restrict": ""}   # accessors are not annotated


def test_locations_point_into_the_file():
    m = k_control.ir_module()
    f = m.function(k_control.name)
    assert f.loc.file == __file__
    ops = list(f.walk())
    assert all(op.loc.file == __file__ and op.loc.line > 0 for op in ops)


# These kernels exist to test the compiler: keep them out of the application-wide
# registry that bundle tests build from (sycl.get_kernel_bundle with no kernel list).
registry.forget_module(__name__)


@pytest.fixture(autouse=True)
def _forget_kernels_defined_in_tests():
    yield
    registry.forget_module(__name__)
