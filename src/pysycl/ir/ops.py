"""The op catalogue: every IR op's name, shape and meaning, in one table.

The verifier checks ops against it, the printer/parser are generic over it, and
``codegen`` keys its lowering rules by these names (a test lists the ops that have no
rule for a target). Types follow NumPy promotion already applied by the frontend: the
operands of a binary arithmetic op have the op's result type.

Shapes: ``operands`` is an exact count or ``None`` (variadic); ``regions`` an exact count;
``result`` is "none", "value" (non-void) or "any"; ``attrs`` lists required attributes.
"""
from __future__ import annotations

from .._records import FrozenValue


class OpDef(FrozenValue):
    """One catalogue entry (a frozen value class, _records.py)."""

    __slots__ = _fields = ("name", "operands", "regions", "result", "attrs", "doc")
    name: str
    operands: int | None
    regions: int
    result: str
    attrs: tuple[str, ...]
    doc: str

    def __init__(self, name, operands, regions, result, attrs, doc):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "operands", operands)
        object.__setattr__(self, "regions", regions)
        object.__setattr__(self, "result", result)
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "doc", doc)


CATALOGUE: dict[str, OpDef] = {}


def _op(name, operands, regions, result, attrs, doc):
    CATALOGUE[name] = OpDef(name, operands, regions, result, tuple(attrs), doc)


# Values and named slots (Python locals) -----------------------------------------
_op("const", 0, 0, "value", ["value"],
    "A constant. value: int/float/bool for scalars, bytes (little-endian layout) for composites.")
_op("var", 0, 0, "none", ["name", "type"],
    "Declare the local slot `name` of type `type`. Optional attr per_item (bool), set only by "
    "native CPU passes: see wg.items.")
_op("var.load", 0, 0, "value", ["name"], "Read a local slot.")
_op("var.store", 1, 0, "none", ["name"], "Write a local slot.")
_op("var.addr", 0, 0, "value", ["name"], "ptr<private,T> to a local slot (aggregates, private_array).")

# Arithmetic (same-typed operands; scalars or vec) -------------------------------
for _n, _d in [("add", "a + b"), ("sub", "a - b"), ("mul", "a * b"),
               ("div", "true division a / b (float result)"),
               ("floordiv", "a // b with Python (floor) semantics"),
               ("mod", "a % b with Python semantics (sign of b)"), ("pow", "a ** b"),
               ("min", "min(a, b)"), ("max", "max(a, b)"),
               ("and", "bitwise/logical and"), ("or", "bitwise/logical or"),
               ("xor", "bitwise xor"), ("shl", "a << b"), ("shr", "a >> b (arithmetic for signed)")]:
    _op(_n, 2, 0, "value", [], _d)
for _n, _d in [("neg", "-a"), ("not", "~a on ints, logical not on bool"), ("abs", "abs(a)")]:
    _op(_n, 1, 0, "value", [], _d)
_op("cmp", 2, 0, "value", ["pred"], "Compare; pred in eq, ne, lt, le, gt, ge; result bool.")
_op("cast", 1, 0, "value", [], "Convert to the result type like NumPy astype (float->int truncates).")
_op("bitcast", 1, 0, "value", [], "The same bits as another type of the same size (vec.as).")
_op("select", 3, 0, "value", [], "c ? a : b without short-circuit.")

MATH_FUNCTIONS = {
    # name: number of operands
    "sqrt": 1, "rsqrt": 1, "exp": 1, "exp2": 1, "log": 1, "log2": 1, "log10": 1,
    "sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1,
    "tanh": 1, "fabs": 1, "floor": 1, "ceil": 1, "trunc": 1, "round": 1,
    "isnan": 1, "isinf": 1, "pow": 2, "atan2": 2, "fmin": 2, "fmax": 2, "copysign": 2,
    "fma": 3,
    "erf": 1, "erfc": 1, "log1p": 1, "expm1": 1, "cbrt": 1, "tgamma": 1, "lgamma": 1,
    "asinh": 1, "acosh": 1, "atanh": 1, "isfinite": 1, "hypot": 2, "fmod": 2, "remainder": 2,
}
# The math functions that answer a question about their operand (result bool).
MATH_PREDICATES = frozenset({"isnan", "isinf", "isfinite"})
for _n, _k in MATH_FUNCTIONS.items():
    _op(f"math.{_n}", _k, 0, "value", [],
        f"{_n} in the operand precision (float32 stays float32); isnan/isinf/isfinite "
        "give bool.")
_op("math.ldexp", 2, 0, "value", [], "x * 2**n: float operand 0, i32 operand 1 (a vec of "
    "i32 for a vec x), exactly.")
# Math functions with a second, integer result (C's pointer argument): the result is a
# tuple (float of the operands' type, i32 of the same shape: a vec of i32 for vecs).
MATH_PAIRS = {"frexp": 1, "lgamma_r": 1, "remquo": 2}
_PAIR_DOCS = {"frexp": "(mantissa in [0.5, 1) or 0, exponent); non-finite x gives (x, 0)",
              "lgamma_r": "(lgamma(x), sign of tgamma(x) as +-1)",
              "remquo": "(IEEE remainder(x, y), at least the 3 low bits of the rounded "
                        "quotient x/y with its sign; 0 where the remainder is NaN)"}
