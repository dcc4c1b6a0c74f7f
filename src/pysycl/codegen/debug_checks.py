"""Run-time checks of debug builds (``PYSYCL_DEBUG``): ``assert``,
bounds checks (the ``check`` ops of ``passes/bounds_checks``) and fixed-array indices.

A kernel has no error channel (it returns nothing, and SPIR-V and PTX kernels cannot
raise), so a failed check writes the failure record of ``ir/check_record`` (a global the
runtime reads after the launch the same way on every backend): the failing work-item
calls the module's out-of-line ``__pysycl_check_fail(site, index, extent)`` (cold, so a
vectoriser sees one call on a rare path, not atomics), where the first failure claims
the record's site with a compare-and-swap and writes the index and extent it saw. The work-item then stops (a kernel returns; a device function returns zero
to its caller, whose own accesses are checked too), so the access it guarded is never
made. A bounds build always has the record, under ``BOUNDS_RECORD_SYMBOL``.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ..ir.check_record import BOUNDS_RECORD_SYMBOL, RECORD_SYMBOL, SITES_SYMBOL
from . import types as lt


def enabled(ctx, check: str) -> bool:
    return bounds_build(ctx.lowering) if check == "bounds" else _has(ctx.lowering, check)


def _has(lowering, check: str) -> bool:
    debug = lowering.debug
    return bool(debug) and (debug is True or check in debug)


def bounds_build(lowering) -> bool:
    """Whether ``lowering`` makes a bounds-checked build (hidden extent arguments)."""
    return _has(lowering, "bounds")


class _Sites:
    """The record and site table of one LLVM module."""

    def __init__(self, llmodule: ll.Module, lowering):
        space = lowering.addrspaces.get("global", 0)
        name = BOUNDS_RECORD_SYMBOL if bounds_build(lowering) else RECORD_SYMBOL
        ty = ll.ArrayType(lt.I64, 4)
        self.record = ll.GlobalVariable(llmodule, ty, name, addrspace=space)
        self.record.align = 8
        self.record_type = ty
        # Opaque, like every other pointer the rules build on.
        self.record.type = lt.pointer("global", lowering.addrspaces)
        self.space = space
        self.texts: list[bytes] = []
        self.index: dict[bytes, int] = {}

    def fail_function(self, ctx) -> ll.Function:
        """``void fail(site, index, extent)``: claims the record (first failure wins) and
        writes index and extent. Out of line and cold, so the checks' failure paths are
        one call each and a vectoriser sees no atomics in the kernel body."""
        fn = getattr(self, "_fail", None)
        if fn is not None:
            return fn
        llmodule = ctx.llmodule
        fn = ll.Function(llmodule, ll.FunctionType(lt.VOID, [lt.I64, lt.I64, lt.I64]),
                         "__pysycl_check_fail")
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.attributes.add("cold")
        if ctx.lowering.helper_calling_convention:
            fn.calling_convention = ctx.lowering.helper_calling_convention
        site, index, extent = fn.args
        b = ll.IRBuilder(fn.append_basic_block("entry"))
        zero = ll.Constant(lt.I64, 0)
        rec = self.record
        pair = b.cmpxchg(rec, zero, site, "monotonic", "monotonic")
        with b.if_then(b.extract_value(pair, 1)):
            for slot, value in ((1, index), (2, extent)):
                p = b.gep(rec, [zero, ll.Constant(lt.I32, slot)], inbounds=True,
                          source_etype=self.record_type)
                b.store(value, p, align=8)
        b.ret_void()
        self._fail = fn
        return fn

    def site(self, text: str) -> int:
        raw = text.replace("\0", " ").encode("utf-8", "replace") + b"\0"
        n = self.index.get(raw)
        if n is None:
            self.texts.append(raw)
            n = self.index[raw] = len(self.texts)
        return n

    def finish(self, llmodule: ll.Module) -> None:
        table = b"".join(self.texts) or b"\0"
        ty = ll.ArrayType(lt.I8, len(table))
        g = ll.GlobalVariable(llmodule, ty, SITES_SYMBOL, addrspace=self.space)
        g.initializer = ll.Constant(ty, bytearray(table))
        g.align = 8
        self.record.initializer = ll.Constant(self.record_type, [
            ll.Constant(lt.I64, 0), ll.Constant(lt.I64, 0), ll.Constant(lt.I64, 0),
            ll.Constant(lt.I64, len(table))])


def sites(llmodule: ll.Module, lowering) -> _Sites:
    """The module's record and site table (made on first use)."""
    found = getattr(llmodule, "_pysycl_check_sites", None)
    if found is None:
        found = _Sites(llmodule, lowering)
        llmodule._pysycl_check_sites = found
    return found


