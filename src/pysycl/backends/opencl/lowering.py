"""The OpenCL (SPIR-V) rules: codegen hooks in the conventions of LLVM 22's SPIR-V backend.

What differs from the shared rules, and why:

* **Kernels** are ``spir_kernel`` functions with the shared ABI itself (no wrapper):
  accessors are ``ptr addrspace(1)`` plus ranges, ``local_accessor`` is a
  ``ptr addrspace(3)`` the driver feeds with ``cl.LocalMemory``, and structs/arrays come
  ``ptr byval(%T) align N`` (a direct aggregate argument silently reads zeros on the
  Intel runtime). Device functions are ``internal spir_func``; every function is
  ``convergent`` (it may reach a barrier) as clang does for OpenCL.
* **Work-items** are the *mangled* SPIR-V builtins (``_Z33__spirv_BuiltInGlobalInvocationIdi``;
  unmangled ones duplicate the builtin variable and fail to link in the driver). The
  driver reverses sizes into OpenCL order, so SYCL dimension ``d`` of a ``D``-dimensional
  kernel is OpenCL dimension ``D-1-d``. Kernels know ``D``; device functions take it as
  one hidden ``i32`` (constant at every call, folded after inlining), as on CUDA.
* **Barriers** are ``__spirv_ControlBarrier(Workgroup, Workgroup, SeqCst|WorkgroupMemory|
  CrossWorkgroupMemory)`` (SYCL's group_barrier fences both local and global memory).
  On the Intel CPU runtime this costs the same as OpenCL C's ``barrier(CLK_LOCAL_MEM_FENCE)``
  (AcqRel|WorkgroupMemory measured no faster): a barrier in a loop is slow there because
  every barrier region loops over the whole work-group, in OpenCL C too.
* **Group reductions** call the OpenCL ``sub_group_reduce_*`` / ``work_group_reduce_*``
  built-ins (OpGroup*); i8/i16/bool go through i32.
* **Atomics**: ``atomicrmw``/``cmpxchg`` get a ``syncscope``; ``load atomic``/``store
  atomic`` lose their atomicity in LLVM 22.1 (PR #185696), so they become
  ``__spirv_AtomicLoad``/``__spirv_AtomicStore`` calls. Float add is ``atomicrmw fadd``
  and needs ``SPV_EXT_shader_atomic_float_add``; float min/max are CAS loops.
* **Extensions** a module needs are listed in the named metadata
  ``!pysycl.spirv.extensions`` (:func:`required_extensions` reads them back), which the
  compiler enables for that module only (``--spirv-ext`` is process global).
* **Floating point**: a multiply feeding an add or subtraction in one expression
  (``acc += a * b``) is one OpenCL.std ``mad``, the contraction OpenCL C does by default
  (``FP_CONTRACT ON``; see ``contract_expressions``); everything else is rounded
  operation by operation (the module keeps LLVM's ContractionOff execution mode).
* **Math** calls the OpenCL.std built-ins by their mangled names (``_Z3sinf``), in the
  operand's precision (float32 stays float32; ``llvm.cos`` and friends are not all in the
  verified list).
* **Specialization constants** (``spec.native``) are ``__spirv_SpecConstant(SpecId,
  default)`` per scalar leaf (an ``OpSpecConstant`` each); a vec/array/struct value is
  assembled from its leaves with ``insertelement``/``insertvalue``, not as an
  ``OpSpecConstantComposite`` (LLVM 22.1 aborts on the ``extractvalue`` of one, see
  ``_spec_value``). SpecIds are those of the image's ``SYCL/specialization constants``
  property set, so the driver sets values with ``clSetProgramSpecializationConstant``
  leaf by leaf, as DPC++ does; struct padding (no SpecId) is an undef member.
* **Kernel properties** (sycl_ext_oneapi_properties) become ``!spirv.ExecutionMode`` entries: LocalSize
  (``sycl-work-group-size``, in OpenCL order), LocalSizeHint and SubgroupSize (what
  ``!reqd_work_group_size`` & co. would give; see :func:`kernel_metadata`); ``sycl-alignment`` on a parameter becomes
  ``!spirv.ParameterDecorations`` Alignment (44) besides ``align N``, ``sycl-restrict``
  is ``noalias`` (FuncParamAttr NoAlias). Device globals are ``addrspace(1)``
  program-scope variables with an Alignment ``!spirv.Decorations``.

>>> from pysycl.backends.opencl.target import SPIRV64
>>> OpenClLowering(SPIRV64).addrspaces["local"]
3
"""
from __future__ import annotations

import re

from llvmlite import ir as ll

from ...codegen import LoweringContext, param_types
from ...codegen.target_lowering import DeviceDimsLowering, with_syncscope
from ...codegen import types as lt
from ...codegen.group_ops import combiner, fold_slots, identity as group_identity, widen
from ...codegen.rules_memory import lower_atomic_rmw
from ...codegen.rules_math_pairs import int32_like, out_arg_call
from ...codegen.rules_scalar import compare, const, scalar_of
from ...ir.core import Function, Op
from ...ir.ops import MATH_PAIRS
from ...ir.types import (AccessorType, ArrayType, ComplexType, LocalAccessorType,
                         ScalarType, StructType, Type, VecType)

EXTENSIONS_METADATA = "pysycl.spirv.extensions"
FLOAT_ATOMIC_ADD = "SPV_EXT_shader_atomic_float_add"

# SPIR-V enumerants (SPIR-V spec 3.x).
SCOPE = {"system": 0, "device": 1, "work_group": 2, "sub_group": 3, "work_item": 4}
SYNC_SCOPES = {"work_item": "singlethread", "sub_group": "subgroup", "work_group": "workgroup",
               "device": "device", "system": ""}