for _n, _k in MATH_PAIRS.items():
    _op(f"math.{_n}", _k, 0, "value", [], f"{_n}: {_PAIR_DOCS[_n]}.")

# Complex numbers (NumPy's complex64/complex128: types c64/c128). add, sub, neg and
# select take complex operands too (part by part); the ops below are the rest. -----
_op("complex.make", 2, 0, "value", [], "The complex number operand 0 + operand 1 * 1j "
    "from two floats of its part type.")
for _n in ("real", "imag"):
    _op(f"complex.{_n}", 1, 0, "value", [], f"The {_n} part of a complex number (a float).")
_op("complex.mul", 2, 0, "value", [], "a * b of complex numbers (NumPy's formula).")
_op("complex.div", 2, 0, "value", [],
    "a / b of complex numbers by Smith's scaled algorithm (no overflow for large |b|), "
    "as NumPy divides.")
_op("complex.abs", 1, 0, "value", [], "|z| as hypot(re, im) (a float; no overflow).")
_op("complex.arg", 1, 0, "value", [], "The phase of z, atan2(im, re) (a float).")
# SYCL's complex function list (sycl::ext::oneapi::experimental::complex) beyond the
# ops above; NumPy's spelling where it has one.
COMPLEX_FUNCTIONS = ("exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos",
                     "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "proj")
_COMPLEX_NUMPY = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                  "acosh": "arccosh", "atanh": "arctanh"}
for _n in COMPLEX_FUNCTIONS:
    _op(f"complex.{_n}", 1, 0, "value", [],
        "The Riemann sphere's projection of z (C99's cproj): inf + i copysign(0, im) "
        "where a part is infinite, else z." if _n == "proj" else
        f"Complex {_n} with C99's branch cuts and special values "
        f"(NumPy's np.{_COMPLEX_NUMPY.get(_n, _n)}).")

# Aggregates ----------------------------------------------------------------------
_op("struct.make", None, 0, "value", [], "Build a struct value from its fields in order.")
_op("struct.get", 1, 0, "value", ["field"], "Read a field of a struct value.")
_op("struct.insert", 2, 0, "value", ["field"], "A copy of the struct with one field replaced.")
_op("array.make", None, 0, "value", [], "Build a fixed-array value.")
_op("array.get", 2, 0, "value", [], "Element of an array value at a dynamic index.")
_op("vec.make", None, 0, "value", [], "Build a vec from its elements (or splat one).")
_op("vec.get", 2, 0, "value", [], "Element of a vec at an index.")
_op("tuple.make", None, 0, "value", [], "Build a tuple.")
_op("tuple.get", 1, 0, "value", ["index"], "Element of a tuple at a constant index.")

# Memory --------------------------------------------------------------------------
_op("ptr.offset", 2, 0, "value", [], "p + i elements (same pointer type).")
_op("ptr.elem", 2, 0, "value", [], "ptr<S,[n x T]> -> ptr<S,T> to element i.")
_op("ptr.diff", 2, 0, "value", [], "p - q in elements (i64) of two pointers of one type.")
_op("ptr.field", 1, 0, "value", ["field"], "ptr<S,struct> -> ptr<S,field type>.")
_op("load", 1, 0, "value", [], "Load through a pointer.")
_op("store", 2, 0, "none", [], "Store operand 1 through pointer operand 0.")
_op("acc.ptr", None, 0, "value", [],
    "Element pointer of accessor operand 0 at indices operands 1..D (row-major over the "
    "memory range, plus the accessor's linear offset).")
_op("acc.range", 1, 0, "value", ["dim"], "The accessor's range in dimension `dim` (i64).")
_op("acc.offset", 1, 0, "value", ["dim"],
    "A buffer accessor's offset in its buffer in dimension `dim` (i64).")
_op("acc.base", 1, 0, "value", [],
    "Pointer to the first element of a buffer accessor's buffer (get_multi_ptr).")
_op("ptr.extent", 1, 0, "value", [],
    "Checked builds: the number of elements from a global_ptr kernel parameter to the end "
    "of the memory it was given (i64).")
_op("check", 3, 0, "none", ["what"],
    "Checked builds: unless operand 0 (bool) holds, record a failure of `what` at this op "
    "with index operand 1 and extent operand 2 (i64), and stop the work-item.")
_op("dg.addr", 0, 0, "value", ["id"], "ptr<global,T> to the device_global with unique ID `id`.")
_op("const.table", 0, 0, "value", ["data"],
    "ptr<constant,T> to read-only memory holding `data` (T's bytes, little-endian): host "
    "data frozen into the image (a module-level NumPy array or tuple that kernel code indexes).")

# Specialization constants (one op, three lowerings) -------------
_op("spec.get", 0, 0, "value", ["id"],
    "The value of the specialization_id with symbolic ID `id`; lowered after link.")
