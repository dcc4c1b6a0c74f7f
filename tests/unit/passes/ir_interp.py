"""A tiny reference interpreter for kernel IR, for tests (no codegen needed).

Two ways to run an nd_range, chosen by the kernel's shape:
- no ``wg.items``: every work-item runs the body as a Python generator; ``barrier`` yields,
  and the work-group's items are stepped in lock-step from barrier to barrier (a barrier
  reached by some items but not others is an error, as on a device);
- after work-group fission: the body runs once per work-group at group level; each
  ``wg.items`` region runs once per item in local linear order; vars with
  ``per_item = true`` have one cell per item, other group-level vars one per group.

Values are NumPy scalars of the IR's types; pointers are (flat array, index) pairs.
Arguments: NumPy arrays for accessors (row-major indexing), ``LocalMem`` for local
accessors (fresh zeroed memory per work-group), scalars for the rest.
"""
from __future__ import annotations

import dataclasses
import itertools
import operator

import numpy as np

from pysycl.ir.core import Module, Op, Region, Value
from pysycl.ir.types import ScalarType, dtype_of


@dataclasses.dataclass
class LocalMem:
    shape: tuple
    dtype: object


@dataclasses.dataclass
class Ptr:
    mem: np.ndarray  # flat
    index: int

    def offset(self, k) -> "Ptr":
        return Ptr(self.mem, self.index + int(k))


@dataclasses.dataclass
class Item:
    global_id: tuple
    local_id: tuple
    group_id: tuple
    global_range: tuple
    local_range: tuple

    @property
    def local_linear(self) -> int:
        return int(np.ravel_multi_index(self.local_id, self.local_range))


class Cell:
    __slots__ = ("value",)

    def __init__(self):
        self.value = None


class PerItem:
    def __init__(self, n: int):
        self.cells = [Cell() for _ in range(n)]


class Env:
    def __init__(self, item: Item | None, parent: "Env | None" = None):
        self.item, self.parent = item, parent
        self.values: dict[Value, object] = {}
        self.vars: dict[str, object] = {}

    def get(self, v: Value):
        env = self
        while env is not None:
            if v in env.values:
                return env.values[v]
            env = env.parent
        raise KeyError(f"value {v} not available")

    def cell(self, name: str) -> Cell:
        env = self
        while env is not None:
            if name in env.vars:
                c = env.vars[name]
                return c.cells[self.item.local_linear] if isinstance(c, PerItem) else c
            env = env.parent
        raise KeyError(f"var {name!r} not declared")


BREAK, CONTINUE, RETURN = "break", "continue", "return"

_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
           "min": np.minimum, "max": np.maximum, "xor": operator.xor,
           "shl": operator.lshift, "shr": operator.rshift}
_CMP = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
        "gt": operator.gt, "ge": operator.ge}
_MATH = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos,
         "fabs": np.fabs, "floor": np.floor, "ceil": np.ceil, "fmin": np.fmin, "fmax": np.fmax}


def _scalar(t, v):
    return t.dtype.type(v) if isinstance(t, ScalarType) else v


