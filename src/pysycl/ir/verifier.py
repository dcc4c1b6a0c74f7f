"""Check that a module is well formed before (and, in debug, after) every pass.

Checked: each op is in the catalogue with its operand/region counts, required attrs and
result presence; SSA dominance (an operand is a parameter of the function or the result
of an earlier op of the same region or an enclosing one); the type rules of
``ir.type_rules``; var slots are declared (``var``) in a dominating position before
``var.load``/``var.store``/``var.addr``/``for`` use them, with matching types;
``break``/``continue`` only inside a loop body (a ``wg.items`` region is a loop of its own,
so they never cross it); ``yield`` only ending a while's cond region; terminators last in
their region; ``return`` matching the function's return type (kernels return nothing);
``wg.items`` only at group level of a kernel, with no barrier inside; unique names.

Accessor modes: pointer types carry no constness (one pointer type per address space keeps
every target's mapping simple), so the verifier follows provenance instead: a pointer
derived through ``acc.ptr``/``ptr.*`` from a ``read_only`` accessor must not be stored
through (``store``, ``atomic.store/rmw/cmpxchg``). Pointers that pass through a var slot
or a call are not followed; the frontend rejects such writes at the source already.

Errors are ``exception(errc.build, ...)`` listing each problem with the function, the op
and its source location.

>>> verify_module(Module("m"))
"""
from __future__ import annotations

from ..errors import errc, exception
from .core import UNKNOWN_LOC, Function, Loc, Module, Op, Region, Value
from .ops import CATALOGUE, TERMINATORS
from .printer import KIND_WORDS
from .type_rules import check_types
from .types import VOID, AccessorType, PointerType, Type

MAX_ERRORS = 20
_WRITES = ("store", "atomic.store", "atomic.rmw", "atomic.cmpxchg")
_DERIVED_PTRS = ("ptr.offset", "ptr.elem", "ptr.field")


def verify_module(m: Module) -> None:
    """Raise ``exception(errc.build)`` describing every problem found in ``m``.

    >>> verify_module(Module("m", [Function("m.k", "kernel", [], body=Region([Op("barrier")]))]))
    Traceback (most recent call last):
    pysycl.errors.exception: IR verification failed for module 'm':
      function "m.k", op "barrier" at unknown location: missing attribute 'scope'
    """
    errors = module_errors(m)
    if errors:
        shown = errors[:MAX_ERRORS]
        more = f"\n  ... and {len(errors) - MAX_ERRORS} more" if len(errors) > MAX_ERRORS else ""
        raise exception(errc.build, f"IR verification failed for module {m.name!r}:\n  "
                        + "\n  ".join(shown) + more)


def module_errors(m: Module) -> list[str]:
    """Every problem in ``m`` as one message each (empty when the module is valid)."""
    errors: list[str] = []
    _unique(errors, "function", [f.name for f in m.functions])
    _unique(errors, "specialization constant", [s.unique_id for s in m.spec_constants])
    _unique(errors, "device_global", [d.unique_id for d in m.device_globals])
    for f in m.functions:
        _FunctionVerifier(m, f, errors).run()
    return errors


def _unique(errors: list[str], what: str, names: list[str]) -> None:
    seen = set()
    for n in names:
        if n in seen:
            errors.append(f"{what} {n!r} is defined twice")
        seen.add(n)


def describe_loc(loc: Loc) -> str:
    """``file:line:col`` for a message, or ``unknown location``.

    >>> describe_loc(UNKNOWN_LOC)
    'unknown location'
    """
    return "unknown location" if loc == UNKNOWN_LOC else str(loc)