_ORDER_BITS = {"relaxed": 0x0, "acquire": 0x2, "release": 0x4, "acq_rel": 0x8, "seq_cst": 0x10}
_WORKGROUP_MEMORY, _CROSS_WORKGROUP_MEMORY = 0x100, 0x200
_STORAGE_BITS = {0: 0, 1: _CROSS_WORKGROUP_MEMORY, 2: 0, 3: _WORKGROUP_MEMORY,
                 4: _WORKGROUP_MEMORY | _CROSS_WORKGROUP_MEMORY}
BARRIER_SEMANTICS = 0x10 | _WORKGROUP_MEMORY | _CROSS_WORKGROUP_MEMORY   # 784
DECORATION_ALIGNMENT = 44
EXEC_MODE_LOCAL_SIZE, EXEC_MODE_LOCAL_SIZE_HINT, EXEC_MODE_SUBGROUP_SIZE = 17, 18, 35

_I32_0 = ll.Constant(lt.I32, 0)

# Itanium mangling of the scalar types (OpenCL C names).
_MANGLE = {"bool": "b", "i8": "c", "u8": "h", "i16": "s", "u16": "t", "i32": "i", "u32": "j",
           "i64": "l", "u64": "m", "f16": "Dh", "f32": "f", "f64": "d"}

# OpenCL.std functions for the IR's math ops (round: Python/NumPy round half to even).
OPENCL_MATH = {"sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
               "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin",
               "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
               "fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
               "round": "rint", "pow": "pow", "atan2": "atan2", "fmin": "fmin",
               "fmax": "fmax", "copysign": "copysign", "fma": "fma",
               **{n: n for n in ("erf", "erfc", "log1p", "expm1", "cbrt", "tgamma",
                                 "lgamma", "asinh", "acosh", "atanh", "hypot", "fmod",
                                 "remainder")}}

# Work-item builtins (SPIR-V style, mangled: §1.1).
_WI_BUILTIN = {"global_id": "__spirv_BuiltInGlobalInvocationId",
               "local_id": "__spirv_BuiltInLocalInvocationId",
               "group_id": "__spirv_BuiltInWorkgroupId",
               "global_range": "__spirv_BuiltInGlobalSize",
               "local_range": "__spirv_BuiltInWorkgroupSize",
               "group_range": "__spirv_BuiltInNumWorkgroups",
               "global_offset": "__spirv_BuiltInGlobalOffset"}
_SG_BUILTIN = {"local_id": "__spirv_BuiltInSubgroupLocalInvocationId",
               "local_range": "__spirv_BuiltInSubgroupSize",
               "group_id": "__spirv_BuiltInSubgroupId",
               "group_range": "__spirv_BuiltInNumSubgroups",
               "max_local_range": "__spirv_BuiltInSubgroupMaxSize"}


def mangled(name: str, args: str) -> str:
    """``_Z<len><name><args>``.

    >>> mangled("__spirv_BuiltInGlobalInvocationId", "i")
    '_Z33__spirv_BuiltInGlobalInvocationIdi'
    """
    return f"_Z{len(name)}{name}{args}"