class Interpreter:
    def __init__(self, module: Module, kernel: str, args: dict, global_range, local_range):
        self.m, self.f = module, module.function(kernel)
        self.args = args
        self.grange, self.lrange = tuple(global_range), tuple(local_range)
        self.fissioned = any(op.name == "wg.items" for op in self.f.walk())

    def run(self) -> None:
        groups = [g // l for g, l in zip(self.grange, self.lrange)]
        with np.errstate(all="ignore"):
            for group in itertools.product(*map(range, groups)):
                self.run_group(group)

    def group_env(self, group) -> tuple[Env, list[Item]]:
        env = Env(None)
        for p in self.f.params:
            a = self.args.get(p.name)
            if isinstance(a, LocalMem):
                a = np.zeros(a.shape, a.dtype)
            env.values[p.value] = a
        items = [Item(tuple(g * l + i for g, l, i in zip(group, self.lrange, lid)), lid, group,
                      self.grange, self.lrange)
                 for lid in itertools.product(*map(range, self.lrange))]
        return env, items

    def run_group(self, group) -> None:
        env, items = self.group_env(group)
        if self.fissioned:
            self.items = items
            _drain(self.region(self.f.body, env), "group level")
            return
        gens = [self.region(self.f.body, Env(it, env)) for it in items]
        live = list(gens)
        while live:
            states = []
            for g in live:
                try:
                    next(g)
                    states.append(True)
                except StopIteration:
                    states.append(False)
            if any(states) and not all(states):
                raise RuntimeError("barrier reached by some work-items of a group but not all")
            if not any(states):
                return

    # Execution -------------------------------------------------------------------------
    def region(self, r: Region, env: Env):
        for op in r.ops:
            signal = yield from self.op(op, env)
            if signal is not None:
                return signal
        return None

    def op(self, op: Op, env: Env):
        name = op.name
        if name == "barrier":
            yield "barrier"
            return None
        if name in ("break", "continue", "return"):
            return name
        if name == "if":
            taken = op.regions[0] if env.get(op.operands[0]) else op.regions[1]
            return (yield from self.region(taken, Env(env.item, env)))
        if name == "for":
            return (yield from self.for_loop(op, env))
        if name == "while":
            return (yield from self.while_loop(op, env))
        if name == "wg.items":
            for it in self.items:
                _drain(self.region(op.regions[0], Env(it, env)), "wg.items")
            return None
        if name == "var":
            env.vars[op.attrs["name"]] = (PerItem(len(self.items)) if op.attrs.get("per_item")
                                          else Cell())
            return None
        value = self.compute(op, env)
        if op.result is not None:
            env.values[op.result] = value
        return None

    def for_loop(self, op: Op, env: Env):
        lo, hi, step = (int(env.get(v)) for v in op.operands)
        t = op.operands[0].type
        for i in range(lo, hi, step):
            env.cell(op.attrs["var"]).value = _scalar(t, i)
            signal = yield from self.region(op.regions[0], Env(env.item, env))
            if signal == BREAK:
                break
            if signal == RETURN:
                return RETURN
        return None

    def while_loop(self, op: Op, env: Env):
        while True:
            cond_env = Env(env.item, env)
            yield from self.region(op.regions[0], cond_env)
            if not cond_env.get(op.regions[0].ops[-1].operands[0]):
                return None
            signal = yield from self.region(op.regions[1], Env(env.item, env))
            if signal == BREAK:
                return None
            if signal == RETURN:
                return RETURN

    def compute(self, op: Op, env: Env):
        name, args = op.name, [env.get(v) for v in op.operands]
        t = op.type
        if name == "const":
            v = op.attrs["value"]
            return np.frombuffer(v, dtype_of(t))[0] if isinstance(v, bytes) else _scalar(t, v)
        if name in _BINARY:
            return _scalar(t, _BINARY[name](*args))
        if name in ("and", "or"):
            if t.is_bool:
                return np.bool_(args[0] and args[1]) if name == "and" else np.bool_(args[0] or args[1])
            return _scalar(t, (operator.and_ if name == "and" else operator.or_)(*args))
        if name == "div":
            return _scalar(t, np.true_divide(*args))
        if name == "neg":
            return _scalar(t, -args[0])
        if name == "not":
            return np.bool_(not args[0]) if t.is_bool else _scalar(t, ~args[0])
        if name == "cmp":
            return np.bool_(_CMP[op.attrs["pred"]](*args))
        if name == "cast":
            return np.array(args[0]).astype(t.dtype)[()]
        if name == "select":
            return args[1] if args[0] else args[2]
        if name.startswith("math."):
            return _scalar(t, _MATH[name[5:]](*args))
        return self.memory_or_query(op, args, env)

    def memory_or_query(self, op: Op, args: list, env: Env):
        name = op.name
        if name == "acc.ptr":
            arr = args[0]
            return Ptr(arr.reshape(-1), int(np.ravel_multi_index([int(i) for i in args[1:]],
                                                                 arr.shape)))
        if name == "ptr.offset":
            return args[0].offset(args[1])
        if name == "acc.range":
            return np.int64(args[0].shape[op.attrs["dim"]])
        if name == "load":
            return args[0].mem[args[0].index]
        if name == "store":
            args[0].mem[args[0].index] = args[1]
            return None
        if name == "var.load":
            return env.cell(op.attrs["name"]).value
        if name == "var.store":
            env.cell(op.attrs["name"]).value = args[0]
            return None
        if name.startswith("wi."):
            it = env.item
            if it is None:  # group level: only what every item of the group shares
                if name[3:] not in ("local_range", "global_range", "group_range", "group_id",
                                    "global_offset"):
                    raise RuntimeError(f"{name} at group level")
                it = self.items[0]
            return np.int64(self.query(name[3:], op.attrs.get("dim", 0), it))
        if name in ("assert", "yield"):
            return None
        raise NotImplementedError(f"ir_interp: op {name}")

    def query(self, what: str, dim: int, it: Item) -> int:
        if what == "local_linear_id":
            return it.local_linear
        if what == "global_linear_id":
            return int(np.ravel_multi_index(it.global_id, it.global_range))
        table = {"global_id": it.global_id, "local_id": it.local_id, "group_id": it.group_id,
                 "global_range": it.global_range, "local_range": it.local_range,
                 "group_range": tuple(g // l for g, l in zip(it.global_range, it.local_range)),
                 "global_offset": (0, 0, 0)}
        return table[what][dim]


def _drain(gen, where: str) -> None:
    try:
        next(gen)
    except StopIteration:
        return
    raise RuntimeError(f"barrier inside {where} (work-group fission should have removed it)")


def run_kernel(module: Module, kernel: str, args: dict, global_range, local_range) -> None:
    """Run ``kernel`` over the nd_range, writing into the arrays in ``args``."""
    Interpreter(module, kernel, args, global_range, local_range).run()
