"""Rules for named slots, aggregates, pointers, accessors, device globals,
specialization constants and atomics."""
from __future__ import annotations

import hashlib

import numpy as np
from llvmlite import ir as ll

from ..detail.symbols import device_global_symbol, llvm_name
from ..ir.core import Op
from ..ir.types import ArrayType, ScalarType, StructType, TupleType, Type, VecType
from . import debug_checks
from . import types as lt
from .context import LoweringContext, VarSlot, rule
from .rules_scalar import const_from_bytes, scalar_of, splat
from .target_lowering import FAILURE_ORDERINGS, ORDERINGS


# Named slots (Python locals) -----------------------------------------------------------
def declare_var(ctx: LoweringContext, name: str, t: Type, per_item: bool = False) -> VarSlot:
    """The slot ``name``, created on first declaration. Per-item slots (work-group
    fission) get one element per work-item: an alloca of the group's size in the entry
    block, so each call of the group function gets fresh storage."""
    slot = ctx.vars.get(name)
    if slot is not None and slot.type == t and slot.per_item == per_item:
        return slot
    count = ctx.lowering.per_item_count(ctx) if per_item else None
    slot = VarSlot(ctx.alloca(ctx.mtype(t), count, name=llvm_name(name)), t, per_item)
    ctx.vars[name] = slot
    return slot


def slot_address(ctx: LoweringContext, op: Op) -> tuple[ll.Value, Type]:
    return var_address(ctx, op.attrs["name"], op)


def var_address(ctx: LoweringContext, name: str, op: Op) -> tuple[ll.Value, Type]:
    """Address of slot ``name`` (this work-item's element for per-item slots)."""
    slot = ctx.vars.get(name)
    if slot is None:
        raise ctx.error(op, f"local variable {name!r} is used before its declaration")
    if not slot.per_item:
        return slot.ptr, slot.type
    index = getattr(ctx.lowering, "per_item_index", None)   # native CPU strips
    lin = index(ctx) if index else ctx.lowering.work_item(ctx, "local_linear_id", None)
    return lt.gep(ctx.builder, slot.ptr, [lin], ctx.mtype(slot.type), inbounds=True), slot.type


@rule("var")
def lower_var(ctx, op):
    declare_var(ctx, op.attrs["name"], op.attrs["type"], bool(op.attrs.get("per_item")))
    if "usm_root" in op.attrs:   # checked builds (passes/bounds_checks)
        ctx.var_roots[op.attrs["name"]] = op.attrs["usm_root"]


@rule("var.load")
def lower_var_load(ctx, op):
    ptr, t = slot_address(ctx, op)
    return ctx.load(ptr, t)


@rule("var.store")
def lower_var_store(ctx, op):
    ptr, t = slot_address(ctx, op)
    ctx.store(ctx.get(op.operands[0]), ptr, t)


@rule("var.addr")
def lower_var_addr(ctx, op):
    return slot_address(ctx, op)[0]


# Aggregates ------------------------------------------------------------------------------
def _undef(ctx, t: Type):
    return ll.Constant(ctx.vtype(t), ll.Undefined)


@rule("struct.make")
def lower_struct_make(ctx, op):
    agg = _undef(ctx, op.type)
    for i, v in enumerate(op.operands):
        idx, ft = lt.field_index(op.type, i)
        agg = ctx.builder.insert_value(agg, ctx.to_memory(ctx.get(v), ft), idx)
    return agg


@rule("struct.get")
def lower_struct_get(ctx, op):
    idx, ft = lt.field_index(op.operands[0].type, op.attrs["field"])
    return ctx.to_value(ctx.builder.extract_value(ctx.get(op.operands[0]), idx), ft)


@rule("struct.insert")
def lower_struct_insert(ctx, op):
    idx, ft = lt.field_index(op.operands[0].type, op.attrs["field"])
    s, v = ctx.operands(op)
    return ctx.builder.insert_value(s, ctx.to_memory(v, ft), idx)


@rule("array.make")
def lower_array_make(ctx, op):
    agg = _undef(ctx, op.type)
    for i, v in enumerate(op.operands):
        agg = ctx.builder.insert_value(agg, ctx.to_memory(ctx.get(v), op.type.elem), i)
    return agg


