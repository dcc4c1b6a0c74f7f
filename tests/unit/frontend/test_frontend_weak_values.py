"""Weak values (typing_rules docstring): run-time Python numbers -- range loop variables,
locals first assigned a Python number, int()/float(), `1 if c else 0` -- promote like
NumPy's NEP 50 weak Python scalars. Each result type is checked against NumPy itself."""

import numpy as np
import pytest

from pysycl.errors import compile_error
from pysycl.frontend import registry
from frontend_sycl import body_text, sycl

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, np.float32, np.float64]


def var_types(text):
    out = {}
    for ln in text.splitlines():
        ln = ln.strip()
        if ln.startswith("var {name = "):
            name = ln.split('"')[1]
            out[name] = ln.split("type = !")[1].rstrip("}")
    return out


def ir_name(dt) -> str:
    dt = np.dtype(dt)
    return {"f": "f", "i": "i", "u": "u", "b": "bool"}[dt.kind] + str(dt.itemsize * 8)


def make_table_kernel(dt):
    @sycl.kernel
    def k_table(it: sycl.item[1], a: sycl.accessor[dt, 1, sycl.read_write]):
        n = 3
        for k in range(1, 4):
            r_add = a[0] + k
            r_radd = k + a[0]
            r_sub = a[0] - k
            r_mul = a[0] * k
            r_div = a[0] / k
            r_floordiv = a[0] // k
            r_expr = a[0] * (k + 1)
            r_local = a[0] * n
            r_ifexp = a[0] + (1 if k > 1 else 0)
            r_int = a[0] + int(k)
            r_max = max(a[0], k)
            r_weakf = a[0] * (k * 0.5)
            r_float = a[0] - float(k)
    return k_table


def numpy_results(dt):
    x, k, n = dt(2), 2, 3  # k and n are Python ints, as in the Python run of the kernel
    return {"r_add": x + k, "r_radd": k + x, "r_sub": x - k, "r_mul": x * k,
            "r_div": x / k, "r_floordiv": x // k, "r_expr": x * (k + 1), "r_local": x * n,
            "r_ifexp": x + (1 if k > 1 else 0), "r_int": x + int(k), "r_max": np.maximum(x, k),
            "r_weakf": x * (k * 0.5), "r_float": x - float(k)}


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_promotion_table_matches_numpy(dt):
    types = var_types(body_text(make_table_kernel(dt)))
    assert types["k"] == "i64" and types["n"] == "i64"   # Python ints: int64 storage
    with np.errstate(all="ignore"):
        expected = numpy_results(dt)
    for name, value in expected.items():
        assert types[name] == ir_name(np.asarray(value).dtype), (name, types[name], value.dtype)


@sycl.kernel
def k_counts(it: sycl.item[1], a: sycl.accessor[np.float32, 1, sycl.read_write],
             b: sycl.accessor[np.int32, 1, sycl.read_write], n: np.int32):
    i = it.get_id(0)
    for j in range(n):                 # counts in int32 (the range's type), weak
        b[j] = b[j] + j
        a[j] = a[j] * j
        c1 = j < n                     # weak int vs int: exact, in the wider type
        c2 = j < a[0]                  # weak int vs float32: a float32 comparison
    w = a[0] * i                       # a work-item id is a (strong) int64: float64


def test_range_over_int32_counts_in_int32_and_queries_stay_strong():
    text = body_text(k_counts)
    types = var_types(text)
    assert types["j"] == "i32" and types["w"] == "f64"
    ops = [ln.strip().split(" = ", 1)[1] for ln in text.splitlines() if ln.strip().startswith("%")]
    assert any(op.startswith("add ") and op.endswith(": i32") for op in ops)   # b[j] + j
    assert any(op.startswith("mul ") and op.endswith(": f32") for op in ops)   # a[j] * j
    # j < n in int32 (no cast), j < a[0] after converting j to float32; only the strong
    # int64 work-item id makes float64
    f64 = [op for op in ops if op.endswith(": f64")]
    assert len(f64) == 3 and f64[-1].startswith("mul"), f64
    assert sum(op.startswith("cmp") for op in ops) == 2