class OpenClLowering(DeviceDimsLowering):
    name = "opencl"
    # target.py ADDRESS_SPACES (OpenCL flavour of SPIR-V).
    addrspaces = {"private": 0, "global": 1, "constant": 2, "local": 3, "generic": 4}
    unsupported = {
        "wg.items": "work-group fission is only for the native CPU; SPIR-V has real barriers",
    }

    helper_calling_convention = "spir_func"

    def __init__(self, target=None, debug: bool = False):
        super().__init__(target, debug)
        self.rules.update({
            "group.reduce": _lower_group_reduce,
            "group.scan": _lower_group_scan,
            "group.broadcast": _lower_group_broadcast,
            "group.shuffle": _lower_group_shuffle,
            "atomic.rmw": _lower_atomic_rmw,
            "atomic.cmpxchg": _lower_atomic_cmpxchg,
            "atomic.load": _lower_atomic_load,
            "atomic.store": _lower_atomic_store,
        })

    # Signatures ----------------------------------------------------------------------------
    def bind_hidden(self, ctx: LoweringContext, args: list) -> None:
        super().bind_hidden(ctx, args)
        if ctx.function.kind == "kernel":
            _assume_sizes_non_negative(ctx)

    def kernel_attributes(self, fn: Function, llfn: ll.Function) -> None:
        llfn.calling_convention = "spir_kernel"
        llfn.attributes.add("convergent")
        i = 0
        for p in fn.params:
            n = len(param_types(p, True, self))
            if n and lt.is_aggregate(p.type):
                arg = llfn.args[i]
                mt = lt.memory_type(p.type, self.addrspaces)
                if isinstance(p.type, ArrayType):
                    # The Intel runtime sizes a ``byval([N x T])`` argument wrongly
                    # (clSetKernelArg: INVALID_ARG_SIZE); a one-member struct is the same bytes.
                    mt = ll.LiteralStructType([mt], packed=True)
                set.add(arg.attributes, f"byval({mt})")
                arg.attributes.align = max(p.type.align, 1)
            i += n

    def device_function_attributes(self, fn: Function, llfn: ll.Function) -> None:
        llfn.calling_convention = "spir_func"
        llfn.attributes.add("convergent")
        if not fn.is_declaration:
            llfn.linkage = "internal"

    def device_global_linkage(self) -> str:
        return ""   # external: the driver finds it by name (clGetDeviceGlobalVariablePointerINTEL)

    def wrap_kernel(self, ctx: LoweringContext, fn: Function, llfn: ll.Function) -> None:
        """The kernel is already the entry point: attach the property metadata."""
        kernel_metadata(self, ctx.llmodule, fn, llfn)
        _device_global_decorations(ctx.llmodule)

    # Work-items ----------------------------------------------------------------------------
    def work_item(self, ctx: LoweringContext, query: str, dim: int | None) -> ll.Value:
        b = ctx.builder
        if query == "global_linear_id":
            return _builtin_call(ctx, mangled("__spirv_BuiltInGlobalLinearId", "v"), lt.I64, [])
        if query == "local_linear_id":
            return _builtin_call(ctx, mangled("__spirv_BuiltInLocalInvocationIndex", "v"),
                                 lt.I64, [])
        if query == "group_linear_id":
            # OpenCL dimension 0 varies fastest = SYCL row-major; unused dims are 0 of 1.
            g = [self._axis(ctx, "group_id", ll.Constant(lt.I32, a)) for a in range(3)]
            n = [self._axis(ctx, "group_range", ll.Constant(lt.I32, a)) for a in range(2)]
            return b.add(g[0], b.mul(n[0], b.add(g[1], b.mul(n[1], g[2]))))
        if query not in _WI_BUILTIN:
            raise ctx.error(None, f"unknown work-item query {query!r}")
        if dim is None or not 0 <= dim < 3:
            raise ctx.error(None, f"work-item dimension {dim} is out of range 0..2")
        dims = ctx.wi.dims
        if isinstance(dims, int):
            axis = dims - 1 - dim
            if axis < 0:   # a dimension the range does not have: id 0 of range 1
                return ll.Constant(lt.I64, 0 if query.endswith(("_id", "_offset")) else 1)
            return self._axis(ctx, query, ll.Constant(lt.I32, axis))
        # Device function: D-1-d at run time; out of range (d >= D) gives d itself, which
        # OpenCL answers with 0 / 1 for dimensions beyond the work dimension.
        axis = b.sub(b.sub(dims, ll.Constant(lt.I32, 1)), ll.Constant(lt.I32, dim))
        axis = b.select(b.icmp_signed("<", axis, _I32_0), ll.Constant(lt.I32, dim), axis)
        return self._axis(ctx, query, axis)

    def _axis(self, ctx, query: str, axis: ll.Value) -> ll.Value:
        # A constant axis (kernels): in the entry block, so a query inside a branch needs
        # no load of the builtin variable there and the Intel vectorizer sees one
        # ``get_global_id`` per dimension at the top of the kernel, as from OpenCL C.
        b = ctx.entry_builder() if isinstance(axis, ll.Constant) else ctx.builder
        return _builtin_call(ctx, mangled(_WI_BUILTIN[query], "i"), lt.I64, [axis], builder=b)

    def sub_group(self, ctx: LoweringContext, query: str) -> ll.Value:
        v = _builtin_call(ctx, mangled(_SG_BUILTIN[query], "v"), lt.I32, [])
        return ctx.builder.zext(v, lt.I64)

    def barrier(self, ctx: LoweringContext, op: Op) -> None:
        scope = SCOPE["sub_group" if op.attrs["scope"] == "sub_group" else "work_group"]
        control_barrier(ctx, scope)

    def sub_group_reduce(self, ctx: LoweringContext, op: Op, value: ll.Value) -> ll.Value:
        return _group_reduce(ctx, op, value, "sub_group")

    def spec_native(self, ctx: LoweringContext, op: Op) -> ll.Value:
        return spec_constant(ctx, op.type, list(op.attrs["leaf_ids"]), bytes(op.attrs["default"]))

    # Math ----------------------------------------------------------------------------------
    def math(self, ctx: LoweringContext, name: str, args: list, result_type):
        b = ctx.builder
        if name == "isnan":
            return b.fcmp_unordered("uno", args[0], args[0])
        if name == "isinf":
            x = args[0]
            inf = ll.Constant(x.type, [float("inf")] * x.type.count) \
                if isinstance(x.type, ll.VectorType) else ll.Constant(x.type, float("inf"))
            return b.fcmp_ordered("==", opencl_math(ctx, "fabs", [x]), inf)
        if name == "rsqrt":    # exactly 1/sqrt(x), like the other targets (not native rsqrt)
            one = ll.Constant(args[0].type, [1.0] * args[0].type.count) \
                if isinstance(args[0].type, ll.VectorType) else ll.Constant(args[0].type, 1.0)
            return b.fdiv(one, opencl_math(ctx, "sqrt", args))
        if name in OPENCL_MATH:
            return opencl_math(ctx, OPENCL_MATH[name], args)
        if name == "ldexp":    # ldexp(gentype x, int n): the exponent mangles as int
            return _builtin_call(ctx, mangled("ldexp", _mangle_lltype(args[0].type) +
                                              _mangle_lltype(args[1].type)),
                                 args[0].type, args)
        if name in MATH_PAIRS:
            return _out_arg_builtin(ctx, name, args)
        return None

    def atomic_scope(self, scope: str) -> str:
        return SYNC_SCOPES.get(scope, "")

    # ``a * b + c`` in one expression is OpenCL.std ``mad``, as OpenCL C contracts by
    # default (FP_CONTRACT ON: clang emits llvm.fmuladd, which the Khronos translator
    # writes as ``mad``). The SPIR-V environment spec defines ``mad`` on full-profile
    # devices as a correctly rounded fma or a multiply and an add each correctly rounded:
    # llvm.fmuladd's meaning, with the choice left to the driver (LLVM's backend writes
    # llvm.fmuladd as ``fma``, a library call on a CPU without FMA). Without it the
    # module has no contraction at all: the backend drops ``contract`` and declares
    # ContractionOff, and the Intel CPU runtime made each FIR tap a ``vmulps`` and a
    # ``vaddps`` where the same OpenCL C got one ``vfmadd``.
    contract_expressions = True

    def mul_add(self, ctx: LoweringContext, a: ll.Value, b: ll.Value, c: ll.Value) -> ll.Value:
        return opencl_math(ctx, "mad", [a, b, c])


