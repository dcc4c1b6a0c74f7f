"""Run-time checks of debug builds (``PYSYCL_DEBUG``): ``assert`` and
accessor bounds checks.

A kernel entry has no error channel (the native entry ABI returns void; SPIR-V and PTX
kernels cannot raise), so a failed check stores the address of a constant C string
``"file:line: message"`` into the exported i64 :data:`FAIL_SYMBOL`. The first failure
wins (a compare-and-swap from zero). The native CPU executor reads the flag after the
launch, clears it and raises ``sycl.exception(errc.kernel)`` with the message.

Which checks are on is ``TargetLowering.debug`` (the set from ``config.debug_checks()``):
``"assert"`` and ``"bounds"``.

>>> FAIL_SYMBOL
'__pysycl_debug_fail'
"""
from __future__ import annotations

from llvmlite import ir as ll

from . import types as lt

FAIL_SYMBOL = "__pysycl_debug_fail"


def enabled(ctx, check: str) -> bool:
    debug = ctx.lowering.debug
    return bool(debug) and (debug is True or check in debug)


def fail_flag(ctx) -> ll.GlobalVariable:
    flag = ctx.llmodule.globals.get(FAIL_SYMBOL)
    if flag is None:
        flag = ll.GlobalVariable(ctx.llmodule, lt.I64, FAIL_SYMBOL)
        flag.initializer = ll.Constant(lt.I64, 0)
        flag.align = 8
    return flag


def _message(ctx, text: str) -> ll.Value:
    data = bytearray(text.encode("utf-8") + b"\0")
    ty = ll.ArrayType(lt.I8, len(data))
    name = f"__pysycl_debug_msg.{len(ctx.llmodule.globals)}"
    g = ll.GlobalVariable(ctx.llmodule, ty, name)
    g.global_constant = True
    g.linkage = "private"
    g.initializer = ll.Constant(ty, data)
    return ctx.builder.ptrtoint(g, lt.I64)


def location(op) -> str:
    loc = op.loc
    if loc is None or not getattr(loc, "file", None):
        return "<kernel>"
    return f"{loc.file}:{loc.line}"


def check(ctx, op, ok: ll.Value, message: str) -> None:
    """Record ``message`` at ``op``'s source location unless ``ok`` (i1) holds."""
    bld = ctx.builder
    with bld.if_then(bld.not_(ok), likely=False):
        text = _message(ctx, f"{location(op)}: {message}")
        bld.cmpxchg(fail_flag(ctx), ll.Constant(lt.I64, 0), text, "monotonic", "monotonic")


__all__ = ["FAIL_SYMBOL", "check", "enabled", "fail_flag", "location"]
