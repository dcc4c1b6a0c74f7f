"""The CUDA (NVPTX) rules: the conventions of ``target.py`` applied by codegen.

What differs from the shared rules, and why:

* **Kernel entry.** An IR kernel is lowered with the shared ABI into an internal,
  ``alwaysinline`` function ``<name>.body``; :meth:`CudaLowering.wrap_kernel` then makes
  the ``ptx_kernel`` the driver launches under the kernel's own name. The entry is where
  the CUDA argument ABI lives: a ``local_accessor`` is an ``i32`` byte offset into
  ``@__pysycl_local_mem`` (the one dynamic shared buffer the driver lays out), structs
  come ``ptr byval(%T)`` (NVPTX turns them into ``.param`` byte arrays), and kernel
  properties become attributes: every ``"sycl-*"`` one as is (sycl_ext_oneapi_properties), and launch
  bounds as ``"nvvm.reqntid"``/``"nvvm.maxntid"`` (:class:`~.target.LaunchBounds`).
* **Work-items** come from ``llvm.nvvm.read.ptx.sreg.*``; SYCL dimension ``i`` of a
  ``D``-dimensional kernel is CUDA axis ``"xyz"[D-1-i]``. A kernel knows ``D`` (its
  index-space parameter), so queries fold to one register read; device functions cannot
  know which kernel calls them, so they take ``D`` as one hidden ``i32`` parameter
  (a constant at every call from a kernel, folded once inlined). Linear ids need no
  ``D``: CUDA's linear thread index *is* SYCL's local linear id (x fastest), which is
  also why a sub-group is exactly a warp.
* **Sub-groups** are warps of 32 (the last one of a work-group may be partial); the
  reduction is a ``shfl.sync.bfly`` butterfly over the sub-group's member mask followed by
  a broadcast from lane 0, which is exact for partial warps too. Work-group reductions
  combine the warps' results through 32 slots of static shared memory between two
  ``bar.sync`` (the native CPU's ``passes/lower_group_reduce.py`` is sequential and not
  run for device targets).
* **Floating point** ``+ - *`` carry LLVM's ``contract`` flag, so a multiply feeding an
  add becomes one ``fma.rn`` as with nvcc's default ``-fmad=true`` (see ``float_flags``).
* **Math** calls libdevice ``__nv_*`` in the operand's precision (``__nv_sinf`` for f32:
  LLVM's own ``llvm.sin.f32`` becomes the inaccurate ``sin.approx``); operations PTX has
  instructions for (sqrt, fabs, floor, fma, ...) keep the LLVM intrinsics.
* **Atomics** carry ``syncscope("block")`` up to work-group scope and
  ``syncscope("device")`` at device scope (system scope is LLVM's default).
* **Device globals** are ``externally_initialized``: the host writes them with
  ``cuModuleGetGlobal`` + copies, so LLVM must not fold their initial value.
* ``spec.native`` is not supported: PTX has no specialization constants; CUDA images use
  the literal or emulated lowering (``native_spec_constants=False`` on the target).

>>> from pysycl.backends.cuda.target import cuda_target
>>> CudaLowering(cuda_target((9, 0))).addrspaces["local"]
3
"""
from __future__ import annotations


from llvmlite import ir as ll

from ...codegen import LoweringContext, TargetLowering, param_types
from ...codegen.target_lowering import DeviceDimsLowering, with_syncscope
from ...codegen import types as lt
from ...codegen.group_ops import combiner, fold_slots, identity as group_identity, truth_value
from ...codegen.rules_memory import (lower_atomic_cmpxchg, lower_atomic_load,
                                     lower_atomic_rmw, lower_atomic_store, lower_dg_addr)
from ...codegen.rules_math_pairs import lgamma_sign, scalar_out_arg_call
from ...codegen.rules_scalar import compare, per_lane, scalar_of
from ...errors import errc, exception
from ...ir.core import Function, Op
from ...ir.types import LocalAccessorType, ScalarType, VecType
from .target import LOCAL_MEMORY_SYMBOL, LaunchBounds, cuda_axis, ptx_symbol