@sycl.kernel
def k_locals(it: sycl.item[1], x: sycl.accessor[np.float32, 1, sycl.read_write],
             y: sycl.accessor[np.float64, 1, sycl.read_write],
             b: sycl.accessor[np.int32, 1, sycl.read_write]):
    acc = 0.0
    for i in range(4):
        acc += x[i]                    # NumPy: 0.0 + float32 is float32 -> float32 local
    mixed = 0.0
    mixed += x[0]
    mixed += y[0]                      # float32 and float64 assigned: float64
    count = 0
    count += b[0]                      # int32
    steps = 0
    while steps < 10:
        steps += 1                     # only Python ints: stays a weak int64
    explicit = np.float64(0.0)
    explicit += x[0]                   # strong from the start: float64
    chained = 0.0
    chained += acc                     # typed float32 through acc (a later pass)
    x[0] = acc + mixed + count + steps * x[1] + explicit + chained


def test_local_slot_rules():
    types = var_types(body_text(k_locals))
    assert types["acc"] == "f32"
    assert types["mixed"] == "f64"
    assert types["count"] == "i32"
    assert types["steps"] == "i64"
    assert types["explicit"] == "f64"
    assert types["chained"] == "f32"


@sycl.kernel
def k_acc_ir(it: sycl.item[1], x: sycl.accessor[np.float32, 1, sycl.read_write]):
    acc = 0.0
    for k in range(8):
        acc += x[k] * k + 0.5
    x[0] = acc


def test_float32_accumulator_with_a_loop_counter_has_no_float64():
    text = body_text(k_acc_ir)
    assert "f64" not in text, text
    assert "const {value = 0.0} : f32" in text


@sycl.kernel
def k_float_then_int(it: sycl.item[1], b: sycl.accessor[np.int32, 1, sycl.read_write]):
    acc = 0.0
    acc = b[0]


def test_a_float_local_assigned_an_int32_is_still_an_error():
    with pytest.raises(compile_error) as info:
        k_float_then_int.ir_module()
    assert "int32" in info.value.msg and "float64" in info.value.msg


@sycl.kernel
def k_wrap(it: sycl.item[1], b: sycl.accessor[np.int32, 1, sycl.read_write]):
    big = 2 ** 40
    for k in range(2):
        b[k] = b[k] + big * k         # a weak int meeting int32 converts (wraps) to int32


def test_weak_int_meeting_int32_is_converted_to_int32():
    text = body_text(k_wrap)
    assert var_types(text)["big"] == "i64"
    lines = [ln.strip() for ln in text.splitlines()]
    assert any(ln.endswith(": i32") and "cast" in ln for ln in lines)
    assert any(ln.endswith(": i32") and "= add" in ln for ln in lines)


@sycl.kernel
def k_literal_overflow(it: sycl.item[1], b: sycl.accessor[np.int32, 1, sycl.read_write]):
    b[0] = b[0] + 2 ** 40


def test_out_of_range_literal_is_still_a_compile_error():
    with pytest.raises(compile_error, match="out of bounds for int32"):
        k_literal_overflow.ir_module()


@sycl.kernel
def k_index(it: sycl.item[1], a: sycl.accessor[np.float32, 1, sycl.read_write],
            p: sycl.global_ptr[np.float32], n: np.int32):
    for k in range(n):
        a[k] = p[k + 1]


def test_indexing_with_weak_ints_is_int64():
    lines = [ln.strip() for ln in body_text(k_index).splitlines()]
    assert any("ptr.offset" in ln for ln in lines)
    assert any("cast" in ln and ln.endswith(": i64") for ln in lines)


# These kernels exist to test the compiler: keep them out of the application-wide
# registry that bundle tests build from (sycl.get_kernel_bundle with no kernel list).
registry.forget_module(__name__)


@pytest.fixture(autouse=True)
def _forget_kernels_defined_in_tests():
    yield
    registry.forget_module(__name__)