# Helpers --------------------------------------------------------------------------------

def _assume_sizes_non_negative(ctx) -> None:
    """``llvm.assume(x >= 0)`` in the entry block for every accessor range and offset
    argument of a kernel. They are sizes, and knowing it lets LLVM fold a bounds check
    ``0 <= i < range`` into one unsigned compare: after the Intel runtime's 16-way
    vectorizer, that halves the i64 mask compares of a bounds-checked stencil (conv3x3:
    about 1.4x -> 1.0x the OpenCL C time). (A ``range(i64 0, ...)`` parameter attribute
    does not enable that fold in LLVM 20; an assume does.)"""
    fn, args, i = ctx.function, list(ctx.llfn.args), 0
    sizes = []
    for p in fn.params:
        n = len(param_types(p, True, ctx.lowering))
        if isinstance(p.type, (AccessorType, LocalAccessorType)):
            sizes += args[i + 1:i + n]
        i += n
    if not sizes:
        return
    b = ctx.entry_builder()
    assume = ctx.llmodule.globals.get("llvm.assume") or ll.Function(
        ctx.llmodule, ll.FunctionType(lt.VOID, [lt.I1]), "llvm.assume")
    zero = ll.Constant(lt.I64, 0)
    for a in sizes:
        b.call(assume, [b.icmp_signed(">=", a, zero)])


def _declare(llmodule: ll.Module, name: str, ret: ll.Type, params: list, *,
             convergent: bool = False, pure: bool = False) -> ll.Function:
    fn = llmodule.globals.get(name)
    if fn is None:
        fn = ll.Function(llmodule, ll.FunctionType(ret, params), name)
        fn.calling_convention = "spir_func"
        fn.attributes.add("nounwind")
        if convergent:
            fn.attributes.add("convergent")
        if pure:
            set.add(fn.attributes, "willreturn")
            set.add(fn.attributes, "memory(none)")
    return fn


def _builtin_call(ctx, name: str, ret: ll.Type, args: list, builder=None, **kw) -> ll.Value:
    fn = _declare(ctx.llmodule, name, ret, [a.type for a in args], pure=True, **kw)
    return (builder or ctx.builder).call(fn, args)


def _call(ctx, name: str, ret: ll.Type, args: list, **kw) -> ll.Value:
    fn = _declare(ctx.llmodule, name, ret, [a.type for a in args], **kw)
    return ctx.builder.call(fn, args)


def control_barrier(ctx, scope: int) -> None:
    """``OpControlBarrier(scope, scope, SeqCst | Workgroup | CrossWorkgroup memory)``."""
    args = [ll.Constant(lt.I32, scope), ll.Constant(lt.I32, scope),
            ll.Constant(lt.I32, BARRIER_SEMANTICS)]
    _call(ctx, mangled("__spirv_ControlBarrier", "iii"), lt.VOID, args, convergent=True)


def require_extension(llmodule: ll.Module, ext: str) -> None:
    """Record that the module needs SPIR-V extension ``ext`` (``!pysycl.spirv.extensions``)."""
    have = getattr(llmodule, "_pysycl_spirv_extensions", None)
    if have is None:
        have = llmodule._pysycl_spirv_extensions = set()
    if ext in have:
        return
    have.add(ext)
    llmodule.add_named_metadata(EXTENSIONS_METADATA, [ll.MetaDataString(llmodule, ext)])


_EXT_MD = re.compile(r'^!' + re.escape(EXTENSIONS_METADATA) + r'\s*=\s*!\{([^}]*)\}', re.M)


def required_extensions(llvm_ir: str) -> frozenset[str]:
    """The SPIR-V extensions a lowered module asked for (see :func:`require_extension`).

    >>> required_extensions('!pysycl.spirv.extensions = !{!0}\\n!0 = !{!"SPV_X"}\\n')
    frozenset({'SPV_X'})
    """
    m = _EXT_MD.search(llvm_ir)
    if not m:
        return frozenset()
    refs = re.findall(r"!(\d+)", m.group(1))
    out = set()
    for r in refs:
        node = re.search(r"^!" + r + r'\s*=\s*(?:distinct\s+)?!\{([^}]*)\}', llvm_ir, re.M)
        if node:
            out.update(re.findall(r'!"([A-Za-z0-9_]+)"', node.group(1)))
    return frozenset(out)


# Math -------------------------------------------------------------------------------------
def _mangle_lltype(t: ll.Type) -> str:
    if isinstance(t, ll.VectorType):
        return f"Dv{t.count}_{_mangle_lltype(t.element)}"
    if isinstance(t, ll.FloatType):
        return "f"
    if isinstance(t, ll.DoubleType):
        return "d"
    if isinstance(t, ll.HalfType):
        return "Dh"
    if isinstance(t, ll.IntType):
        return {1: "b", 8: "c", 16: "s", 32: "i", 64: "l"}[t.width]
    raise TypeError(f"no mangling for {t}")


def opencl_math(ctx, fname: str, args: list) -> ll.Value:
    """Call the OpenCL.std function ``fname`` at the arguments' (float) type."""
    t = args[0].type
    m = _mangle_lltype(t)
    # Itanium substitutions: repeated vector types become S_ after their first use.
    rest = "" if len(args) == 1 else ("S_" if isinstance(t, ll.VectorType) else m) * (len(args) - 1)
    return _builtin_call(ctx, mangled(fname, m + rest), t, args)


