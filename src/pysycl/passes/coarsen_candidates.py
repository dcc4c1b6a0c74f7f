"""Which kernels may be coarsened (one work-item doing the work of K), and along which
dimensions a coarsened work-item would reuse its loads (``passes/coarsen_threads.py``
does the rewrite).

Coarsening is invisible to a kernel that only asks where it is in the global range:
every original work-item still runs, in its own copy of the body, with the ids, range,
offset and linear id it would have had. A kernel is a *candidate* when nothing it does
can tell the difference:

* it is a ``range``/``nd_range`` kernel (an ``item`` or ``nd_item`` parameter); one with
  reductions only a ``range`` kernel: a work-item combines into its own accumulator,
  in any order (SYCL 2020 4.10.6), so the copies of a coarsened work-item combine into
  one, and the work-group reduction and write that ``lower_reducers`` appends after
  them (the pass runs before it) see the launch's work-groups, whatever their number;
* no barrier, group algorithm or sub-group query (a work-group would no longer be the
  work-items the program thinks it is), no local memory;
* no atomic load, store, compare-exchange or fence, and no atomic read-modify-write in
  a ``while`` loop: those are how work-items wait for each other, and two of them in
  one thread would wait forever (a read-modify-write elsewhere is still done once per
  original work-item, and SYCL 2020 3.8.1 gives work-items no order);
* no work-group size property (``reqd_work_group_size``, ``work_group_size_hint``,
  ``max_work_group_size``, ``max_linear_work_group_size``, ``sub_group_size``): the
  program sized work-groups for one item per thread;
* no call of a function that asks about work-items (the callee is shared, its queries
  cannot be rewritten per copy) or whose body is unknown (an ``@sycl.external``
  declaration);
* local and group queries (``get_local_id``, ``get_group``...) only in other
  dimensions than the coarsened one; local and group linear ids in none.

The *reuse* along a dimension ``d`` is read from the global loads: an index is followed
as an abstract value, ``id_d + c`` for ``c`` in a small set of constants (through
constants, ``for`` loops of constant bounds, locals), optionally times and plus values
that do not depend on ``id_d`` (a row stride, a column). When the loads from one
pointer or accessor use two or more different ``c``, neighbouring work-items along
``d`` read the same data (a stencil's rows), which the unrolled copies of a coarsened
work-item can load once.

:func:`mark_coarsen_candidates` runs at link (the call graph is complete there) and
records ``coarsen = {dims, allowed, reuse, ops}`` on each candidate kernel; the IR then
carries the verdict through the caches, the warm-start index and bundle files.
:func:`choose` turns it into a plan for one build.

>>> choose({"dims": 2, "allowed": [0, 1], "reuse": [0]}, "cuda", "auto")
(0, 4)
>>> choose({"dims": 2, "allowed": [0, 1], "reuse": [0]}, "native_cpu", "auto") is None
True
"""
from __future__ import annotations

from pysycl.ir.core import Function, Module, Op, Region, Value
from pysycl.ir.types import AccessorType, IndexSpaceType, LocalAccessorType, PointerType
from pysycl.ir.verifier import describe_loc

#: The function attribute a candidate carries.
ATTR = "coarsen"
#: Work-items per thread that ``auto`` chooses: four rows of a 3x3 stencil share their
#: input rows (18 loads for 4 outputs instead of 36), as a hand-coarsened kernel does.
AUTO_FACTOR = 4
#: The largest kernel body (in IR ops) that ``auto`` copies 2 x AUTO_FACTOR times.
AUTO_MAX_OPS = 600
#: Work-items per thread that ``auto`` chooses for a kernel with reductions: 32 times
#: fewer work-groups, so 32 times fewer group reductions and same-address atomics, and
#: 32 loads in flight per thread (a 16M float sum on an H200: 16 -> 32 cut its time from
#: 1.2x to 1.1x CuPy's ``sum``; 64 was no faster).
AUTO_REDUCER_FACTOR = 32
#: Backends on which ``auto`` coarsens: a GPU thread's registers hold the rows its
#: copies share; a CPU work-item loop already reuses them through its caches.
AUTO_BACKENDS = frozenset({"cuda"})

_WORK_GROUP_PROPERTIES = ("sycl-work-group-size", "sycl-work-group-size-hint",
                          "sycl-max-work-group-size", "sycl-max-linear-work-group-size",
                          "sycl-sub-group-size")
_SYNC_ATOMICS = frozenset({"atomic.load", "atomic.store", "atomic.cmpxchg", "atomic.fence"})
# Queries about the work-group's shape in one dimension: fine in the others.
_GROUP_SHAPE = frozenset({"wi.local_id", "wi.group_id", "wi.local_range", "wi.group_range"})
_LINEAR_GROUP = frozenset({"wi.local_linear_id", "wi.group_linear_id"})
_MAX_CONSTANTS = 16   # larger sets of offsets: "depends on the id" without detail