WARP = 32
_AXES = "xyz"
_ZERO32 = ll.Constant(lt.I32, 0)
_FULL_MASK = ll.Constant(lt.I32, -1)
_GROUP_SCRATCH = "__pysycl_group_scratch"     # 32 slots for work-group reductions
_BODY_SUFFIX = ".body"

# SYCL memory_scope -> NVPTX syncscope (LLVM NVPTX: "block", "cluster", "device", "" =
# system). PTX has no scope narrower than a CTA, so work-item and sub-group use "block".
SYNC_SCOPES = {"work_item": "block", "sub_group": "block", "work_group": "block",
               "device": "device", "system": ""}

# IR math functions computed by libdevice (f32 name gets the "f" suffix). The others map
# to PTX instructions through LLVM intrinsics (sqrt.rn, abs, cvt.rmi, fma.rn, ...).
LIBDEVICE_MATH = frozenset({"exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan",
                            "asin", "acos", "atan", "sinh", "cosh", "tanh", "pow", "atan2",
                            "erf", "erfc", "log1p", "expm1", "cbrt", "tgamma", "lgamma",
                            "asinh", "acosh", "atanh", "hypot", "fmod", "remainder"})
# Math ops with a second, integer result that libdevice computes (float, double names).
_LIBDEVICE_PAIRS = {"frexp": ("__nv_frexpf", "__nv_frexp"),
                    "remquo": ("__nv_remquof", "__nv_remquo")}



# Fences around a read-modify-write of each ordering (before, after): NVPTX emits every
# ``atomicrmw`` as a relaxed ``atom`` whatever its ordering (LLVM 22; its cmpxchg, loads
# and stores keep theirs), so the ordering is made with fences, as PTX's memory model maps
# C++'s: release before, acquire after, a sequentially consistent fence before seq_cst.
_RMW_FENCES = {"release": ("release", None), "acquire": (None, "acquire"),
               "acq_rel": ("release", "acquire"), "seq_cst": ("seq_cst", "acquire")}