_op("spec.load", 0, 0, "value", ["offset"],
    "Emulated lowering: load the result type from the implicit spec-constant buffer at `offset`.")
_op("spec.native", 0, 0, "value", ["leaf_ids", "default"],
    "Native lowering: SPIR-V OpSpecConstant(Composite) with the leaf SpecIds and default bytes.")

# Work-item queries (attr dim: 0..2; result i64) ---------------------------------
for _n in ("global_id", "local_id", "group_id", "global_range", "local_range", "group_range",
           "global_offset"):
    _op(f"wi.{_n}", 0, 0, "value", ["dim"], f"The work-item's {_n.replace('_', ' ')} in `dim`.")
for _n in ("global_linear_id", "local_linear_id", "group_linear_id"):
    _op(f"wi.{_n}", 0, 0, "value", [], f"The work-item's {_n.replace('_', ' ')}.")
for _n in ("local_id", "local_range", "group_id", "group_range", "max_local_range"):
    _op(f"sg.{_n}", 0, 0, "value", [], f"Sub-group {_n.replace('_', ' ')}.")
_op("barrier", 0, 0, "none", ["scope"], "group_barrier; scope work_group or sub_group.")
_op("group.broadcast", 2, 0, "value", ["scope"],
    "group_broadcast: operand 0 of the work-item whose local linear id (sub-group: local "
    "id) is operand 1 (i64), in every work-item of the group.")
_op("group.scan", 1, 0, "value", ["op", "scope", "inclusive"],
    "inclusive/exclusive_scan_over_group: op over the operand of the work-items of lower "
    "local linear id (inclusive: and this one); the first work-item of an exclusive scan "
    "gets op's identity.")
_op("group.shuffle", 2, 0, "value", ["mode", "scope"],
    "Sub-group shuffles: operand 0 of the work-item at local id operand 1 (mode idx), "
    "own id xor operand 1 (xor), own id + operand 1 (down), own id - operand 1 (up); "
    "scope sub_group.")
_op("group.reduce", 1, 0, "value", ["op", "scope"],
    "reduce_over_group; op a SYCL function object (plus, multiplies, minimum, maximum, "
    "bit_and, bit_or, bit_xor, logical_and, logical_or); scope work_group or sub_group.")

# Atomics (attrs order: relaxed/acquire/release/acq_rel/seq_cst; scope: work_item,
# sub_group, work_group, device, system) -----------------------------------------
_op("atomic.rmw", 2, 0, "value", ["op", "order", "scope"],
    "Atomic read-modify-write; op in add, sub, min, max, and, or, xor, xchg; returns the old value.")
_op("atomic.cmpxchg", 3, 0, "value", ["order", "scope"],
    "Compare (operand 1) and exchange (operand 2) at pointer operand 0; returns the old value.")
_op("atomic.load", 1, 0, "value", ["order", "scope"], "Atomic load.")
_op("atomic.store", 2, 0, "none", ["order", "scope"], "Atomic store.")
_op("atomic.fence", 0, 0, "none", ["order", "scope"],
    "atomic_fence: orders this work-item's memory operations as `order` says, for the "
    "work-items of `scope`.")

# Calls -------------------------------------------------------------------------------
_op("call", None, 0, "any", ["callee"], "Call a device function or an imported @external.")

# Structured control flow ---------------------------------------------------------
_op("if", 1, 2, "none", [], "Regions: then, else (either may be empty).")
_op("for", 3, 1, "none", ["var"],
    "for var in range(lo, hi, step): body. Python semantics for negative steps; the trip "
    "count is computed once. attr unroll=True for sycl.static_range; vectorize=False keeps "
    "LLVM from vectorising it.")
_op("while", 0, 2, "none", [], "Regions: cond (ends with yield of a bool), body.")
_op("yield", 1, 0, "none", [], "Ends a while's cond region with the loop condition.")
_op("break", 0, 0, "none", [], "Leave the innermost for/while.")
_op("continue", 0, 0, "none", [], "Next iteration of the innermost for/while.")
_op("return", None, 0, "none", [], "Return from the function (0 or 1 operand).")
_op("assert", 1, 0, "none", ["msg"], "Checked in debug builds, removed otherwise.")

# Native CPU work-group fission (emitted only by passes/work_group_fission.py) -----
_op("wg.items", None, 1, "none", [],
    "Run the region once for each work-item of the work-group in local linear order; "
    "wi.* ops inside refer to that item. A `var` with attr per_item=True has one copy per "
    "work-item, other vars one copy per work-group. Optional operands lo, hi (i64; "
    "passes/split_item_range): on the items whose local id in the last dimension is in "
    "[lo, hi), every cmp inside with attr interior=True is true.")

TERMINATORS = frozenset({"break", "continue", "return", "yield"})
CONTROL_FLOW = frozenset({"if", "for", "while"})


def opdef(name: str) -> OpDef:
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError(f"unknown IR op {name!r}") from None
