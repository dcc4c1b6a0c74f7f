"""Work-group fission: run kernels with barriers on the native CPU without a thread per item.

A kernel whose body holds ``barrier {scope = "work_group"}`` ops (at top level, or inside
loops and ifs that every work-item of the group takes alike) is rewritten so that one
thread runs a whole work-group:

- each maximal barrier-free run of statements becomes a ``wg.items`` region (the native
  backend runs it once per work-item, in local linear order);
- the loops and ifs that contain barriers stay outside, at group level; a
  ``break``/``continue`` leaving such a loop stays at group level too, with the ifs around
  it; the barriers themselves disappear: the end of one ``wg.items`` region and the start
  of the next *is* the barrier;
- a value computed by work-item code and needed at group level (a loop bound, an if or
  while condition) is stored by every item into a group var ``wg.uN`` and read back at
  group level. This relies on the value being uniform, which the kernel language requires
  of control flow around barriers and ``Uniformity`` checks conservatively; a barrier under
  control flow that may differ between items is ``exception(errc.build)`` at the barrier;
- an SSA value crossing from one ``wg.items`` region to another is recomputed where it is
  cheap and pure (constants, work-item queries, arithmetic on them), else kept per item in
  a var ``wg.pN`` with ``per_item = true``;
- a var slot used in more than one region, or inside a group-level loop, becomes
  ``per_item = true`` and is declared at the top of the kernel; one used in a single
  region moves into it; the variable of a group-level ``for`` is a group var.

Kernels without work-group barriers are left unchanged: the native backend wraps the
whole body in one items loop itself. ``return`` is only allowed as the kernel's last
statement, and a barrier inside a called device function is rejected (inline it first).

>>> from pysycl.ir.core import Module
>>> work_group_fission(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.errors import errc, exception
from pysycl.ir.core import Function, Module, Op, Region
from pysycl.ir.verifier import describe_loc

from .fission_uniform import optimise_fission
from .fission_values import drop_dead_code, localise_values, place_vars
from .lower_group_reduce import lower_group_reduce
from .uniformity import Uniformity



def work_group_fission(m: Module, options=None, optimise: bool = False) -> Module:
    """Rewrite every kernel of ``m`` that has work-group barriers (in place; returns ``m``).

    Work-group reductions are lowered first (``lower_group_reduce``; idempotent), so a
    caller that runs only this pass still gets what native CPU codegen accepts.
    ``optimise``: also run ``fission_uniform.optimise_fission`` on the result (the native
    CPU pipeline does; the plain split is what the pass's own tests look at).
    """
    lower_group_reduce(m)
    for f in m.kernels:
        if f.body is not None and _has_group_barrier(f.body):
            fission_kernel(f, m, optimise)
    return m


def is_group_barrier(op: Op) -> bool:
    return op.name == "barrier" and op.attrs.get("scope") == "work_group"


def _has_group_barrier(r: Region) -> bool:
    return any(is_group_barrier(op) for op in r.walk())


def fission_kernel(f: Function, m: Module, optimise: bool = False) -> None:
    _check_supported(f, m)
    marker = _GroupMarker(Uniformity(f))
    marker.region(f.body, loop_is_group=False)
    hoisted: list[Op] = []
    _split(f.body, marker.group_ops, hoisted)
    fission_vars = localise_values(f)
    place_vars(f, hoisted, fission_vars)
    if optimise:
        optimise_fission(f)
    drop_dead_code(f)


def _fail(op: Op, msg: str) -> exception:
    return exception(errc.build, f"{describe_loc(op.loc)}: {msg}")


def _check_supported(f: Function, m: Module) -> None:
    body = f.body.ops
    if body and body[-1].name == "return" and not body[-1].operands:
        body.pop()  # a trailing return is the end of the kernel anyway
    with_barriers = _functions_with_barriers(m)
    for op in f.walk():
        if op.name == "return":
            raise _fail(op, f"kernel {f.name!r} uses group_barrier, so the native CPU device "
                        "needs it to end at its last statement: an early return is not supported")
        if op.name == "wg.items":
            raise _fail(op, f"kernel {f.name!r} already went through work-group fission")
        if op.name == "call" and op.attrs.get("callee") in with_barriers:
            raise _fail(op, f"device function {op.attrs['callee']!r} uses group_barrier; on the "
                        "native CPU device it must be inlined into the kernel")


def _functions_with_barriers(m: Module) -> set[str]:
    """Device functions that reach a work-group barrier, directly or through calls."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for g in m.functions:
            if g.name in found or g.body is None:
                continue
            if any(is_group_barrier(op) or (op.name == "call" and op.attrs.get("callee") in found)
                   for op in g.walk()):
                found.add(g.name)
                changed = True
    return found


class _GroupMarker:
    """Finds the ops that stay at group level and checks that their control is uniform."""

    def __init__(self, uniformity: Uniformity):
        self.u = uniformity
        self.group_ops: set[int] = set()

    def region(self, r: Region, loop_is_group: bool) -> bool:
        found = False
        for op in r.ops:
            if self.op(op, loop_is_group):
                self.group_ops.add(id(op))
                found = True
        return found

    def op(self, op: Op, loop_is_group: bool) -> bool:
        if is_group_barrier(op):
            return True
        if op.name in ("break", "continue"):
            return loop_is_group
        if op.name in ("for", "while"):
            if op.name == "while" and _has_group_barrier(op.regions[0]):
                raise _fail(op, "group_barrier inside a while condition is not supported")
            if not _has_group_barrier(op.regions[-1]):
                return False  # its break/continue leave this loop, not a group-level one
            if not self.u.loop_is_uniform(op):
                raise self.non_uniform(op, "loop whose trip count")
            self.region(op.regions[-1], loop_is_group=True)
            return True
        if op.name == "if":
            found = [self.region(reg, loop_is_group) for reg in op.regions]
            if any(found) and not self.u.is_uniform(op.operands[0]):
                raise self.non_uniform(op, "if whose condition")
            return any(found)
        return False

    def non_uniform(self, op: Op, what: str) -> exception:
        culprit = next((o for o in op.walk() if is_group_barrier(o)), op)
        return _fail(culprit, f"group_barrier inside a {what} (at {describe_loc(op.loc)}) may "
                     "differ between the work-items of a group; the native CPU device needs "
                     "barriers in work-group-uniform control flow (every work-item of the group "
                     "must take the same path to each barrier)")


def _split(r: Region, group_ops: set[int], hoisted: list[Op]) -> None:
    """Rewrite a group-level region: item runs into wg.items, group ops recursively."""
    out: list[Op] = []
    run: list[Op] = []

    def flush() -> None:
        if run:
            out.append(Op("wg.items", regions=[Region(list(run))], loc=run[0].loc))
            run.clear()

    for op in r.ops:
        if op.name == "var":
            hoisted.append(op)  # placed by place_vars once its uses are known
        elif id(op) in group_ops or op.name == "yield":
            flush()
            if is_group_barrier(op):
                continue
            for reg in op.regions:  # a while's condition too: its work runs per item
                _split(reg, group_ops, hoisted)
            out.append(op)
        else:
            run.append(op)
    flush()
    r.ops = out