class CudaLowering(DeviceDimsLowering):
    name = "cuda"
    # target.py ADDRESS_SPACES, except private: allocas are made in address space 0 (the
    # data layout has no alloca space), and NVPTX infers the local space from them.
    addrspaces = {"private": 0, "global": 1, "local": 3, "constant": 1, "generic": 0}
    unsupported = {
        "spec.native": "PTX has no specialization constants; CUDA images use the literal "
                       "or emulated lowering",
        "wg.items": "work-group fission is only for the native CPU; CUDA has real barriers",
    }
    # FMA contraction, the default of every CUDA compiler (nvcc -fmad=true, clang
    # -ffp-contract=fast for CUDA, NVRTC and hence CuPy): a * b + c may become one fma.rn
    # (rounded once, so results can differ from NumPy's in the last bit). The native CPU
    # keeps IEEE-exact separate roundings, like Numba's fastmath=False.
    float_flags = ("contract",)

    def __init__(self, target=None, debug: bool = False):
        super().__init__(target, debug)
        self.rules.update({
            "group.reduce": _lower_group_reduce,
            "group.scan": _lower_group_scan,
            "group.broadcast": _lower_group_broadcast,
            "group.shuffle": _lower_group_shuffle,
            "pow": _lower_pow,
            "atomic.rmw": with_syncscope(lower_atomic_rmw),
            "atomic.cmpxchg": with_syncscope(lower_atomic_cmpxchg),
            "atomic.load": with_syncscope(lower_atomic_load),
            "atomic.store": with_syncscope(lower_atomic_store),
            "dg.addr": _lower_dg_addr,
        })

    # Signatures --------------------------------------------------------------------------
    def kernel_attributes(self, fn: Function, llfn: ll.Function) -> None:
        llfn.linkage = "internal"            # wrap_kernel makes the ptx_kernel entry
        llfn.attributes.add("alwaysinline")

    def annotate_pointer(self, ctx: LoweringContext, ptr: ll.Value, text: str) -> ll.Value:
        """``annotated_ptr`` properties are dropped: PTX has no consumer for
        ``llvm.ptr.annotation``, and the call hides the parameter from LLVM's attribute
        inference, so a ``sycl.restrict`` pointer the kernel only reads would not become
        ``noalias readonly`` and its loads would not become ``ld.global.nc`` (the
        read-only data path). The parameter attributes remain."""
        return ptr

    def device_global_linkage(self) -> str:
        return ""                            # external: found by cuModuleGetGlobal

    # Work-items ---------------------------------------------------------------------------
    def work_item(self, ctx: LoweringContext, query: str, dim: int | None) -> ll.Value:
        b = ctx.builder
        if query in ("local_linear_id", "group_linear_id", "global_linear_id"):
            kind = {"local_linear_id": "local", "group_linear_id": "group",
                    "global_linear_id": "global"}[query]
            # x varies fastest, unused axes are id 0 of range 1: no D needed.
            x, y, z = (self._per_axis(ctx, f"{kind}_id", a) for a in range(3))
            rx, ry = (self._per_axis(ctx, f"{kind}_range", a) for a in range(2))
            return b.add(x, b.mul(rx, b.add(y, b.mul(ry, z))))
        if dim is None or not 0 <= dim < 3:
            raise ctx.error(None, f"work-item dimension {dim} is out of range 0..2")
        if query == "global_offset":
            return ll.Constant(lt.I64, 0)    # the CUDA launch has no offset (driver.py)
        if query not in ("global_id", "local_id", "group_id", "global_range",
                         "local_range", "group_range"):
            raise ctx.error(None, f"unknown work-item query {query!r}")
        dims = ctx.wi.dims
        if isinstance(dims, int):
            axis = cuda_axis(dim, dims)
            if axis < 0:  # a dimension the range does not have: id 0 of range 1
                return ll.Constant(lt.I64, 0 if query.endswith("_id") else 1)
            return self._per_axis(ctx, query, axis)
        # A device function: choose the axis at run time (folded after inlining).
        axis = b.sub(b.sub(dims, ll.Constant(lt.I32, 1)), ll.Constant(lt.I32, dim))
        out = ll.Constant(lt.I64, 0 if query.endswith("_id") else 1)
        for a in range(3):
            out = b.select(b.icmp_signed("==", axis, ll.Constant(lt.I32, a)),
                           self._per_axis(ctx, query, a), out)
        return out

    def _per_axis(self, ctx: LoweringContext, query: str, axis: int) -> ll.Value:
        """A query on one CUDA axis, as i64."""
        b, a = ctx.builder, _AXES[axis]
        if query == "global_id":
            return b.add(b.mul(_sreg(ctx, f"ctaid.{a}"), _sreg(ctx, f"ntid.{a}")),
                         _sreg(ctx, f"tid.{a}"))
        if query == "global_range":
            return b.mul(_sreg(ctx, f"nctaid.{a}"), _sreg(ctx, f"ntid.{a}"))
        reg = {"local_id": "tid", "group_id": "ctaid", "local_range": "ntid",
               "group_range": "nctaid"}[query]
        return _sreg(ctx, f"{reg}.{a}")

    def _group_size(self, ctx: LoweringContext) -> ll.Value:
        b = ctx.builder
        x, y, z = (_sreg(ctx, f"ntid.{a}") for a in _AXES)
        return b.mul(b.mul(x, y), z)

    # Sub-groups (warps) -------------------------------------------------------------------
    def sub_group(self, ctx: LoweringContext, query: str) -> ll.Value:
        b = ctx.builder
        if query == "local_id":
            return _sreg(ctx, "laneid")
        if query == "max_local_range":
            return ll.Constant(lt.I64, WARP)
        lin = self.work_item(ctx, "local_linear_id", None)
        sg = b.lshr(lin, ll.Constant(lt.I64, 5))
        if query == "group_id":
            return sg
        size = self._group_size(ctx)
        if query == "group_range":
            return b.lshr(b.add(size, ll.Constant(lt.I64, WARP - 1)), ll.Constant(lt.I64, 5))
        if query == "local_range":  # the last warp of a group may be partial
            left = b.sub(size, b.shl(sg, ll.Constant(lt.I64, 5)))
            return _umin(b, left, ll.Constant(lt.I64, WARP))
        raise ctx.error(None, f"unknown sub-group query {query!r}")

    def _member_mask(self, ctx: LoweringContext) -> ll.Value:
        """The i32 lane mask of this work-item's sub-group (all 32 lanes unless partial)."""
        b = ctx.builder
        lanes = b.trunc(self.sub_group(ctx, "local_range"), lt.I32)   # 1..32
        return b.lshr(_FULL_MASK, b.sub(ll.Constant(lt.I32, WARP), lanes))

    def barrier(self, ctx: LoweringContext, op: Op) -> None:
        if op.attrs["scope"] == "sub_group":
            _call(ctx, "llvm.nvvm.bar.warp.sync", lt.VOID, [self._member_mask(ctx)])
        else:
            work_group_barrier(ctx)

    def sub_group_reduce(self, ctx: LoweringContext, op: Op, value: ll.Value) -> ll.Value:
        return self._warp_reduce(ctx, op, value, self._member_mask(ctx),
                                 b_lanes=self.sub_group(ctx, "local_range"))

    def _warp_reduce(self, ctx, op, value, mask, b_lanes) -> ll.Value:
        """Butterfly over the lanes present, then lane 0's total to every lane: lane 0
        always combines whole, existing halves, so this is exact for partial warps."""
        b, t = ctx.builder, op.type
        combine = _combiner(ctx, op)
        lane = b.trunc(_sreg(ctx, "laneid"), lt.I32)
        lanes = b.trunc(b_lanes, lt.I32)
        acc = value
        for step in (1, 2, 4, 8, 16):
            other = _shuffle(ctx, "bfly", mask, acc, ll.Constant(lt.I32, step), t)
            present = b.icmp_unsigned("<", b.xor(lane, ll.Constant(lt.I32, step)), lanes)
            acc = b.select(present, combine(acc, other), acc)
        return _shuffle(ctx, "idx", mask, acc, _ZERO32, t)

    def work_group_reduce(self, ctx: LoweringContext, op: Op, value: ll.Value) -> ll.Value:
        """Warp totals -> 32 shared slots -> every work-item combines them in warp order
        (the same order everywhere, so all items get bit-identical float results)."""
        b, t = ctx.builder, op.type
        combine = _combiner(ctx, op)
        warp_total = self.sub_group_reduce(ctx, op, value)
        slots = _group_scratch(ctx)
        mt = ctx.mtype(t)
        work_group_barrier(ctx)              # an earlier reduction may still read the slots
        sg = b.trunc(self.sub_group(ctx, "group_id"), lt.I32)
        with b.if_then(b.icmp_unsigned("==", _sreg32(ctx, "laneid"), _ZERO32)):
            ctx.store(warp_total, b.gep(slots, [sg], source_etype=mt), t, align=1)
        work_group_barrier(ctx)
        count = b.trunc(self.sub_group(ctx, "group_range"), lt.I32)
        acc_slot = ctx.alloca(mt, name="wg.reduce")
        ctx.store(ctx.load(slots, t, align=1), acc_slot, t)
        fn = b.block.function
        head, body, done = (fn.append_basic_block(f"wg.reduce.{s}") for s in ("cond", "body", "end"))
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(lt.I32, name="wg.warp")
        i.add_incoming(ll.Constant(lt.I32, 1), pre)
        b.cbranch(b.icmp_unsigned("<", i, count), body, done)
        b.position_at_end(body)
        x = ctx.load(b.gep(slots, [i], source_etype=mt), t, align=1)
        ctx.store(combine(ctx.load(acc_slot, t), x), acc_slot, t)
        i.add_incoming(b.add(i, ll.Constant(lt.I32, 1)), b.block)
        b.branch(head)
        b.position_at_end(done)
        return ctx.load(acc_slot, t)

    # Math ---------------------------------------------------------------------------------
    def math(self, ctx: LoweringContext, name: str, args: list, result_type):
        if name == "ldexp":    # __nv_ldexpf(float, int); vectors lane by lane
            return _ldexp(ctx, args)
        if name in _LIBDEVICE_PAIRS:    # __nv_frexpf(float, int*) ...
            return scalar_out_arg_call(ctx, _LIBDEVICE_PAIRS[name], args)
        if name == "lgamma_r":          # libdevice has no lgamma_r: the sign is ours
            return libdevice_call(ctx, "lgamma", args), lgamma_sign(ctx, args[0])
        if name not in LIBDEVICE_MATH:
            return None
        return libdevice_call(ctx, name, args)

    def atomic_scope(self, scope: str) -> str:
        return SYNC_SCOPES.get(scope, "")

    def rmw_fences(self, order: str):
        return _RMW_FENCES.get(order)

    # The entry ----------------------------------------------------------------------------
    def wrap_kernel(self, ctx: LoweringContext, fn: Function, llfn: ll.Function) -> None:
        build_entry(self, ctx.llmodule, fn, llfn)
        _mark_device_globals(ctx.llmodule)


