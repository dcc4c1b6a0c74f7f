"""Lower ``sycl.reducer`` parameters (SYCL 2020 4.10.6): initialise each accumulator with
the identity and combine the work-groups' results into memory.

The frontend leaves a kernel with reducers as its body plus the attribute ``reducers``
(one entry per reducer: ``name``, ``op``, ``extent``, ``strategy``, ``acc``); the body
combines into the accumulator var ``acc`` (an array of ``extent`` elements for a span
reducer). The reducer's IR parameters are ``name`` (the result in memory), ``name.identity``
and, for the last-group strategy, ``name.partials`` and ``name.count``
(frontend/signature.py). Each target gets its lowering:

* **devices** (:func:`lower_reducers`): ``acc`` is per work-item; after the body every
  work-item takes part in ``group.reduce`` (the backend's group reduction: SPIR-V group
  ops, warp shuffles) and the work-group's first work-item writes the result;
* **native CPU** (:func:`prepare_reducers_native` before work-group fission,
  :func:`finish_reducers_native` after): one work-group runs on one thread, so ``acc``
  is one var per work-group that its work-items combine into in turn (a loop LLVM
  vectorises, the adds being reassociable); the result is written at group level.

A work-group's result reaches memory by its strategy (``functional.reduction_strategy``):
``atomic``, one ``atomic.rmw`` into the result (the runtime writes the identity there
first for ``initialize_to_identity``), or, where the target accumulates
(``Target.accumulating_reductions``, passed as ``options.extra``), into
the accumulator ``partials[0]`` (one per element of a span), which holds the identity
between launches; ``last_group``, the result is stored in ``partials[group]``. Then, but
for a plain atomic, a device-scope acq_rel increment of ``count`` finds the last
work-group, which combines: the accumulator (reset to the identity) or the stored
results in group order, into the result, and resets ``count`` for the next launch. The
result's old value takes part unless ``init`` is set (an accumulating reduction's
``initialize_to_identity``; otherwise the runtime's write of the identity makes it so).
So an accumulating reduction needs nothing written before its kernel: the runtime keeps
its accumulator and counter per queue (``runtime/reduction.py``).

A ``return`` inside the body ends the work-item's part, not the kernel: returns become
exits of a one-trip loop around the body (:func:`structure_returns`), so the
combination after it is reached by every work-item.

>>> from pysycl.ir.core import Module
>>> lower_reducers(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.functional import ATOMIC_RMW
from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Op, Region
from pysycl.ir.types import BOOL, I64, U8, U32, ArrayType, IndexSpaceType, PointerType, Type

RETURN_FLAG = "ret.done"


def reducers_of(f: Function) -> list[dict]:
    return list(f.attrs.get("reducers") or ())


# Devices ----------------------------------------------------------------------------------
def lower_reducers(m: Module, options=None) -> Module:
    """SPIR-V and PTX targets: per-item accumulators and a work-group reduction."""
    accumulate = options is not None and bool(options.extra.get("accumulating_reductions"))
    for f in m.kernels:
        if f.body is not None and reducers_of(f):
            structure_returns(f)
            _insert_init(f)
            b = Builder(f.body, f.loc)
            for r in reducers_of(f):
                _finish_on_device(f, b, r, accumulate)
            f.attrs.pop("reducers")
    return m


def _finish_on_device(f: Function, b: Builder, r: dict, accumulate: bool) -> None:
    params = _params(f, r["name"])
    t = params["identity"].type
    lid = b.op("wi.local_linear_id", type=I64)
    leader = b.cmp("eq", lid, b.const(0, I64))
    totals = []
    for k, acc in _elements(f, b, r, t):
        totals.append((k, b.op("group.reduce", acc, type=t, op=r["op"], scope="work_group")))
    then, _ = b.if_(leader)
    _write_result(f, then, r, params, totals, accumulate)


def _elements(f: Function, b: Builder, r: dict, t: Type):
    """(element index, accumulator value) of every element, unrolled: a span's
    extent is a compile-time constant, and the group reductions stay at the top level
    of the kernel, where every work-item reaches them."""
    if not r["extent"]:
        yield None, b.load_var(r["acc"], t)
        return
    base = b.op("var.addr", type=PointerType(ArrayType(t, r["extent"]), "private"),
                name=r["acc"])
    for k in range(r["extent"]):
        p = b.op("ptr.elem", base, b.const(k, I64), type=PointerType(t, "private"))
        yield k, b.load(p)


# Native CPU -------------------------------------------------------------------------------
def prepare_reducers_native(m: Module, options=None) -> Module:
    """Before work-group fission: accumulators become one var per work-group
    (``per_item = false``, which fission leaves alone) and returns become loop exits."""
    for f in m.kernels:
        if f.body is not None and reducers_of(f):
            structure_returns(f)
            accs = {r["acc"] for r in reducers_of(f)}
            for op in f.body.ops:
                if op.name == "var" and op.attrs["name"] in accs:
                    op.attrs["per_item"] = False
    return m


def finish_reducers_native(m: Module, options=None) -> Module:
    """After work-group fission: the body runs in ``wg.items`` regions (one is made
    when the kernel had no barrier); group-level code initialises the accumulators
    before them and writes the work-group's results after them."""
    for f in m.kernels:
        if f.body is None or not reducers_of(f):
            continue
        ops = f.body.ops
        if not any(op.name == "wg.items" for op in ops):
            decls = [op for op in ops if op.name == "var"]
            rest = [op for op in ops if op.name != "var" and op.name != "return"]
            items = Op("wg.items", [], regions=[Region(rest)], loc=f.loc)
            f.body.ops = decls + [items]
        elif ops and ops[-1].name == "return":
            ops.pop()
        _insert_init(f)
        b = Builder(f.body, f.loc)
        for r in reducers_of(f):
            params = _params(f, r["name"])
            t = params["identity"].type
            _write_result(f, b, r, params, list(_elements(f, b, r, t)))
        f.attrs.pop("reducers")
    return m


