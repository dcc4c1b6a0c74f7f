"""Complex numbers in the frontend: result types follow NumPy's promotion (checked
against NumPy itself), Python numbers stay weak, literals fold, and what Python refuses
on complex numbers is a compile error at the offending line and column."""
import cmath
import importlib.util

import numpy as np
import pytest

from pysycl.errors import compile_error, errc
from frontend_sycl import body_text, sycl
from test_frontend_weak_values import var_types

REAL = [np.bool_, np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float16, np.float32,
        np.float64]
COMPLEX = [np.complex64, np.complex128]


def ir_name(dt) -> str:
    dt = np.dtype(dt)
    if dt.kind == "b":
        return "bool"
    return {"f": "f", "i": "i", "u": "u", "c": "c"}[dt.kind] + str(dt.itemsize * 8)


def make_promotion_kernel(cdt, rdt):
    @sycl.kernel
    def k_promote(it: sycl.item[1], c: sycl.accessor[cdt, 1, sycl.read_write],
                  r: sycl.accessor[rdt, 1, sycl.read_write]):
        z, x = c[0], r[0]
        r_add = z + x
        r_radd = x + z
        r_sub = z - x
        r_mul = x * z
        r_div = x / z
        r_lit_c = x * 1j
        r_lit_f = z * 2.5
        r_lit_i = 3 - z
        r_pow = z ** 2
        r_abs = abs(z)
        r_real = z.real
        r_imag = x.imag
        r_conj = np.conj(x)
        r_conj_method = x.conjugate()
        r_exp = np.exp(z)
        r_sin = np.sin(z)
        r_arctanh = np.arctanh(z)
        r_log10 = np.log10(z)
        r_power = np.power(z, x)
        r_angle = np.angle(z)
        r_eq = z == x
        r_weak = complex(1, 2) * z
        w = 0j
        w += z
    return k_promote


def numpy_results(cdt, rdt):
    z, x = cdt(1 + 2j), rdt(1)
    return {"r_add": z + x, "r_radd": x + z, "r_sub": z - x, "r_mul": x * z, "r_div": x / z,
            "r_lit_c": x * 1j, "r_lit_f": z * 2.5, "r_lit_i": 3 - z, "r_pow": z ** 2,
            "r_abs": abs(z), "r_real": z.real, "r_imag": x.imag, "r_conj": np.conj(x), "r_conj_method": x.conjugate(),
            "r_exp": np.exp(z), "r_sin": np.sin(z), "r_arctanh": np.arctanh(z),
            "r_log10": np.log10(z), "r_power": np.power(z, x),
            "r_angle": np.angle(z), "r_eq": z == x,
            "r_weak": complex(1, 2) * z, "w": 0j + z}


@pytest.mark.parametrize("rdt", REAL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cdt", COMPLEX, ids=lambda d: np.dtype(d).name)
def test_promotion_matches_numpy(cdt, rdt):
    types = var_types(body_text(make_promotion_kernel(cdt, rdt)))
    with np.errstate(all="ignore"):
        expected = numpy_results(cdt, rdt)
    for name, value in expected.items():
        assert types[name] == ir_name(np.asarray(value).dtype), (name, types[name], value)


@sycl.kernel
def k_weak(it: sycl.item[1], c: sycl.accessor[np.complex64, 1, sycl.read_write],
           f: sycl.accessor[np.float32, 1, sycl.read_write]):
    k = 2
    p = complex(k, 1)                   # a Python complex: complex128 storage, weak
    q = p * c[0]                        # weak * complex64: complex64
    s = f[0] * 1j                       # float32 * Python complex: complex64
    d = cmath.sqrt(f[0])                # cmath of a float32: complex64, like np.sqrt
    e = np.complex128(f[0], 2)          # strong
    folded = (1 + 2j) * (3 - 1j) + abs(3 + 4j) + (2j).imag
    c[0] = q + s + d + e + folded


def test_python_complex_numbers_are_weak_and_literals_fold():
    text = body_text(k_weak)
    types = var_types(text)
    assert (types["p"], types["q"], types["s"], types["d"], types["e"]) == \
        ("c128", "c64", "c64", "c64", "c128")
    folded = (1 + 2j) * (3 - 1j) + abs(3 + 4j) + (2j).imag
    want = np.array(folded, "<c16").tobytes().hex()
    assert f'value = x"{want}"' in text          # one constant, folded as Python does


def bad_kernel(folder, body):
    """A kernel whose fourth line is ``body`` (z, w: complex64; c, r: accessors of
    complex64 and float32), from a file as users write kernels."""
    path = folder / "bad_complex.py"
    path.write_text(
        "import cmath, math\nimport numpy as np\nfrom frontend_sycl import sycl\n"
        "@sycl.kernel\n"
        "def k_bad(it: sycl.item[1], c: sycl.accessor[np.complex64, 1, sycl.read_write],\n"
        "          r: sycl.accessor[np.float32, 1, sycl.read_write]):\n"
        "    z, w = c[0], c[1]\n"
        f"    {body}\n")
    spec = importlib.util.spec_from_file_location("bad_complex", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k_bad, str(path)


@pytest.mark.parametrize("body, needle, match", [
    ("r[0] = 1 if z < w else 0", "z < w",
     "'<' is not supported between complex64 and complex64: complex numbers are not ordered"),
    ("r[0] = 1 if z >= 1.0 else 0", "z >= 1.0", "'>=' is not supported between complex64"),
    ("c[0] = z // w", "z // w", "unsupported operand types for //: complex64 and complex64"),
    ("c[0] = z % 2", "z % 2", "unsupported operand types for %"),
    ("c[0] = min(z, w)", "min(z, w)", "complex numbers are not ordered"),
    ("c[0] = math.sqrt(z)", "math.sqrt(z)", "math.sqrt() takes real numbers"),
    ("c[0] = np.exp2(z)", "np.exp2(z)", "exp2() of complex numbers is not supported"),
    ("c[0] = np.arctan2(z, w)", "np.arctan2(z, w)", "atan2() of complex numbers is not"),
    ("c[0] = ~z", "~z", "bad operand type for ~: complex64"),
    ("r[0] = float(z)", "float(z)", "cannot convert a complex64 value to float64"),
    ("r[0] = z", "r[0]", "cannot convert a complex64 value to float32"),
    ("r[0] = 2j", "r[0]", "cannot convert a Python complex value to float32"),
    ("r[0] = z.phase", "z.phase", "'phase' is not an attribute of a complex64 value"),
    ("c[0] = z.conj()", "z.conj", "'conj' is not a method of a complex64 value"),
    ("c[0] = sycl.atomic_ref(c, 0).load()", "sycl.atomic_ref(c, 0)",
     "atomic_ref does not support complex64"),
])
def test_what_python_refuses_is_a_compile_error_at_its_line(tmp_path, body, needle, match):
    kfn, path = bad_kernel(tmp_path, body)
    with pytest.raises(compile_error) as info:
        kfn.ir_module()
    err = info.value
    assert err.code() == errc.build and err.filename == path
    assert (err.lineno, err.col) == (8, 4 + body.index(needle)), str(err)
    assert match in err.msg, err.msg