# Helpers -----------------------------------------------------------------------------------

def _declare(ctx_or_module, name: str, ret: ll.Type, params: list) -> ll.Function:
    module = getattr(ctx_or_module, "llmodule", ctx_or_module)
    fn = module.globals.get(name)
    if fn is None:
        fn = ll.Function(module, ll.FunctionType(ret, params), name)
    return fn


def _call(ctx, name: str, ret: ll.Type, args: list) -> ll.Value:
    return ctx.builder.call(_declare(ctx, name, ret, [a.type for a in args]), args)


def _sreg32(ctx, reg: str) -> ll.Value:
    return _call(ctx, f"llvm.nvvm.read.ptx.sreg.{reg}", lt.I32, [])


def _sreg(ctx, reg: str) -> ll.Value:
    """A PTX special register as i64 (all of them are unsigned and below 2**31)."""
    return ctx.builder.zext(_sreg32(ctx, reg), lt.I64)


def _umin(b: ll.IRBuilder, x, y):
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def work_group_barrier(ctx) -> None:
    """``bar.sync 0``: every thread of the CTA, with CTA-wide memory ordering."""
    _call(ctx, "llvm.nvvm.barrier.cta.sync.aligned.all", lt.VOID, [_ZERO32])


def _shuffle(ctx, mode: str, mask, value, lane, t) -> ll.Value:
    """``shfl.sync.<mode>`` of any scalar: widened to i32 words (64-bit values as two)."""
    b = ctx.builder
    s = scalar_of(t)
    if isinstance(t, VecType):
        raise ctx.error(None, "sub-group reductions of vec values are not supported on CUDA")
    # c: the highest lane (idx, bfly, down) or the lowest (up) a lane may read
    clamp = ll.Constant(lt.I32, 0 if mode == "up" else 0x1F)

    def word(w):
        return _call(ctx, f"llvm.nvvm.shfl.sync.{mode}.i32", lt.I32, [mask, w, lane, clamp])
    bits = ll.IntType(s.bits if not s.is_bool else 1)
    raw = value if not s.is_float else b.bitcast(value, ll.IntType(s.bits))
    if s.bits == 64:
        lo = word(b.trunc(raw, lt.I32))
        hi = word(b.trunc(b.lshr(raw, ll.Constant(lt.I64, 32)), lt.I32))
        out = b.or_(b.zext(lo, lt.I64), b.shl(b.zext(hi, lt.I64), ll.Constant(lt.I64, 32)))
    elif bits.width == 32:
        out = word(raw)
    else:
        out = b.trunc(word(b.zext(raw, lt.I32)), bits)
    return b.bitcast(out, value.type) if s.is_float else out