def index_dims(fn: Function) -> int | None:
    """The dimensions of ``fn``'s ``item``/``nd_item`` parameter (None: it has none)."""
    for p in fn.params:
        if isinstance(p.type, IndexSpaceType) and p.type.kind in ("item", "nd_item") \
                and 1 <= p.type.dims <= 3:
            return p.type.dims
    return None


def mark_coarsen_candidates(m: Module, options=None) -> Module:
    """Record ``coarsen`` on every candidate kernel of ``m`` (and drop a stale one)."""
    for fn in m.kernels:
        verdict, _ = analyse_kernel(fn, m)
        if verdict is None:
            fn.attrs.pop(ATTR, None)
        else:
            fn.attrs[ATTR] = verdict
    return m


def analyse_kernel(fn: Function, m: Module) -> tuple[dict | None, str | None]:
    """``(verdict, None)`` for a candidate (the ``coarsen`` attribute's value), else
    ``(None, why not)``."""
    dims = index_dims(fn)
    if fn.body is None or dims is None:
        return None, "it is not a range or nd_range kernel"
    reducers = bool(fn.attrs.get("reducers"))
    if reducers and _index_kind(fn) != "item":
        return None, "it has reductions and an nd_item (its work-groups are the user's)"
    if fn.attrs.get("wi_rows") or fn.attrs.get("wi_strip") or fn.attrs.get("coarsened"):
        return None, "it was transformed already"
    for key in _WORK_GROUP_PROPERTIES:
        if key in fn.properties:
            return None, f"it has the work-group property {key}"
    for p in fn.params:
        if isinstance(p.type, LocalAccessorType):
            return None, f"it uses local memory (parameter {p.name})"
    allowed = set(range(dims))
    why = _refusal(fn.body, m, allowed, in_while=False, seen=set())
    if why is not None:
        return None, why
    if not allowed:
        return None, "it asks for its local id or group in every dimension"
    reuse = [d for d in range(dims) if _Reuse(fn, d).found()]
    size = sum(1 for _ in fn.walk())
    verdict = {"dims": dims, "allowed": sorted(allowed), "reuse": reuse, "ops": size}
    if reducers:
        verdict["reducers"] = True
    return verdict, None


def _index_kind(fn: Function) -> str | None:
    return next((p.type.kind for p in fn.params if isinstance(p.type, IndexSpaceType)), None)


def _at(op: Op) -> str:
    return f" at {describe_loc(op.loc)}"


def _refusal(r: Region, m: Module, allowed: set[int], in_while: bool,
             seen: set[str]) -> str | None:
    """Why the ops of ``r`` rule coarsening out (None: they do not); removes from
    ``allowed`` the dimensions whose work-group shape they ask about."""
    for op in r.ops:
        name = op.name
        if name == "barrier":
            return "it has a group_barrier" + _at(op)
        if name.startswith("group.") or name == "wg.items":
            return f"it uses a group algorithm ({name})" + _at(op)
        if name.startswith("sg."):
            return "it asks about its sub-group" + _at(op)
        if name in _SYNC_ATOMICS:
            return f"it has an {name.replace('.', ' ')} (work-items may wait for each " \
                   "other)" + _at(op)
        if name == "atomic.rmw" and in_while:
            return "it has an atomic read-modify-write in a while loop" + _at(op)
        if name in _LINEAR_GROUP:
            return f"it asks for its {name[3:].replace('_', ' ')}" + _at(op)
        if name in _GROUP_SHAPE:
            allowed.discard(op.attrs.get("dim"))
        if isinstance(op.type, PointerType) and op.type.space == "local":
            return "it uses local memory" + _at(op)
        if name == "call":
            why = _callee_refusal(op, m, seen)
            if why is not None:
                return why
        for sub in op.regions:
            why = _refusal(sub, m, allowed, in_while or name == "while", seen)
            if why is not None:
                return why
    return None


def _callee_refusal(op: Op, m: Module, seen: set[str]) -> str | None:
    """A called function must not ask about work-items (its queries cannot be rewritten
    per copy) and must do nothing a kernel may not (checked the same way)."""
    callee = op.attrs["callee"]
    if callee in seen:
        return None
    seen.add(callee)
    f = m.get_function(callee)
    if f is None or f.body is None:
        return f"it calls {callee}, whose body is not known here" + _at(op)
    for inner in f.walk():
        if inner.name.startswith("wi."):
            return f"it calls {callee}, which asks about its work-item" + _at(op)
    everywhere: set[int] = {0, 1, 2}
    return _refusal(f.body, m, everywhere, in_while=False, seen=seen)