@rule("array.get")
def lower_array_get(ctx, op):
    arr, idx = op.operands
    elem = arr.type.elem
    if idx.owner is not None and idx.owner.name == "const":
        return ctx.to_value(ctx.builder.extract_value(ctx.get(arr), int(idx.owner.attrs["value"])), elem)
    # A dynamic index needs memory; SROA turns this back into selects when it can.
    tmp = ctx.alloca(ctx.mtype(arr.type))
    ctx.builder.store(ctx.get(arr), tmp)
    p = lt.gep(ctx.builder, tmp, [ll.Constant(lt.I64, 0), index64(ctx, idx)], ctx.mtype(arr.type), inbounds=True)
    return ctx.load(p, elem)


@rule("vec.make")
def lower_vec_make(ctx, op):
    vals = ctx.operands(op)
    if len(vals) == 1 and op.type.n > 1:
        return splat(ctx, vals[0], op.type)
    vec = _undef(ctx, op.type)
    for i, v in enumerate(vals):
        vec = ctx.builder.insert_element(vec, v, ll.Constant(lt.I32, i))
    return vec


@rule("vec.get")
def lower_vec_get(ctx, op):
    vec, idx = ctx.operands(op)
    return ctx.builder.extract_element(vec, idx)


@rule("tuple.make")
def lower_tuple_make(ctx, op):
    agg = _undef(ctx, op.type)
    for i, v in enumerate(op.operands):
        if lt.has_storage(v.type):
            agg = ctx.builder.insert_value(agg, ctx.get(v), i)
    return agg


@rule("tuple.get")
def lower_tuple_get(ctx, op):
    return ctx.builder.extract_value(ctx.get(op.operands[0]), int(op.attrs["index"]))


# Pointers ---------------------------------------------------------------------------------
def index64(ctx, v) -> ll.Value:
    """An integer IR value widened to i64 by its own signedness (GEP sign-extends)."""
    x, s = ctx.get(v), scalar_of(v.type)
    if s.bits >= 64:
        return x
    return ctx.builder.sext(x, lt.I64) if s.is_signed else ctx.builder.zext(x, lt.I64)


@rule("ptr.offset")
def lower_ptr_offset(ctx, op):
    p, i = op.operands
    return lt.gep(ctx.builder, ctx.get(p), [index64(ctx, i)], ctx.mtype(p.type.pointee))


@rule("ptr.diff")
def lower_ptr_diff(ctx, op):
    """``(p - q) / sizeof(T)``: exact, both point into one allocation."""
    p, q = (ctx.builder.ptrtoint(ctx.get(v), lt.I64) for v in op.operands)
    size = ll.Constant(lt.I64, op.operands[0].type.pointee.size)
    return ctx.builder.sdiv(ctx.builder.sub(p, q), size, flags=["exact"])


@rule("ptr.elem")
def lower_ptr_elem(ctx, op):
    p, i = op.operands
    base = ctx.get(p)
    if isinstance(p.type.pointee, ArrayType) and debug_checks.enabled(ctx, "bounds"):
        n, k = ll.Constant(lt.I64, p.type.pointee.n), index64(ctx, i)
        debug_checks.check(ctx, op, ctx.builder.icmp_unsigned("<", k, n), "bounds",
                           "a fixed-size array", k, n)
    if isinstance(p.type.pointee, VecType):
        # llvmlite cannot GEP into a vector type (LLVM discourages it too): index the
        # elements through a pointer to the element type.
        elem = ctx.mtype(p.type.pointee.elem)
        if not getattr(base.type, "is_opaque", False):
            base = ctx.builder.bitcast(base, elem.as_pointer(base.type.addrspace))
        return lt.gep(ctx.builder, base, [index64(ctx, i)], elem)
    return lt.gep(ctx.builder, base, [ll.Constant(lt.I64, 0), index64(ctx, i)], ctx.mtype(p.type.pointee))