def _combiner(ctx, op: Op):
    """The binary function of a ``group.reduce``: the IR's semantics of its SYCL function
    object (codegen/group_ops.py)."""
    return combiner(ctx, op.attrs["op"], scalar_of(op.type))


def _group_scratch(ctx) -> ll.GlobalVariable:
    g = ctx.llmodule.globals.get(_GROUP_SCRATCH)
    if g is None:
        g = ll.GlobalVariable(ctx.llmodule, ll.ArrayType(lt.I64, WARP), _GROUP_SCRATCH,
                              addrspace=3)
        g.linkage = "internal"
        g.align = 16
        _make_opaque(g)
    return g


def _make_opaque(g: ll.GlobalVariable) -> None:
    """Type ``g``'s address as an opaque pointer: llvmlite types a global's pointer by its
    contents and refuses to store anything else through it (LLVM 22 has only ``ptr``)."""
    g.type = ll.PointerType(addrspace=g.addrspace)


def _lower_group_reduce(ctx, op):
    value = truth_value(ctx, op.attrs["op"], op.type, ctx.get(op.operands[0]))
    if op.attrs["scope"] == "work_group":
        return ctx.lowering.work_group_reduce(ctx, op, value)
    return ctx.lowering.sub_group_reduce(ctx, op, value)