# Reuse ------------------------------------------------------------------------------------
# Abstract values of integers and pointers, relative to one dimension d:
#   ("c", S)     a constant from the set S
#   ("u",)       does not depend on id_d
#   ("row", S)   id_d + c, c in S
#   ("idx", S)   (id_d + c) * s + u, c in S, s and u not depending on id_d
#   ("top",)     depends on id_d some other way
#   ("ptr", base, form)  a pointer: parameter ``base`` plus an offset of that form
_U = ("u",)
_TOP = ("top",)


def _constants(values) -> tuple:
    s = frozenset(values)
    return ("c", s) if len(s) <= _MAX_CONSTANTS else _U


def _rows(kind: str, values) -> tuple:
    s = frozenset(values)
    return (kind, s) if len(s) <= _MAX_CONSTANTS else _TOP


def _depends(a: tuple) -> bool:
    return a[0] in ("row", "idx", "top")


def _join(a: tuple | None, b: tuple | None) -> tuple | None:
    if a is None or a == b:
        return b
    if b is None:
        return a
    if a[0] == b[0] == "c":
        return _constants(a[1] | b[1])
    if a[0] == "ptr" and b[0] == "ptr" and a[1] == b[1]:
        return ("ptr", a[1], _join(a[2], b[2]))
    if {a[0], b[0]} <= {"c", "u"}:
        return _U
    if {a[0], b[0]} <= {"row", "idx"}:
        return _rows("row" if a[0] == b[0] == "row" else "idx", a[1] | b[1])
    return _TOP


def _add(a: tuple, b: tuple, sign: int = 1) -> tuple:
    """``a + sign * b``."""
    ka, kb = a[0], b[0]
    if ka == "c" and kb == "c":
        return _constants(x + sign * y for x in a[1] for y in b[1])
    if not _depends(b):
        if ka == "row" and kb == "c":
            return _rows("row", (x + sign * y for x in a[1] for y in b[1]))
        if ka in ("row", "idx"):
            return ("idx", a[1])
        return a if ka == "top" else _U
    if sign > 0 and not _depends(a):
        return _add(b, a)
    if ka == kb == "row":   # (id + x) - (id + y): no longer depends on the id
        return _constants(x - y for x in a[1] for y in b[1]) if sign < 0 else _TOP
    return _TOP


def _mul(a: tuple, b: tuple) -> tuple:
    if a[0] == "c" and b[0] == "c":
        return _constants(x * y for x in a[1] for y in b[1])
    if _depends(b) and not _depends(a):
        a, b = b, a
    if _depends(b):
        return _TOP
    if a[0] in ("row", "idx"):
        return ("idx", a[1])
    return a if a[0] == "top" else _U