@rule("ptr.field")
def lower_ptr_field(ctx, op):
    (p,) = op.operands
    idx, _ = lt.field_index(p.type.pointee, op.attrs["field"])
    return lt.gep(ctx.builder, ctx.get(p), [ll.Constant(lt.I32, 0), ll.Constant(lt.I32, idx)], ctx.mtype(p.type.pointee))


@rule("load")
def lower_load(ctx, op):
    (p,) = op.operands
    return ctx.load(ctx.get(p), p.type.pointee)


@rule("store")
def lower_store(ctx, op):
    p, v = op.operands
    ctx.store(ctx.get(v), ctx.get(p), p.type.pointee)


# Accessors --------------------------------------------------------------------------------
@rule("acc.ptr")
def lower_acc_ptr(ctx, op):
    acc = ctx.get(op.operands[0])
    idx = [index64(ctx, v) for v in op.operands[1:]]
    if len(idx) != len(acc.ranges):
        raise ctx.error(op, f"accessor of {len(acc.ranges)} dimensions indexed with {len(idx)}")
    bld = ctx.builder   # (checked builds check the indices first: passes/bounds_checks)
    if acc.offsets is not None:   # a ranged accessor's indices start at its offset
        idx = [bld.add(i, o) for i, o in zip(idx, acc.offsets)]
    lin = idx[0]
    for d in range(1, len(idx)):  # row-major over the memory range (SYCL 4.7.6.9)
        lin = bld.add(bld.mul(lin, acc.ranges[d]), idx[d])
    lin = bld.add(lin, acc.offset)
    return lt.gep(bld, acc.ptr, [lin], ctx.mtype(acc.elem), inbounds=True)


@rule("ptr.extent")
def lower_ptr_extent(ctx, op):
    """Elements from a ``global_ptr`` parameter to the end of its memory: the hidden
    byte count of checked builds (``codegen/module.py``) over the element size (signed:
    a negative count, a pointer past its memory, fails every check)."""
    (p,) = op.operands
    nbytes = ctx.extents.get(p)
    if nbytes is None:
        raise ctx.error(op, f"ptr.extent of {p!r}, which is not a global_ptr parameter of "
                            "a checked build")
    size = max(p.type.pointee.size, 1)
    return ctx.builder.sdiv(nbytes, ll.Constant(lt.I64, size))


@rule("acc.range")
def lower_acc_range(ctx, op):
    acc = ctx.get(op.operands[0])
    return (acc.access or acc.ranges)[int(op.attrs["dim"])]


@rule("acc.offset")
def lower_acc_offset(ctx, op):
    return ctx.get(op.operands[0]).offsets[int(op.attrs["dim"])]


@rule("acc.base")
def lower_acc_base(ctx, op):
    """The start of the accessor's buffer (SYCL 2020 get_multi_ptr: not moved by a
    ranged accessor's offset)."""
    acc = ctx.get(op.operands[0])
    return lt.gep(ctx.builder, acc.ptr, [acc.offset], ctx.mtype(acc.elem), inbounds=True)


# Device globals and specialization constants ------------------------------------------------
def device_global(ctx: LoweringContext, unique_id: str, t: Type,
                  initial: bytes = b"") -> ll.GlobalVariable:
    name = device_global_symbol(unique_id)
    if name in ctx.llmodule.globals:
        return ctx.llmodule.globals[name]
    g = lt.AttributedGlobal(ctx.llmodule, ctx.mtype(t), name,
                            addrspace=ctx.lowering.addrspaces["global"])
    # T's default value (ext device_global: zero, or constexpr-initialised).
    g.initializer = (const_from_bytes(ctx, t, initial) if initial
                     else ll.Constant(ctx.mtype(t), None))
    # Opaque like every other pointer here, so element/field GEPs and stores type-check.
    g.type = lt.pointer("global", ctx.lowering.addrspaces)
    g.align = max(t.align, 8)
    linkage = ctx.lowering.device_global_linkage()
    if linkage:
        g.linkage = linkage
    return g


@rule("dg.addr")
def lower_dg_addr(ctx, op):
    uid = op.attrs["id"]
    decl = ctx.module.device_global(uid)
    if decl is None:
        return device_global(ctx, uid, op.type.pointee)
    return device_global(ctx, uid, decl.type, decl.initial)