def _lower_group_broadcast(ctx, op):
    """A sub-group: ``shfl.sync.idx``; a work-group: one shared slot between barriers."""
    b, t = ctx.builder, op.type
    value, at = ctx.get(op.operands[0]), ctx.get(op.operands[1])
    low = ctx.lowering
    if op.attrs["scope"] == "sub_group":
        return _shuffle(ctx, "idx", low._member_mask(ctx), value, b.trunc(at, lt.I32), t)
    slot = _group_scratch(ctx)
    work_group_barrier(ctx)              # an earlier use may still read the slot
    lid = low.work_item(ctx, "local_linear_id", None)
    with b.if_then(b.icmp_unsigned("==", lid, at)):
        ctx.store(value, slot, t, align=1)
    work_group_barrier(ctx)
    return ctx.load(slot, t, align=1)


_SHFL_MODES = {"idx": "idx", "xor": "bfly", "down": "down", "up": "up"}


def _lower_group_shuffle(ctx, op):
    """``shfl.sync.{idx,bfly,down,up}`` over the sub-group's lanes; a lane outside the
    sub-group reads its own value (SYCL leaves it unspecified)."""
    b = ctx.builder
    value, k = ctx.get(op.operands[0]), b.trunc(ctx.get(op.operands[1]), lt.I32)
    return _shuffle(ctx, _SHFL_MODES[op.attrs["mode"]], ctx.lowering._member_mask(ctx), value,
                    k, op.type)


def _lower_group_scan(ctx, op):
    """A warp scan (``shfl.sync.up`` steps of 1, 2, 4, 8, 16); a work-group adds the
    totals of the warps before it from shared memory."""
    b, t, low = ctx.builder, op.type, ctx.lowering
    if isinstance(t, VecType):
        raise ctx.error(op, "scans of vec values are not supported on CUDA")
    combine, kind = _combiner(ctx, op), op.attrs["op"]
    mask = low._member_mask(ctx)
    lane = b.trunc(_sreg(ctx, "laneid"), lt.I32)
    acc = truth_value(ctx, kind, t, ctx.get(op.operands[0]))
    for step in (1, 2, 4, 8, 16):
        other = _shuffle(ctx, "up", mask, acc, ll.Constant(lt.I32, step), t)
        has = b.icmp_unsigned(">=", lane, ll.Constant(lt.I32, step))
        acc = b.select(has, combine(other, acc), acc)
    inclusive, ident = acc, group_identity(ctx, kind, t)
    part = inclusive
    if not op.attrs["inclusive"]:
        before = _shuffle(ctx, "up", mask, inclusive, ll.Constant(lt.I32, 1), t)
        part = b.select(b.icmp_unsigned("==", lane, _ZERO32), ident, before)
    if op.attrs["scope"] == "sub_group":
        return part
    slots = _group_scratch(ctx)
    mt = ctx.mtype(t)
    work_group_barrier(ctx)
    warp = b.trunc(low.sub_group(ctx, "group_id"), lt.I32)
    last = b.trunc(b.sub(low.sub_group(ctx, "local_range"), ll.Constant(lt.I64, 1)), lt.I32)
    with b.if_then(b.icmp_unsigned("==", lane, last)):
        ctx.store(inclusive, b.gep(slots, [warp], source_etype=mt), t, align=1)
    work_group_barrier(ctx)
    prefix = fold_slots(ctx, slots, t, _ZERO32, warp, ident, combine, 1, "wg.prefix")
    return combine(prefix, part)