class _FunctionVerifier:
    def __init__(self, m: Module, f: Function, errors: list[str]):
        self.m, self.f, self.errors = m, f, errors
        self.values: list[set[Value]] = [{p.value for p in f.params}]
        self.vars: list[dict[str, Type]] = [{}]
        # Innermost first-class context: "loop", "items" or "function"; break/continue
        # need "loop" on top, wg.items pushes "items" so they never cross it.
        self.contexts: list[str] = ["function"]
        self.read_only: set[Value] = {p.value for p in f.params if isinstance(
            p.type, AccessorType) and p.type.mode == "read_only"}

    def fail(self, msg: str, op: Op | None = None) -> None:
        where = f'function "{self.f.name}"'
        if op is not None:
            where += f', op "{op.name}" at {describe_loc(op.loc)}'
        self.errors.append(f"{where}: {msg}")

    def run(self) -> None:
        f = self.f
        if f.kind not in KIND_WORDS:
            return self.fail(f"unknown function kind {f.kind!r}")
        if (f.body is None) != (f.kind == "declare"):
            return self.fail("a declaration has no body and a definition has one")
        if f.kind == "kernel" and f.return_type != VOID:
            self.fail(f"a kernel returns nothing, not {f.return_type}")
        _unique_params = [p.name for p in f.params]
        if len(set(_unique_params)) != len(_unique_params):
            self.fail("two parameters have the same name")
        if f.body is not None:
            self.region(f.body, "body")

    # Regions ----------------------------------------------------------------------------
    def region(self, r: Region, role: str) -> None:
        self.values.append(set())
        self.vars.append({})
        for i, op in enumerate(r.ops):
            if op.name in TERMINATORS and i != len(r.ops) - 1:
                self.fail("nothing may follow a terminator in its region", op)
            if op.name == "yield" and not (role == "while_cond" and i == len(r.ops) - 1):
                self.fail("yield may only end the cond region of a while", op)
            self.op(op)
        if role == "while_cond" and (not r.ops or r.ops[-1].name != "yield"):
            self.fail("a while's cond region must end with yield")
        self.values.pop()
        self.vars.pop()

    def op(self, op: Op) -> None:
        d = CATALOGUE.get(op.name)
        if d is None:
            return self.fail("not an op of the catalogue (ir/ops.py)", op)
        ok = self.shape(op, d)
        for i, v in enumerate(op.operands):
            if not any(v in s for s in self.values):
                ok = False
                self.fail(f"operand {i} ({self.describe(v)}) is not defined before this op in "
                          "the same region or an enclosing one", op)
        if ok:
            msg = check_types(op, self.m)
            if msg:
                self.fail(msg, op)
            self.semantics(op)
        self.nested(op)
        if op.result is not None:
            self.values[-1].add(op.result)

    def shape(self, op: Op, d) -> bool:
        ok = True
        if d.operands is not None and len(op.operands) != d.operands:
            ok = False
            self.fail(f"has {len(op.operands)} operands, expected {d.operands}", op)
        if len(op.regions) != d.regions:
            ok = False
            self.fail(f"has {len(op.regions)} regions, expected {d.regions}", op)
        for a in d.attrs:
            if a not in op.attrs:
                ok = False
                self.fail(f"missing attribute {a!r}", op)
        if d.result == "none" and op.type != VOID:
            ok = False
            self.fail(f"has result type {op.type} but produces no value", op)
        if d.result == "value" and op.type == VOID:
            ok = False
            self.fail("must produce a value", op)
        if (op.result is None) != (op.type == VOID) or (op.result and op.result.owner is not op):
            ok = False
            self.fail("result value does not match the op's type", op)
        return ok

    def nested(self, op: Op) -> None:
        if op.name == "while":
            self.contexts.append("cond")
            self.region(op.regions[0], "while_cond")
            self.contexts[-1] = "loop"
            self.region(op.regions[1], "body")
            self.contexts.pop()
            return
        pushed = {"for": "loop", "wg.items": "items"}.get(op.name)
        if pushed:
            self.contexts.append(pushed)
        for r in op.regions:
            self.region(r, "body")
        if pushed:
            self.contexts.pop()

    def describe(self, v: Value) -> str:
        if v.owner is None:
            return f"%{v.name}" if v.name else "an unknown value"
        return f"the result of {v.owner.name} at {describe_loc(v.owner.loc)}"

    # Op-specific rules that need the verifier's context -----------------------------
    def semantics(self, op: Op) -> None:
        name = op.name
        if name.startswith("var") or name == "for":
            self.var_rules(op)
        elif name in ("break", "continue") and self.contexts[-1] != "loop":
            self.fail(f"{name} outside a loop body", op)
        elif name == "return":
            self.return_rules(op)
        elif name == "wg.items":
            if self.f.kind != "kernel" or "items" in self.contexts:
                self.fail("wg.items only appears at group level of a kernel", op)
        elif name in ("barrier", "group.reduce") and op.attrs["scope"] == "work_group":
            if "items" in self.contexts:
                self.fail(f"{name} inside wg.items (fission removes barriers)", op)
        self.track_read_only(op)

    def var_rules(self, op: Op) -> None:
        name = op.attrs["var"] if op.name == "for" else op.attrs["name"]
        if not isinstance(name, str):
            return self.fail(f"var name {name!r} is not a string", op)
        if op.name == "var":
            t = op.attrs["type"]
            if not isinstance(t, Type) or t == VOID:
                return self.fail(f"var {name!r} has no storage type: {t!r}", op)
            if self.lookup(name) is not None:
                return self.fail(f"var {name!r} is declared twice", op)
            if not isinstance(op.attrs.get("per_item", False), bool):
                self.fail("per_item must be true or false", op)
            self.vars[-1][name] = t
            return
        t = self.lookup(name)
        if t is None:
            return self.fail(f"var {name!r} is not declared in a dominating position", op)
        got = op.operands[0].type if op.name in ("var.store", "for") else op.type
        want = PointerType(t, "private") if op.name == "var.addr" else t
        if got != want:
            self.fail(f"var {name!r} has type {t}; {op.name} uses {got}", op)

    def lookup(self, name: str) -> Type | None:
        for scope in reversed(self.vars):
            if name in scope:
                return scope[name]
        return None

    def return_rules(self, op: Op) -> None:
        if "items" in self.contexts or "cond" in self.contexts:
            return self.fail("return inside wg.items or a while condition", op)
        rt = self.f.return_type
        got = op.operands[0].type if op.operands else VOID
        if len(op.operands) > 1 or got != rt:
            self.fail(f"returns {got if len(op.operands) < 2 else 'several values'}; "
                      f"function {self.f.name!r} returns {rt}", op)

    def track_read_only(self, op: Op) -> None:
        if not op.operands:
            return
        src = op.operands[0]
        if op.name in ("acc.ptr", "acc.base") and src in self.read_only or (
                op.name in _DERIVED_PTRS and src in self.read_only):
            self.read_only.add(op.result)
        elif op.name in _WRITES and src in self.read_only:
            self.fail("writes through a pointer into a read_only accessor", op)