class _Reuse:
    """Whether ``fn``'s global loads reuse data along dimension ``d`` (see above)."""

    def __init__(self, fn: Function, d: int):
        self.fn, self.d = fn, d
        self.values: dict[Value, tuple] = {}
        self.vars: dict[str, tuple] = {}
        self.loads: dict[object, set[int]] = {}
        for p in fn.params:
            if isinstance(p.type, PointerType) and p.type.space == "global":
                self.values[p.value] = ("ptr", p.name, ("c", frozenset({0})))
            else:
                self.values[p.value] = _U

    def found(self) -> bool:
        for _ in range(8):   # flow-insensitive: the locals' values grow to a fixed point
            before = dict(self.vars)
            self.loads = {}
            self._region(self.fn.body)
            if self.vars == before:
                return any(len(offsets) > 1 for offsets in self.loads.values())
        return False

    def _region(self, r: Region) -> None:
        for op in r.ops:
            if op.name == "for":
                self._store(op.attrs["var"], self._loop_values(op))
            if op.result is not None:
                self.values[op.result] = self._value(op)
            elif op.name == "var.store":
                self._store(op.attrs["name"], self._get(op.operands[0]))
            for sub in op.regions:
                self._region(sub)

    def _store(self, name: str, value: tuple) -> None:
        self.vars[name] = _join(self.vars.get(name), value)

    def _get(self, v: Value) -> tuple:
        return self.values.get(v, _TOP)

    def _loop_values(self, op: Op) -> tuple:
        lo, hi, step = (self._get(v) for v in op.operands)
        if all(x[0] == "c" and len(x[1]) == 1 for x in (lo, hi, step)):
            values = range(*(next(iter(x[1])) for x in (lo, hi, step))) \
                if next(iter(step[1])) else ()
            if len(values) <= _MAX_CONSTANTS:
                return _constants(values)
        return _TOP if any(_depends(x) for x in (lo, hi, step)) else _U

    def _value(self, op: Op) -> tuple:
        name, args = op.name, [self._get(v) for v in op.operands]
        if name == "const":
            value = op.attrs.get("value")
            ok = isinstance(value, int) and not isinstance(value, bool)
            return _constants([value]) if ok else _U
        if name == "wi.global_id":
            return ("row", frozenset({0})) if op.attrs.get("dim") == self.d else _U
        if name == "wi.global_linear_id":
            return ("idx", frozenset({0}))
        if name == "var.load":
            got = self.vars.get(op.attrs["name"])
            return _U if got is None else got
        if name in ("add", "sub"):
            return _add(args[0], args[1], 1 if name == "add" else -1)
        if name == "mul":
            return _mul(args[0], args[1])
        if name == "neg":
            return _mul(args[0], _constants([-1]))
        if name == "cast" and getattr(op.type, "is_int", False):
            return args[0]
        if name == "select":
            return _join(args[1], args[2])
        if name == "ptr.offset" and args[0][0] == "ptr":
            return ("ptr", args[0][1], _add(args[0][2], args[1]))
        if name == "acc.ptr" and isinstance(op.operands[0].type, AccessorType):
            return self._element(op.operands[0], args[1:])
        if name == "load" and args[0][0] == "ptr":
            self._record(args[0][1], args[0][2])
            return _TOP if _depends(args[0][2]) else _U
        return _TOP if any(_depends(a) or a[0] == "ptr" for a in args) else _U

    def _element(self, acc: Value, indices: list[tuple]) -> tuple:
        """The pointer to an accessor's element: its form is that of the one index that
        depends on ``id_d`` (or uniform when none does)."""
        base = next((p.name for p in self.fn.params if p.value is acc), None)
        moving = [(i, a) for i, a in enumerate(indices) if _depends(a)]
        if base is None or len(moving) > 1:
            return _TOP
        if not moving:
            return ("ptr", base, _U)
        return ("ptr", (base, moving[0][0]), moving[0][1])

    def _record(self, base, form: tuple) -> None:
        if form[0] in ("row", "idx"):
            self.loads.setdefault(base, set()).update(form[1])


def choose(verdict: dict | None, backend: str, knob) -> tuple[int, int] | None:
    """The plan ``(dimension, factor)`` for a kernel with ``coarsen`` attribute
    ``verdict`` on ``backend`` under ``knob`` (``config.coarsen()``: ``"auto"``,
    ``"off"`` or a factor), or None.

    A forced factor coarsens every candidate on every backend: along a dimension with
    reuse, the slowest such one that is not the fastest-varying (the last) if any,
    else the slowest allowed one (so that warps stay coalesced along the last). ``auto``
    coarsens by ``AUTO_FACTOR`` on ``AUTO_BACKENDS`` only, and only kernels of at most
    ``AUTO_MAX_OPS`` ops with reuse along a dimension other than the last, or with
    reductions (by ``AUTO_REDUCER_FACTOR``, along the slowest allowed dimension: each
    work-item's combinations into its accumulator replace work-groups' reductions and
    atomics).

    >>> choose({"dims": 1, "allowed": [0], "reuse": [], "reducers": True}, "cuda", "auto")
    (0, 32)

    >>> choose({"dims": 1, "allowed": [0], "reuse": []}, "opencl", 2)
    (0, 2)
    >>> choose(None, "cuda", 4) is None
    True
    """
    if not verdict or knob == "off":
        return None
    dims, allowed = int(verdict["dims"]), [int(d) for d in verdict["allowed"]]
    reuse = [int(d) for d in verdict["reuse"] if int(d) in allowed]
    inner = [d for d in reuse if d < dims - 1]
    if knob == "auto":
        if backend not in AUTO_BACKENDS or int(verdict.get("ops", 0)) > AUTO_MAX_OPS:
            return None
        if inner:
            return inner[0], AUTO_FACTOR
        ops = int(verdict.get("ops", 0))   # the copies' code no larger than a stencil's
        if verdict.get("reducers") and allowed:
            for factor in (AUTO_REDUCER_FACTOR, AUTO_REDUCER_FACTOR // 2):
                if ops * factor <= AUTO_MAX_OPS * AUTO_FACTOR:
                    return allowed[0], factor
        return None
    factor = int(knob)
    if factor < 2 or not allowed:
        return None
    return (inner or reuse or allowed)[0], factor


__all__ = ["ATTR", "AUTO_FACTOR", "AUTO_MAX_OPS", "AUTO_REDUCER_FACTOR", "analyse_kernel", "choose", "index_dims",
           "mark_coarsen_candidates"]