def _lower_dg_addr(ctx, op):
    """The shared rule, with the global's address typed opaque so stores of a field
    through ``ptr.field`` type-check in llvmlite."""
    g = lower_dg_addr(ctx, op)
    _make_opaque(g)
    return g


def _lower_pow(ctx, op):
    """Float ``a ** b`` through ``__nv_pow(f)`` (``llvm.pow`` has no NVPTX lowering);
    integer powers use the shared rule."""
    from ...codegen.rules_scalar import _coerce, lower_pow
    if not scalar_of(op.type).is_float:
        return lower_pow(ctx, op)
    return libdevice_call(ctx, "pow", list(_coerce(ctx, op)))


def _ldexp(ctx, args: list) -> ll.Value | None:
    x = args[0]
    if isinstance(x.type, ll.VectorType):
        return per_lane(ctx, lambda *xs: _ldexp(ctx, list(xs)), args)
    if not isinstance(x.type, (ll.FloatType, ll.DoubleType)):
        return None
    symbol = "__nv_ldexpf" if isinstance(x.type, ll.FloatType) else "__nv_ldexp"
    return _call(ctx, symbol, x.type, args)


def libdevice_call(ctx, name: str, args: list) -> ll.Value:
    """``__nv_<name>f`` for f32, ``__nv_<name>`` for f64, f16 through f32; vec values
    element by element."""
    b, ty = ctx.builder, args[0].type
    if isinstance(ty, ll.VectorType):
        return per_lane(ctx, lambda *xs: libdevice_call(ctx, name, list(xs)), args)
    if isinstance(ty, ll.HalfType):
        wide = [b.fpext(a, ll.FloatType()) for a in args]
        return b.fptrunc(libdevice_call(ctx, name, wide), ty)
    symbol = f"__nv_{name}f" if isinstance(ty, ll.FloatType) else f"__nv_{name}"
    return _call(ctx, symbol, ty, args)


class _ExternallyInitialized(lt.AttributedGlobal):
    """llvmlite has no ``externally_initialized`` flag; it goes right before ``global``."""

    def descr(self, buf):
        start = len(buf)
        super().descr(buf)
        buf[start:] = ["".join(buf[start:]).replace("global ", "externally_initialized global ", 1)]


def _mark_device_globals(llmodule: ll.Module) -> None:
    for g in llmodule.global_values:
        if (isinstance(g, ll.GlobalVariable) and g.name.startswith("__pysycl_dg_")
                and not isinstance(g, _ExternallyInitialized)):
            g.__class__ = _ExternallyInitialized


def _rename(llmodule: ll.Module, fn: ll.Function, new: str) -> None:
    """Give a defined function a new symbol (llvmlite keeps names in module.globals and
    the module scope; nothing refers to a kernel by name yet)."""
    old = fn.name
    del llmodule.globals[old]
    llmodule.scope._useset.discard(old)
    fn.name = new
    llmodule.globals[new] = fn