def start_module(llmodule: ll.Module, lowering) -> None:
    """A bounds build always has the record (its name marks the build's ABI)."""
    if bounds_build(lowering):
        sites(llmodule, lowering)


def finish_module(llmodule: ll.Module) -> None:
    """Emit the site table and the record's initialiser, once every rule has run."""
    found = getattr(llmodule, "_pysycl_check_sites", None)
    if found is not None:
        found.finish(llmodule)


#: The size passed for a pointer whose memory is not known (a checked build's device
#: function then checks nothing through it).
UNKNOWN_BYTES = 1 << 62


def usm_root(ctx, v):
    """The pointer parameter (of this function, with a known size) that IR value ``v``
    points into: through ``ptr.offset`` and locals that ``passes/bounds_checks`` marked
    with their parameter (``usm_root``); None when unknown."""
    while v.owner is not None and v.owner.name == "ptr.offset":
        v = v.owner.operands[0]
    if v in ctx.extents:
        return v
    if v.owner is not None and v.owner.name == "var.load":
        name = ctx.var_roots.get(v.owner.attrs["name"])
        for p in ctx.function.params:
            if p.name == name and p.value in ctx.extents:
                return p.value
    return None


def bytes_after(ctx, v, ptr: ll.Value) -> ll.Value:
    """The bytes from pointer ``v`` (LLVM value ``ptr``) to the end of the memory it
    points into, passed with it to a device function (i64; may be negative, which fails
    every check there)."""
    root = usm_root(ctx, v)
    if root is None:
        return ll.Constant(lt.I64, UNKNOWN_BYTES)
    b = ctx.builder
    end = b.add(b.ptrtoint(ctx.get(root), lt.I64), ctx.extents[root])
    return b.sub(end, b.ptrtoint(ptr, lt.I64))


def location(op) -> str:
    loc = op.loc
    if loc is None or not getattr(loc, "file", None):
        return "<kernel>"
    return f"{loc.file}:{loc.line}"


def check(ctx, op, ok: ll.Value, kind: str, subject: str, index: ll.Value | None = None,
          extent: ll.Value | None = None) -> None:
    """Unless ``ok`` (i1) holds: record a failure of ``kind`` (``bounds`` or ``assert``)
    about ``subject`` at ``op``'s source location, with ``index`` and ``extent`` (i64),
    and stop the work-item (return from the function)."""
    table = sites(ctx.llmodule, ctx.lowering)
    site = table.site(f"{kind}\t{location(op)}\t{subject}")
    bld = ctx.builder
    fail, cont = ctx.block("check.fail"), ctx.block("check.ok")
    br = bld.cbranch(ok, cont, fail)
    br.set_weights([1 << 20, 1])
    bld.position_at_end(fail)
    zero = ll.Constant(lt.I64, 0)
    bld.call(table.fail_function(ctx), [ll.Constant(lt.I64, site), index or zero,
                                        extent or zero])
    rtype = ctx.llfn.return_value.type
    item_exit = getattr(ctx, "item_exit", None)   # inside a loop over work-items
    if item_exit is not None:
        bld.branch(item_exit)
    elif rtype == lt.VOID:
        bld.ret_void()
    else:
        bld.ret(ll.Constant(rtype, None))
    bld.position_at_end(cont)


__all__ = ["check", "enabled", "bounds_build", "bytes_after", "finish_module", "start_module",
           "location", "usm_root"]