def _out_arg_builtin(ctx, fname: str, args: list):
    """OpenCL's ``frexp(x, int *exp)``, ``lgamma_r(x, int *signp)``, ``remquo(x, y, int
    *quo)`` (OpenCL.std instructions) on a private int: (result, the int)."""
    t = args[0].type
    m = _mangle_lltype(t)
    rest = "" if len(args) == 1 else ("S_" if isinstance(t, ll.VectorType) else m)
    symbol = mangled(fname, m + rest + "P" + _mangle_lltype(int32_like(t)))
    return out_arg_call(ctx, symbol, args, calling_convention="spir_func")


# Group reductions ----------------------------------------------------------------------------
# OpenCL's work_group_/sub_group_reduce_* (OpGroup*) have add, min and max; the other
# operators are sub_group_non_uniform_reduce_* (cl_khr_subgroup_non_uniform_arithmetic)
# on each sub-group, combined across sub-groups through local memory.
_BUILTIN_KIND = {"plus": "add", "minimum": "min", "maximum": "max", "multiplies": "mul",
                 "bit_and": "and", "bit_or": "or", "bit_xor": "xor"}
_UNIFORM_KINDS = frozenset({"add", "min", "max"})
GROUP_SCRATCH = "__pysycl_group_scratch"
# Slots for the sub-groups of a work-group: Intel's CPU runtime allows 8192 work-items in
# sub-groups of at least 4 (16 KiB of i64 slots).
GROUP_SCRATCH_SLOTS = 2048


def _group_reduce(ctx, op: Op, value: ll.Value, scope: str) -> ll.Value:
    t = op.type
    if not isinstance(t, ScalarType):
        raise ctx.error(op, f"reduce_over_group of {t} is not supported on OpenCL")
    w = widen(ctx, op.attrs["op"], t, value)
    kind = _BUILTIN_KIND.get(w.kind)
    if kind is None:
        raise ctx.error(op, f"reduce_over_group: unknown operation {op.attrs['op']!r}")
    if kind in _UNIFORM_KINDS:
        base = "sub_group_reduce_" if scope == "sub_group" else "work_group_reduce_"
        return w.back(_group_builtin(ctx, base + kind, w.type, [w.value]))
    total = _group_builtin(ctx, "sub_group_non_uniform_reduce_" + kind, w.type, [w.value])
    if scope == "work_group":
        total = _across_sub_groups(ctx, w, total)
    return w.back(total)


def _group_builtin(ctx, name: str, s: ScalarType, args: list, more: str = "") -> ll.Value:
    """Call the OpenCL group built-in ``name`` overloaded on scalar type ``s`` (its first
    argument's type; ``more``: the mangling of the others); convergent: every work-item
    of the group must reach it."""
    return _builtin_call(ctx, mangled(name, _MANGLE[s.name] + more), args[0].type, args,
                         convergent=True)


def _across_sub_groups(ctx, w, sg_total: ll.Value) -> ll.Value:
    """The work-group's total from each sub-group's: one local slot per sub-group,
    combined by every work-item in sub-group order (so all get the same bits)."""
    b = ctx.builder
    combine = combiner(ctx, w.kind, w.type)
    slots = _group_scratch(ctx)
    mt = ctx.mtype(w.type)
    control_barrier(ctx, SCOPE["work_group"])     # an earlier use may still read the slots
    sg = b.trunc(ctx.lowering.sub_group(ctx, "group_id"), lt.I32)
    lane = b.trunc(ctx.lowering.sub_group(ctx, "local_id"), lt.I32)
    with b.if_then(b.icmp_unsigned("==", lane, _I32_0)):
        ctx.store(sg_total, b.gep(slots, [sg], source_etype=mt), w.type, align=8)
    control_barrier(ctx, SCOPE["work_group"])
    count = b.trunc(ctx.lowering.sub_group(ctx, "group_range"), lt.I32)
    return fold_slots(ctx, slots, w.type, ll.Constant(lt.I32, 1), count,
                      ctx.load(slots, w.type, align=8), combine, 8, "wg.reduce")


def _group_scratch(ctx) -> ll.GlobalVariable:
    """``@__pysycl_group_scratch``: a work-group local array of 64-bit slots."""
    g = ctx.llmodule.globals.get(GROUP_SCRATCH)
    if g is None:
        g = ll.GlobalVariable(ctx.llmodule, ll.ArrayType(lt.I64, GROUP_SCRATCH_SLOTS),
                              GROUP_SCRATCH, addrspace=ctx.lowering.addrspaces["local"])
        g.linkage = "internal"
        g.align = 16
        g.type = ll.PointerType(addrspace=g.addrspace)   # opaque: slots of any type
    return g


def _lower_group_reduce(ctx, op):
    return _group_reduce(ctx, op, ctx.get(op.operands[0]), op.attrs["scope"])


def _lower_group_scan(ctx, op):
    """``{sub,work}_group_scan_{inclusive,exclusive}_{add,min,max}``; the other operators
    scan each sub-group (``sub_group_non_uniform_scan_*``) and add the totals of the
    sub-groups before, from local memory."""
    t, scope = op.type, op.attrs["scope"]
    if not isinstance(t, ScalarType):
        raise ctx.error(op, f"scans of {t} are not supported on OpenCL")
    w = widen(ctx, op.attrs["op"], t, ctx.get(op.operands[0]))
    kind, mode = _BUILTIN_KIND[w.kind], "inclusive" if op.attrs["inclusive"] else "exclusive"
    if kind in _UNIFORM_KINDS:
        return w.back(_group_builtin(ctx, f"{scope}_scan_{mode}_{kind}", w.type, [w.value]))
    part = _group_builtin(ctx, f"sub_group_non_uniform_scan_{mode}_{kind}", w.type, [w.value])
    if scope == "sub_group":
        return w.back(part)
    total = part if mode == "inclusive" else _group_builtin(
        ctx, f"sub_group_non_uniform_scan_inclusive_{kind}", w.type, [w.value])
    prefix = _before_sub_group(ctx, w, total)
    return w.back(combiner(ctx, w.kind, w.type)(prefix, part))