# Shared ------------------------------------------------------------------------------------
def _params(f: Function, name: str) -> dict:
    by_name = {p.name: p.value for p in f.params}
    out = {"result": by_name[name], "identity": by_name[f"{name}.identity"]}
    for part in ("partials", "count", "init"):
        if f"{name}.{part}" in by_name:
            out[part] = by_name[f"{name}.{part}"]
    return out


def _insert_init(f: Function) -> None:
    """``acc = identity`` (every element of a span) after the leading declarations."""
    ops = f.body.ops
    at = 0
    while at < len(ops) and ops[at].name == "var":
        at += 1
    init = Region()
    b = Builder(init, f.loc)
    for r in reducers_of(f):
        ident = _params(f, r["name"])["identity"]
        if not r["extent"]:
            b.store_var(r["acc"], ident)
            continue
        t = ident.type
        base = b.op("var.addr", type=PointerType(ArrayType(t, r["extent"]), "private"),
                    name=r["acc"])
        for k in range(r["extent"]):
            b.store(b.op("ptr.elem", base, b.const(k, I64), type=PointerType(t, "private")),
                    ident)
    ops[at:at] = init.ops


def _write_result(f: Function, b: Builder, r: dict, params: dict, totals: list,
                  accumulate: bool = False) -> None:
    """Code run once per work-group that puts the group's ``totals`` (element index,
    value) into memory by the reducer's strategy (``accumulate``: an atomic one through
    the accumulator)."""
    atomic = r["strategy"] == "atomic"
    n = max(r["extent"], 1)
    if atomic:
        into = params["partials" if accumulate else "result"]
        for k, total in totals:
            b.op("atomic.rmw", _at(b, into, k), total, type=total.type,
                 op=ATOMIC_RMW[r["op"]], order="relaxed", scope="device")
        if not accumulate:
            return
    else:
        group = b.op("wi.group_linear_id", type=I64)
        for k, total in totals:
            slot = b.op("add", b.op("mul", group, b.const(n, I64), type=I64),
                        b.const(k or 0, I64), type=I64)
            b.store(b.op("ptr.offset", params["partials"], slot,
                         type=params["partials"].type),
                    _widen(b, total, params["partials"].type.pointee))
    # acq_rel: the combinations above happen before the increment (release); the last
    # group sees every group's (acquire).
    done = b.op("atomic.rmw", params["count"], b.const(1, U32), type=U32, op="add",
                order="acq_rel", scope="device")
    groups = _group_count(f, b)
    last = b.cmp("eq", b.op("cast", done, type=I64),
                 b.op("sub", groups, b.const(1, I64), type=I64))
    then, _ = b.if_(last)
    if atomic:
        _take_accumulator(then, r, params, totals)
    else:
        _combine_partials(f, then, r, params, groups, n, totals)
    then.op("atomic.store", params["count"], then.const(0, U32), order="relaxed",
            scope="device")


def _take_accumulator(b: Builder, r: dict, params: dict, totals) -> None:
    """The last work-group of an atomic reduction: each element's accumulated value goes
    into the result (combined with the result's old value unless ``init``), and the
    accumulator back to the identity for the next launch (every other group's atomic is
    done: nothing else touches it now)."""
    ident = params["identity"]
    fresh = b.cmp("ne", params["init"], b.const(0, U32))
    for k, _ in totals:
        slot = _at(b, params["partials"], k)
        value = b.load(slot)
        b.store(slot, ident)
        out = _at(b, params["result"], k)
        combined = b.combine(r["op"], b.load(out), value)
        b.store(out, b.op("select", fresh, value, combined, type=ident.type))