def _local_memory(llmodule: ll.Module) -> ll.GlobalVariable:
    g = llmodule.globals.get(LOCAL_MEMORY_SYMBOL)
    if g is None:
        g = ll.GlobalVariable(llmodule, ll.ArrayType(lt.I8, 0), LOCAL_MEMORY_SYMBOL, addrspace=3)
        g.linkage = "external"
        g.align = 16
        _make_opaque(g)
    return g


def launch_bounds(fn: Function) -> LaunchBounds:
    """Kernel properties -> PTX launch bounds (SYCL order; LaunchBounds reverses)."""
    def ints(key):
        text = fn.properties.get(key)
        return tuple(int(x) for x in str(text).split(",") if x.strip()) if text else None
    sg = ints("sycl-sub-group-size")
    if sg and sg != (WARP,):
        raise exception(errc.kernel_not_supported, f"kernel {fn.name!r} requires sub-group "
                        f"size {sg[0]}; CUDA sub-groups are warps of {WARP}")
    reqd, most = ints("sycl-work-group-size"), ints("sycl-max-work-group-size")
    linear = ints("sycl-max-linear-work-group-size")
    if most is None and linear:
        most = (linear[0],)   # .maxntid with one number bounds the linear size
    return LaunchBounds(reqd_work_group_size=reqd, max_work_group_size=most)


def entry_param_types(lowering: TargetLowering, fn: Function) -> list[tuple[ll.Type, str]]:
    """The ``ptx_kernel``'s parameters: (type, extra attribute) per LLVM parameter."""
    out = []
    for p in fn.params:
        types = param_types(p, True, lowering)
        if isinstance(p.type, LocalAccessorType):
            out.append((lt.I32, ""))                         # offset into the shared buffer
            out += [(t, "") for t in types[1:]]
        elif types and lt.is_aggregate(p.type):
            mt = lt.memory_type(p.type, lowering.addrspaces)
            out.append((types[0], f"byval({mt})"))
        else:
            out += [(t, "") for t in types]
    out.append((lt.pointer("global", lowering.addrspaces), ""))   # spec-constant buffer
    return out


def build_entry(lowering: CudaLowering, llmodule: ll.Module, fn: Function,
                body: ll.Function) -> ll.Function:
    """``define ptx_kernel void @<kernel>(<CUDA ABI>)`` calling ``@<kernel>.body``."""
    name = ptx_symbol(body.name)
    _rename(llmodule, body, name + _BODY_SUFFIX)
    specs = entry_param_types(lowering, fn)
    entry = ll.Function(llmodule, ll.FunctionType(lt.VOID, [t for t, _ in specs]), name)
    entry.calling_convention = "ptx_kernel"
    for attr in body.attributes:                       # the kernel's "sycl-*" properties
        if attr.startswith('"'):
            set.add(entry.attributes, attr)
    bounds = launch_bounds(fn).function_attributes()
    for attr in bounds.split(" ") if bounds else ():
        set.add(entry.attributes, attr)
    b = ll.IRBuilder(entry.append_basic_block("entry"))
    args, i = [], 0
    for p in fn.params:
        n = len(param_types(p, True, lowering))
        for k in range(n):
            arg, inner = entry.args[i], body.args[i]
            arg.name = inner.name
            extra = specs[i][1]
            if extra:
                set.add(arg.attributes, extra)
                arg.attributes.align = max(p.type.align, 1)
            else:
                for a in inner.attributes:
                    set.add(arg.attributes, a)
                if inner.attributes.align and isinstance(arg.type, ll.PointerType):
                    arg.attributes.align = inner.attributes.align
            if isinstance(p.type, LocalAccessorType) and k == 0:
                arg = b.gep(_local_memory(llmodule), [arg], source_etype=lt.I8)
            args.append(arg)
            i += 1
    entry.args[i].name = body.args[i].name
    args.append(entry.args[i])
    b.call(body, args)
    b.ret_void()
    return entry


__all__ = ["CudaLowering", "build_entry", "entry_param_types",
           "launch_bounds", "libdevice_call", "work_group_barrier",
           "SYNC_SCOPES", "LIBDEVICE_MATH", "ScalarType"]