def _before_sub_group(ctx, w, inclusive: ll.Value) -> ll.Value:
    """op over the totals of the sub-groups before this one (the identity for the
    first): each sub-group's last work-item leaves its inclusive scan in a local slot."""
    b = ctx.builder
    combine = combiner(ctx, w.kind, w.type)
    slots = _group_scratch(ctx)
    mt = ctx.mtype(w.type)
    control_barrier(ctx, SCOPE["work_group"])
    sg = b.trunc(ctx.lowering.sub_group(ctx, "group_id"), lt.I32)
    lane = ctx.lowering.sub_group(ctx, "local_id")
    last = b.sub(ctx.lowering.sub_group(ctx, "local_range"), ll.Constant(lt.I64, 1))
    with b.if_then(b.icmp_unsigned("==", lane, last)):
        ctx.store(inclusive, b.gep(slots, [sg], source_etype=mt), w.type, align=8)
    control_barrier(ctx, SCOPE["work_group"])
    return fold_slots(ctx, slots, w.type, _I32_0, sg, group_identity(ctx, w.kind, w.type),
                      combine, 8, "wg.prefix")


def _lower_group_broadcast(ctx, op):
    """``sub_group_broadcast``; a work-group's value goes through local memory (one
    slot between two barriers: OpenCL's work_group_broadcast takes a local id per
    dimension, SYCL a linear one)."""
    x, at = op.operands
    w = widen(ctx, None, op.type, ctx.get(x))
    b = ctx.builder
    if op.attrs["scope"] == "sub_group":
        lane = b.trunc(ctx.get(at), lt.I32)
        return w.back(_group_builtin(ctx, "sub_group_broadcast", w.type, [w.value, lane], "j"))
    slots = _group_scratch(ctx)
    mt = ctx.mtype(w.type)
    control_barrier(ctx, SCOPE["work_group"])
    lid = ctx.lowering.work_item(ctx, "local_linear_id", None)
    with b.if_then(b.icmp_unsigned("==", lid, ctx.get(at))):
        ctx.store(w.value, b.gep(slots, [_I32_0], source_etype=mt), w.type, align=8)
    control_barrier(ctx, SCOPE["work_group"])
    return w.back(ctx.load(b.gep(slots, [_I32_0], source_etype=mt), w.type, align=8))


_SHUFFLES = {"idx": "sub_group_shuffle", "xor": "sub_group_shuffle_xor",
             "down": "sub_group_shuffle_down", "up": "sub_group_shuffle_up"}


def _lower_group_shuffle(ctx, op):
    """cl_khr_subgroup_shuffle(_relative): OpGroupNonUniformShuffle(Xor, Down, Up)."""
    x, k = op.operands
    w = widen(ctx, None, op.type, ctx.get(x))
    lane = ctx.builder.trunc(ctx.get(k), lt.I32)
    return w.back(_group_builtin(ctx, _SHUFFLES[op.attrs["mode"]], w.type, [w.value, lane], "j"))


# Atomics --------------------------------------------------------------------------------------
_rmw_scoped = with_syncscope(lower_atomic_rmw)


def _lower_atomic_rmw(ctx, op):
    p, v = op.operands
    s, kind = scalar_of(v.type), op.attrs["op"]
    if not s.is_float:
        return _rmw_scoped(ctx, op)
    b = ctx.builder
    ptr, val = ctx.get(p), ctx.get(v)
    from ...codegen.target_lowering import ORDERINGS
    order = ORDERINGS[op.attrs["order"]]
    scope = ctx.lowering.atomic_scope(op.attrs["scope"])
    ordering = f'syncscope("{scope}") {order}' if scope else order
    it = ll.IntType(s.bits)
    if kind in ("add", "sub"):
        require_extension(ctx.llmodule, FLOAT_ATOMIC_ADD)
        inst = b.atomic_rmw("fadd", ptr, val if kind == "add" else b.fneg(val), order)
        inst.ordering = ordering
        return inst
    if kind == "xchg":
        inst = b.atomic_rmw("xchg", ptr, b.bitcast(val, it), order)
        inst.ordering = ordering
        return b.bitcast(inst, val.type)
    if kind in ("min", "max"):
        return _float_cas_loop(ctx, ptr, val, s, kind, ordering, order)
    raise ctx.error(op, f"atomic {kind} is not defined on {s}")


def _float_cas_loop(ctx, ptr, val, s: ScalarType, kind: str, ordering: str, order: str):
    """``old = *p; while !cas(p, old, min(old, v)): old = current`` on the bit patterns."""
    from ...codegen.target_lowering import FAILURE_ORDERINGS
    b = ctx.builder
    it = ll.IntType(s.bits)
    start = _atomic_load_call(ctx, ptr, it, "relaxed", "device")
    pre = b.block
    fn = pre.function
    loop, done = fn.append_basic_block("fatomic.loop"), fn.append_basic_block("fatomic.end")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(it)
    old.add_incoming(start, pre)
    oldf = b.bitcast(old, val.type)
    pred = "<" if kind == "min" else ">"
    new = b.select(compare(ctx, pred, val, oldf, s), val, oldf)
    pair = b.cmpxchg(ptr, old, b.bitcast(new, it), order, FAILURE_ORDERINGS[order])
    pair.ordering = ordering
    pair.failordering = FAILURE_ORDERINGS[order]
    seen = b.extract_value(pair, 0)
    ok = b.extract_value(pair, 1)
    old.add_incoming(seen, b.block)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)
    return oldf