@rule("const.table")
def lower_const_table(ctx, op):
    """A private constant global per distinct table (named by its contents, so equal
    tables used twice share one), in the target's constant address space."""
    t, data = op.type.pointee, bytes(op.attrs["data"])
    name = "__pysycl_const_" + hashlib.sha256(str(t).encode() + b"\0" + data).hexdigest()[:24]
    if name in ctx.llmodule.globals:
        return ctx.llmodule.globals[name]
    g = ll.GlobalVariable(ctx.llmodule, ctx.mtype(t), name,
                          addrspace=ctx.lowering.addrspaces["constant"])
    g.initializer = _table_constant(ctx, t, data)
    g.global_constant = True
    g.linkage = "private"
    g.unnamed_addr = True
    g.align = max(t.align, 16)
    g.type = lt.pointer("constant", ctx.lowering.addrspaces)
    return g


def _table_constant(ctx, t: Type, data: bytes) -> ll.Constant:
    # Scalar arrays (nested or not) from one NumPy view: per-element byte slicing is
    # slow for a 64 KiB table.
    shape, leaf = [], t
    while isinstance(leaf, ArrayType):
        shape.append(leaf.n)
        leaf = leaf.elem
    if not shape or not isinstance(leaf, ScalarType):
        return const_from_bytes(ctx, t, data)
    values = np.frombuffer(data, dtype=leaf.dtype).reshape(shape)
    if values.dtype == np.bool_:
        values = values.astype(np.uint8)
    return _nested_constant(ctx, t, values.tolist())


def _nested_constant(ctx, t: Type, values) -> ll.Constant:
    if isinstance(t, ArrayType):
        return ll.Constant(ctx.mtype(t), [_nested_constant(ctx, t.elem, v) for v in values])
    return ll.Constant(ctx.mtype(t), values)


@rule("spec.load")
def lower_spec_load(ctx, op):
    # Align 1: the buffer packs constants back to back (SYCL 2020 4.9.5, DPC++ layout), so a value may
    # sit at any offset.
    p = ctx.builder.gep(ctx.spec_buffer, [ll.Constant(lt.I64, int(op.attrs["offset"]))],
                        source_etype=lt.I8)
    return ctx.load(p, op.type, align=1)


@rule("spec.native")
def lower_spec_native(ctx, op):
    return ctx.lowering.spec_native(ctx, op)


@rule("spec.get")
def lower_spec_get(ctx, op):
    raise ctx.error(op, f"specialization constant {op.attrs['id']!r} was not lowered before "
                        "code generation (run the spec-constant lowering pass after link)")


# Atomics -----------------------------------------------------------------------------------
_RMW_INT = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor", "xchg": "xchg"}
_RMW_FLOAT = {"add": "fadd", "sub": "fsub", "min": "fmin", "max": "fmax", "xchg": "xchg"}


@rule("atomic.rmw")
def lower_atomic_rmw(ctx, op):
    p, v = op.operands
    s, kind = scalar_of(v.type), op.attrs["op"]
    if s.is_float:
        llop = _RMW_FLOAT.get(kind)
    elif kind in ("min", "max"):
        llop = kind if s.is_signed else "u" + kind
    else:
        llop = _RMW_INT.get(kind)
    if llop is None:
        raise ctx.error(op, f"atomic {kind} is not defined on {s}")
    if getattr(p.type, "space", None) == "local" and \
            getattr(ctx.lowering, "work_group_on_one_thread", False):
        return _plain_rmw(ctx, llop, ctx.get(p), ctx.get(v), ctx.vtype(s))
    order = op.attrs["order"]
    fences = ctx.lowering.rmw_fences(order)
    if fences is None:
        return ctx.builder.atomic_rmw(llop, ctx.get(p), ctx.get(v), ORDERINGS[order])
    before, after = fences
    if before:
        ctx.builder.fence(before)
    result = ctx.builder.atomic_rmw(llop, ctx.get(p), ctx.get(v), ORDERINGS["relaxed"])
    if after:
        ctx.builder.fence(after)
    return result