def _combine_partials(f: Function, b: Builder, r: dict, params: dict, groups, n: int,
                      totals) -> None:
    t = params["identity"].type
    # Bools combine as 0/1 bytes: LLVM vectorises an i1 loop into an or-reduction of
    # <N x i1> bitcast to an integer, which LLVM 22's SPIR-V backend aborts on.
    w = U8 if t == BOOL else t
    var = f"{r['name']}.final"
    g = f"{r['name']}.group"
    _declare(f, var, w)
    _declare(f, g, I64)
    for k, _ in totals:
        out = _at(b, params["result"], k)
        b.store_var(var, _widen(b, b.load(out), w))
        body = b.for_(g, b.const(0, I64), groups, b.const(1, I64), vectorize=False)
        slot = body.op("add", body.op("mul", body.load_var(g, I64), body.const(n, I64), type=I64),
                       body.const(k or 0, I64), type=I64)
        x = body.load(body.op("ptr.offset", params["partials"], slot,
                              type=params["partials"].type))
        op = _BOOL_AS_BYTES.get(r["op"], r["op"]) if t == BOOL else r["op"]
        body.store_var(var, body.combine(op, body.load_var(var, w), _widen(body, x, w)))
        b.store(out, _widen(b, b.load_var(var, w), t))


_BOOL_AS_BYTES = {"plus": "bit_or", "multiplies": "bit_and", "minimum": "bit_and",
                  "maximum": "bit_or", "logical_and": "bit_and", "logical_or": "bit_or"}


def _widen(b: Builder, v, t: Type):
    return v if v.type == t else b.op("cast", v, type=t)


def _declare(f: Function, name: str, t: Type) -> None:
    """A var at the top of ``f`` (declarations come first, as the frontend makes them)."""
    f.body.ops.insert(0, Op("var", attrs={"name": name, "type": t}, loc=f.loc))


def _at(b: Builder, ptr, k):
    return ptr if not k else b.op("ptr.offset", ptr, b.const(k, I64), type=ptr.type)


def _group_count(f: Function, b: Builder):
    dims = next((p.type.dims for p in f.params if isinstance(p.type, IndexSpaceType)
                 and p.type.kind in ("id", "item", "nd_item") and p.type.dims), 3)
    n = b.op("wi.group_range", type=I64, dim=0)
    for d in range(1, dims):
        n = b.op("mul", n, b.op("wi.group_range", type=I64, dim=d), type=I64)
    return n


# Returns ----------------------------------------------------------------------------------
def structure_returns(f: Function) -> None:
    """Make every ``return`` of kernel ``f`` an exit of a one-trip loop around the body,
    so code appended to the body runs after the work-item's part in any case (in
    place). A return inside a loop sets ``ret.done`` and breaks; after each such loop a
    test of the flag breaks on."""
    ops = f.body.ops
    if ops and ops[-1].name == "return" and not ops[-1].operands:
        ops.pop()
    if not any(op.name == "return" for top in ops for op in top.walk()):
        return
    decls = [op for op in ops if op.name == "var"]
    rest = [op for op in ops if op.name != "var"]
    head = Region()
    b = Builder(head, f.loc)
    decls.append(Op("var", attrs={"name": RETURN_FLAG, "type": BOOL}, loc=f.loc))
    b.store_var(RETURN_FLAG, b.const(False, BOOL))
    cond, body = b.while_()
    cond.op("yield", cond.const(True, BOOL))
    body.region.ops = _rewrite_returns(rest, in_loop=False)
    body.op("break")
    f.body.ops = decls + head.ops


def _rewrite_returns(ops: list[Op], in_loop: bool) -> list[Op]:
    """``ops`` with each return turned into (set the flag and) break."""
    out: list[Op] = []
    for op in ops:
        if op.name == "return":
            b = Builder(Region(), op.loc)
            if in_loop:
                b.store_var(RETURN_FLAG, b.const(True, BOOL))
            b.op("break")
            out.extend(b.region.ops)
            continue
        loop = op.name in ("for", "while")
        returns = any(o.name == "return" for o in op.walk() if o is not op)
        for i, region in enumerate(op.regions):
            if loop and op.name == "while" and i == 0:
                continue       # a while's condition region holds no statements
            region.ops = _rewrite_returns(region.ops, in_loop or loop)
        out.append(op)
        if loop and returns:
            b = Builder(Region(), op.loc)
            then, _ = b.if_(b.load_var(RETURN_FLAG, BOOL))
            then.op("break")
            out.extend(b.region.ops)
    return out


__all__ = ["finish_reducers_native", "lower_reducers", "prepare_reducers_native",
           "structure_returns"]