def _semantics(order: str, addrspace: int) -> ll.Constant:
    bits = _ORDER_BITS[order]
    if bits:
        bits |= _STORAGE_BITS.get(addrspace, 0)
    return ll.Constant(lt.I32, bits)


def _ptr_mangling(ptr: ll.Value, elem: str) -> str:
    space = ptr.type.addrspace
    return f"PU3AS{space}{elem}" if space else f"P{elem}"


def _atomic_load_call(ctx, ptr, it: ll.IntType, order: str, scope: str) -> ll.Value:
    m = _mangle_lltype(it)
    name = mangled("__spirv_AtomicLoad", _ptr_mangling(ptr, m) + "ii")
    args = [ptr, ll.Constant(lt.I32, SCOPE.get(scope, 1)),
            _semantics(order, ptr.type.addrspace)]
    return _call(ctx, name, it, args)


def _lower_atomic_load(ctx, op):
    (p,) = op.operands
    order = {"release": "relaxed", "acq_rel": "acquire"}.get(op.attrs["order"], op.attrs["order"])
    mt = ctx.mtype(op.type)
    it = mt if isinstance(mt, ll.IntType) else ll.IntType(op.type.size * 8)
    v = _atomic_load_call(ctx, ctx.get(p), it, order, op.attrs["scope"])
    v = v if it is mt else ctx.builder.bitcast(v, mt)
    return ctx.to_value(v, op.type)


def _lower_atomic_cmpxchg(ctx, op):
    """``__spirv_AtomicCompareExchange`` rather than LLVM's ``cmpxchg``: in a CAS loop the
    optimiser carries cmpxchg's ``{T, i1}`` result around the loop in a phi, which the
    SPIR-V backend aborts on ("illegal aggregate intrinsic user", LLVM 22.1). The call
    returns the old value only; floats go through their bits, as C++ compares them."""
    p, expected, desired = op.operands
    s, b = scalar_of(expected.type), ctx.builder
    ptr, e, d = ctx.get(p), ctx.get(expected), ctx.get(desired)
    it = ll.IntType(s.bits)
    if s.is_float:
        e, d = b.bitcast(e, it), b.bitcast(d, it)
    order = op.attrs["order"]
    failure = {"release": "relaxed", "acq_rel": "acquire"}.get(order, order)
    m = _mangle_lltype(it)
    name = mangled("__spirv_AtomicCompareExchange", _ptr_mangling(ptr, m) + "iii" + m + m)
    space = ptr.type.addrspace
    args = [ptr, ll.Constant(lt.I32, SCOPE.get(op.attrs["scope"], 1)),
            _semantics(order, space), _semantics(failure, space), d, e]
    old = _call(ctx, name, it, args)
    return b.bitcast(old, ctx.vtype(s)) if s.is_float else old


def _lower_atomic_store(ctx, op):
    p, v = op.operands
    order = {"acquire": "relaxed", "acq_rel": "release"}.get(op.attrs["order"], op.attrs["order"])
    ptr, val = ctx.get(p), ctx.to_memory(ctx.get(v), v.type)
    it = val.type if isinstance(val.type, ll.IntType) else ll.IntType(v.type.size * 8)
    if val.type is not it:
        val = ctx.builder.bitcast(val, it)
    m = _mangle_lltype(it)
    name = mangled("__spirv_AtomicStore", _ptr_mangling(ptr, m) + "ii" + m)
    args = [ptr, ll.Constant(lt.I32, SCOPE.get(op.attrs["scope"], 1)),
            _semantics(order, ptr.type.addrspace), val]
    _call(ctx, name, lt.VOID, args)


# Specialization constants ------------------------------------------------------------------------
def spec_constant(ctx, t: Type, leaf_ids: list[int], default: bytes) -> ll.Value:
    """The SPIR-V-friendly IR of a native spec constant of IR type ``t`` whose scalar
    leaves (depth first, padding excluded) have SpecIds ``leaf_ids``."""
    ids = list(leaf_ids)
    if isinstance(t, ScalarType):
        # A top-level bool is i1 (OpSpecConstantTrue/False); the driver sets it as 1 byte.
        v = _spec_leaf(ctx, t, ids, default, 0, as_value=True)
    else:
        v = _spec_value(ctx, t, ids, default, 0)
    if ids:
        raise ctx.error(None, f"spec constant of type {t}: {len(ids)} SpecIds left over")
    return v


def _spec_leaf(ctx, t: ScalarType, ids: list, default: bytes, offset: int,
               as_value: bool = False) -> ll.Value:
    if not ids:
        raise ctx.error(None, f"spec constant: no SpecId for a leaf of type {t}")
    spec_id = ids.pop(0)
    import numpy as np
    raw = np.frombuffer(default[offset:offset + t.size].ljust(t.size, b"\0"), dtype=t.dtype)[0]
    if t.is_bool and as_value:
        llt, value, code = lt.I1, int(bool(raw)), "b"
    elif t.is_bool:
        llt, value, code = lt.I8, int(bool(raw)), "c"
    else:
        llt = ctx.mtype(t)
        value = float(raw) if t.is_float else int(np.array(raw).view(f"i{t.size}"))
        code = _mangle_lltype(llt)
    name = mangled("__spirv_SpecConstant", "i" + code)
    return _call(ctx, name, llt, [ll.Constant(lt.I32, spec_id), ll.Constant(llt, value)])