def _plain_rmw(ctx, llop: str, ptr, value, vt):
    """An RMW on local memory of a target that runs each work-group on one thread (the
    native CPU): no other thread can see the memory, so it needs no atomicity: a plain
    load, op, store, which LLVM may also keep in registers or vectorise."""
    b = ctx.builder
    old = b.load(ptr, typ=vt)
    # Items may update one location (that is why it was atomic): never mark these as
    # free of cross-item dependences (native lowering's parallel work-item loops).
    old.pysycl_atomic = True
    if llop == "xchg":
        new = value
    elif llop in ("add", "sub", "and", "or", "xor"):
        new = getattr(b, {"and": "and_", "or": "or_"}.get(llop, llop))(old, value)
    elif llop in ("fadd", "fsub"):
        new = getattr(b, llop)(old, value)
    elif llop in ("min", "max", "umin", "umax"):
        pred = {"min": "<", "max": ">", "umin": "<", "umax": ">"}[llop]
        cmp = b.icmp_signed if llop in ("min", "max") else b.icmp_unsigned
        new = b.select(cmp(pred, value, old), value, old)
    else:  # fmin / fmax: minnum / maxnum, as atomicrmw fmin / fmax
        name = {"fmin": "llvm.minnum", "fmax": "llvm.maxnum"}[llop]
        fn = ctx.llmodule.declare_intrinsic(name, [vt], ll.FunctionType(vt, [vt, vt]))
        new = b.call(fn, [old, value])
    b.store(new, ptr).pysycl_atomic = True
    return old


@rule("atomic.cmpxchg")
def lower_atomic_cmpxchg(ctx, op):
    p, expected, desired = op.operands
    s, bld = scalar_of(expected.type), ctx.builder
    e, d = ctx.get(expected), ctx.get(desired)
    if s.is_float:  # cmpxchg takes integers: compare the bit patterns (like C++ atomic_ref)
        it = ll.IntType(s.bits)
        e, d = bld.bitcast(e, it), bld.bitcast(d, it)
    order = ORDERINGS[op.attrs["order"]]
    pair = bld.cmpxchg(ctx.get(p), e, d, order, FAILURE_ORDERINGS[order])
    old = bld.extract_value(pair, 0)
    return bld.bitcast(old, ctx.vtype(s)) if s.is_float else old


@rule("atomic.fence")
def lower_atomic_fence(ctx, op):
    """A relaxed fence orders nothing; where a work-group runs on one thread (the native
    CPU) a fence within the group has no other thread to order against. Otherwise an
    LLVM fence at system scope: at least as strong as any ``scope`` asked for."""
    order = op.attrs["order"]
    local = op.attrs["scope"] in ("work_item", "sub_group", "work_group")
    if order == "relaxed" or local and getattr(ctx.lowering, "work_group_on_one_thread", False):
        return None
    ctx.builder.fence(ORDERINGS[order])
    return None


@rule("atomic.load")
def lower_atomic_load(ctx, op):
    (p,) = op.operands
    order = {"release": "relaxed", "acq_rel": "acquire"}.get(op.attrs["order"], op.attrs["order"])
    return ctx.builder.load_atomic(ctx.get(p), ORDERINGS[order], op.type.size,
                                   typ=ctx.mtype(op.type))


@rule("atomic.store")
def lower_atomic_store(ctx, op):
    p, v = op.operands
    order = {"acquire": "relaxed", "acq_rel": "release"}.get(op.attrs["order"], op.attrs["order"])
    ptr, val = ctx.get(p), ctx.get(v)
    if getattr(ptr.type, "is_opaque", False):
        # llvmlite's store_atomic reads ptr.type.pointee, which opaque pointers lack.
        st = ll.instructions.StoreAtomicInstr(ctx.builder.block, val, ptr, ORDERINGS[order],
                                              v.type.size)
        ctx.builder._insert(st)
        return
    ctx.builder.store_atomic(val, ptr, ORDERINGS[order], v.type.size)


__all__ = ["device_global_symbol", "declare_var", "index64"]