def _spec_value(ctx, t: Type, ids: list, default: bytes, offset: int) -> ll.Value:
    """Memory-form value of ``t`` assembled from its scalar leaves' spec constants.

    Not ``__spirv_SpecConstantComposite``: once the optimiser splits a store of the
    composite into field stores, the ``extractvalue`` of an OpSpecConstantComposite
    aborts LLVM 22.1 ("Unexpected integer constant pattern", SPIRVUtils.cpp). Built with
    ``insertvalue``, the optimiser forwards each leaf's OpSpecConstant to its use, and
    every leaf keeps its SpecId, which is all the driver needs to set the value."""
    b = ctx.builder
    if isinstance(t, ScalarType):
        return _spec_leaf(ctx, t, ids, default, offset)
    llt = ctx.mtype(t)
    agg = ll.Constant(llt, ll.Undefined)
    if isinstance(t, VecType):
        for i in range(t.n):
            leaf = _spec_leaf(ctx, t.elem, ids, default, offset + i * t.elem.size)
            agg = b.insert_element(agg, leaf, ll.Constant(lt.I32, i))
        return agg
    if isinstance(t, ComplexType):                  # {re, im}
        for i in range(2):
            agg = b.insert_value(agg, _spec_leaf(ctx, t.elem, ids, default,
                                                 offset + i * t.elem.size), i)
        return agg
    if isinstance(t, ArrayType):
        for i in range(t.n):
            agg = b.insert_value(agg, _spec_value(ctx, t.elem, ids, default,
                                                  offset + i * t.elem.size), i)
        return agg
    if isinstance(t, StructType):
        for f in sorted(t.fields, key=lambda f: f.offset):   # depth first in layout order
            idx, _ = lt.field_index(t, t.field_index(f.name))
            agg = b.insert_value(agg, _spec_value(ctx, f.type, ids, default,
                                                  offset + f.offset), idx)
        return agg
    raise ctx.error(None, f"type {t} cannot be a specialization constant")


# Kernel metadata ----------------------------------------------------------------------------
def _ints(text) -> tuple[int, ...] | None:
    if text in (None, ""):
        return None
    return tuple(int(x) for x in str(text).split(",") if x.strip())


def opencl_order(sizes: tuple[int, ...]) -> list[int]:
    """SYCL order (rightmost fastest) -> OpenCL order padded to 3 with 1.

    >>> opencl_order((8, 4))
    [4, 8, 1]
    """
    out = list(reversed(sizes))
    return (out + [1, 1, 1])[:3]


def kernel_metadata(lowering, llmodule: ll.Module, fn: Function, llfn: ll.Function) -> None:
    props = fn.properties
    i32 = lambda v: ll.Constant(lt.I32, int(v))   # noqa: E731
    # Execution modes go through the named ``!spirv.ExecutionMode`` (sycl_ext_oneapi_properties): llvmlite
    # prints several function metadata attachments comma separated, which LLVM rejects,
    # and the function keeps its one attachment for ``!spirv.ParameterDecorations``.
    modes = []
    reqd = _ints(props.get("sycl-work-group-size"))
    if reqd:
        modes.append([EXEC_MODE_LOCAL_SIZE] + opencl_order(reqd))
    hint = _ints(props.get("sycl-work-group-size-hint"))
    if hint:
        modes.append([EXEC_MODE_LOCAL_SIZE_HINT] + opencl_order(hint))
    sg = _ints(props.get("sycl-sub-group-size"))
    if sg:
        modes.append([EXEC_MODE_SUBGROUP_SIZE, sg[0]])
    for mode in modes:
        llmodule.add_named_metadata("spirv.ExecutionMode",
                                    [llfn] + [i32(v) for v in mode])
    # Parameter decorations: Alignment for sycl-alignment (the align attribute alone is
    # not turned into a decoration by the backend).
    decorations: list[list] = []
    for p in fn.params:
        n = len(param_types(p, True, lowering))
        for k in range(n):
            decs = []
            align = p.properties.get("sycl-alignment", "") if p.properties else ""
            if k == 0 and str(align).isdigit() and int(align) > 0 and \
                    isinstance(llfn.args[len(decorations)].type, ll.PointerType):
                decs.append([i32(DECORATION_ALIGNMENT), i32(align)])
            decorations.append(decs)
    if any(decorations):
        decorations += [[]] * (len(llfn.args) - len(decorations))   # the spec buffer
        nodes = [llmodule.add_metadata([llmodule.add_metadata(d) for d in decs])
                 for decs in decorations]
        llfn.set_metadata("spirv.ParameterDecorations", llmodule.add_metadata(nodes))


def _device_global_decorations(llmodule: ll.Module) -> None:
    """Alignment decoration on every device global (``!spirv.Decorations``)."""
    for g in llmodule.global_values:
        if isinstance(g, ll.GlobalVariable) and g.name.startswith("__pysycl_dg_") \
                and "spirv.Decorations" not in g.metadata and g.align:
            node = llmodule.add_metadata([ll.Constant(lt.I32, DECORATION_ALIGNMENT),
                                          ll.Constant(lt.I32, g.align)])
            g.set_metadata("spirv.Decorations", llmodule.add_metadata([node]))


def lowering_for(target) -> OpenClLowering:
    """The lowering of a SPIR-V target (``bundle.toolchain`` looks this up)."""
    return OpenClLowering(target)


__all__ = ["OpenClLowering", "kernel_metadata", "mangled",
           "opencl_math", "opencl_order", "require_extension", "required_extensions",
           "spec_constant", "control_barrier", "SCOPE", "SYNC_SCOPES", "BARRIER_SEMANTICS",
           "EXTENSIONS_METADATA", "FLOAT_ATOMIC_ADD", "const"]
