"""``sycl.reduction`` and ``sycl.span`` (SYCL 2020 4.10.6): the arguments that bind to a
kernel's ``sycl.reducer`` parameters.

A reduction names where the result goes (a USM array, a span of one, or a buffer with the
command group's handler), optionally the identity, the operator (a SYCL function object)
and properties (``sycl.property.reduction.initialize_to_identity()``)::

    sycl.reduction(total, sycl.plus())                       # USM: element 0
    sycl.reduction(total, 0.0, sycl.plus())                  # with its identity
    sycl.reduction(buf, cgh, sycl.maximum())                 # a buffer of one element
    sycl.reduction(sycl.span(hist, 16), sycl.plus())         # 16 results at once

Each launch binds it afresh (:meth:`reduction.bind`, in ``LaunchPlan.enqueue``): the
packer checks it against the reducer parameter and passes the result's memory, the
identity and, where the kernel's strategy needs them, scratch memory for the
work-groups' results and a counter (passes/lower_reducers.py); before the kernel runs
the result is set to the identity (``initialize_to_identity``) and the counter to zero,
in stream order (a launch stage, see ``launch_plan._stages``).

>>> import numpy as np
>>> span(np.zeros(4, np.int32), 2).size()
2
"""
from __future__ import annotations

import math

import numpy as np

from .args import pointer_of
from .. import functional
from ..errors import errc, exception
from ..properties import as_properties, no_init
from ..types import read_write
from ..properties.runtime import initialize_to_identity, is_property_list
from ..backends.base import KernelArg, KernelArgKind
from .buffer import accessor, buffer
from .usm import alloc_on, usm_array


class span:
    """``sycl.span(data, n=None)``: the first ``n`` elements (all by default) of a USM
    array or host array, for a reduction over ``n`` results (C++ ``span<T, Extent>``)."""

    __slots__ = ("data", "count")

    def __init__(self, data, n=None):
        size = int(getattr(data, "size", 0) or 0)
        count = size if n is None else int(n)
        if count <= 0 or (size and count > size):
            raise exception(errc.invalid, f"sycl.span of {count} elements over memory of "
                            f"{size}")
        self.data = data
        self.count = count

    def size(self) -> int:
        return self.count

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"sycl.span({type(self.data).__name__}, {self.count})"


class reduction:
    """``sycl.reduction(usm_or_span, [identity,] op, [properties])`` or
    ``sycl.reduction(buffer, cgh, [identity,] op, [properties])``: pass it for a
    ``sycl.reducer[T]`` parameter (SYCL 2020 4.10.6.1)."""

    __slots__ = ("target", "count", "dtype", "identity", "op", "properties", "_acc",
                 "_identity_arg", "_checked", "_result_arg")

    def __init__(self, target, *args, properties=None):
        args = list(args)
        self._acc = None
        if isinstance(target, buffer):
            if not args or not hasattr(args[0], "_add_accessor"):
                raise exception(errc.invalid, "sycl.reduction of a buffer takes the command "
                                "group's handler next: sycl.reduction(buf, cgh, op)")
            cgh = args.pop(0)
        if args and is_property_list(args[-1]) and not isinstance(
                args[-1], functional.function_object):
            if properties is not None:
                raise exception(errc.invalid, "sycl.reduction got properties twice")
            properties = args.pop()
        if not args or functional.as_operator(args[-1]) is None:
            raise exception(errc.invalid, "sycl.reduction needs an operator (a SYCL function "
                            "object such as sycl.plus()) after the memory and the identity")
        self.op = functional.as_operator(args.pop())
        if len(args) > 1:
            raise exception(errc.invalid, "sycl.reduction takes (memory, [identity,] op, "
                            "[properties])")
        self.properties = as_properties(properties)
        for p in self.properties:
            if "reduction" not in p.categories:
                raise exception(errc.invalid, f"sycl.reduction does not take the property "
                                f"{p!r}")
        self.target, self.count = _target(target)
        self.dtype = np.dtype(self.target.dtype)
        problem = functional.operand_problem(self.op, self.dtype)
        if problem:
            raise exception(errc.invalid, f"sycl.reduction: {problem}")
        self.identity = self._identity(args[0] if args else None)
        self._identity_arg = KernelArg(KernelArgKind.scalar, self.identity.tobytes())
        # The reducer parameter last found to match, and the result's KernelArg: a launch
        # loop passes the same each time.
        self._checked = None
        self._result_arg = None
        if isinstance(target, buffer):
            # initialize_to_identity: the old contents are not read, so not copied in.
            self._acc = accessor(target, cgh, read_write, properties=no_init
                                 if self.initialize_to_identity else None)

    def _identity(self, given):
        if given is None:
            ident = functional.known_identity(self.op, self.dtype)
            if ident is None:
                raise exception(errc.invalid, f"sycl.{self.op.ir_name}() has no known identity "
                                f"for {self.dtype}; give one: sycl.reduction(memory, "
                                "identity, op)")
            return ident
        dt = self.dtype
        try:
            if dt.kind in "iub":
                value = dt.type(given)
                if value != given:
                    raise ValueError("it changes in the conversion")
            elif dt.kind == "c":
                value = dt.type(complex(given))
            else:
                value = dt.type(float(given))
        except (TypeError, ValueError, OverflowError) as e:
            raise exception(errc.invalid, f"identity {given!r} does not fit {dt} "
                            f"({e})") from None
        return value

    @property
    def initialize_to_identity(self) -> bool:
        return self.properties.has_property(initialize_to_identity)

    def bind(self, cgh, global_size, local_size) -> "bound_reduction":
        """This reduction for one launch over ``global_size`` (``local_size``: None for a
        range launch)."""
        return bound_reduction(self, cgh, global_size, local_size)

    def __repr__(self) -> str:
        return f"sycl.reduction({self.dtype}[{self.count}], {self.op!r})"


def _target(target):
    """(memory, number of results) of a reduction's first argument."""
    if isinstance(target, span):
        return target.data, target.count
    if isinstance(target, buffer):
        return target, 1 if target.size == 1 else int(target.size)
    if isinstance(target, usm_array) or hasattr(target, "__array_interface__") or \
            hasattr(target, "__cuda_array_interface__") or hasattr(target, "__dlpack__"):
        if not int(getattr(target, "size", 1) or 0):
            raise exception(errc.invalid, "sycl.reduction of empty memory")
        return target, 1
    raise exception(errc.invalid, f"sycl.reduction needs a USM array, a sycl.span or a "
                    f"sycl.buffer, not {type(target).__name__}")


def _check_parameter(red: reduction, param, kernel: str) -> None:
    """``errc.kernel_argument`` unless ``red`` fits the reducer parameter ``param``
    (its type, operator and number of results)."""
    where = f"kernel {kernel}: argument {param.name!r}"
    if np.dtype(param.dtype) != red.dtype:
        raise exception(errc.kernel_argument, f"{where}: a reduction of {red.dtype} for a "
                        f"sycl.reducer[np.{np.dtype(param.dtype)}]")
    if param.op != red.op.ir_name:
        raise exception(errc.kernel_argument, f"{where}: the reduction combines with "
                        f"{red.op!r} but the kernel's reducer with sycl.{param.op}()")
    extent = param.dims or 0
    if (extent or 1) != red.count:
        want = f"a span of {extent}" if extent else "one result"
        raise exception(errc.kernel_argument, f"{where}: the reducer takes {want}, the "
                        f"reduction has {red.count}")


class bound_reduction:
    """A reduction in one launch: packs its kernel arguments and prepares its memory in
    stream order before the kernel runs (:meth:`copy_in`, a launch stage as
    ``args.HostStaging`` is; nothing to copy out)."""

    __slots__ = ("red", "cgh", "items", "groups", "_result", "_scratch", "_count", "keep",
                 "_fresh", "_accumulates", "_home")

    @property
    def copies_out(self) -> bool:
        # A sub-buffer's result lives inside its parent's device memory, which a
        # pointer argument cannot start in the middle of: it goes through a temporary.
        return self._home is not None

    def __init__(self, red: reduction, cgh, global_size, local_size):
        self.red, self.cgh = red, cgh
        self.items = math.prod(global_size)
        # A range launch's groups are the backend's choice: at most one per work-item.
        self.groups = self.items if local_size is None else math.prod(
            g // l for g, l in zip(global_size, local_size))
        self._result = self._scratch = self._count = self._fresh = self._home = None
        self._accumulates = False
        self.keep: list = []

    def kernel_args(self, param, kernel: str, out: list) -> None:
        """Check ``param`` (a reducer ParamInfo) and append the KernelArgs of its IR
        parameters (frontend/signature.reducer_params)."""
        red = self.red
        if red._checked is not param:
            _check_parameter(red, param, kernel)
            red._checked = param
        dev, ctx = self.cgh._queue._device, self.cgh._queue._context
        self._result = mem = self._result_memory(dev, ctx, kernel, param.name)
        arg = red._result_arg
        if arg is None or arg.value is not mem:
            arg = red._result_arg = KernelArg(KernelArgKind.mem, mem)
        out.append(arg)
        out.append(red._identity_arg)
        n = max(param.dims or 0, 1)
        if param.strategy == "last_group":
            self._scratch = usm_array._make((self.groups * n,), red.dtype, "device", dev, ctx)
            self._count = usm_array._make((1,), np.uint32, "device", dev, ctx)
            out.append(KernelArg(KernelArgKind.mem, self._scratch._alloc))
            out.append(KernelArg(KernelArgKind.mem, self._count._alloc))
            return
        if not dev._desc.target.accumulating_reductions:
            out += _NO_ACCUMULATOR   # (the kernel combines into the result itself)
            return
        entry = _accumulator(self.cgh._queue, param.name, red, n)
        if entry.fresh:
            self._fresh = entry   # (set up in stream order before this kernel)
        out += entry.args
        out.append(_INIT_ARGS[red.initialize_to_identity])
        self._accumulates = True

    def _result_memory(self, dev, ctx, kernel, name):
        red = self.red
        if red._acc is not None:
            if red._acc._cgh is not self.cgh:
                raise exception(errc.accessor, f"kernel {kernel}: the reduction for {name!r} "
                                "was made for another command group (sycl.reduction(buf, "
                                "cgh, ...) takes this group's handler)")
            mem = red._acc._mem._memory_for(dev, ctx)
            start = red._acc._base * red.dtype.itemsize   # a sub-buffer's first element
            if not start:
                return mem
            if isinstance(mem, int):                      # host memory: its address
                return mem + start
            # (Buffer memory, as the parent's: some drivers copy only between like kinds.)
            tmp = alloc_on(dev.driver, dev._desc, red.count * red.dtype.itemsize, "buffer",
                           ctx.handle)
            self._home = (mem, start, tmp)
            return tmp
        mem, dtype, nbytes = pointer_of(red.target, dev, kernel, name, self.keep,
                                        self.cgh._queue._stream)
        if nbytes < red.count * red.dtype.itemsize:
            raise exception(errc.kernel_argument, f"kernel {kernel}: argument {name!r}: "
                            f"{nbytes} bytes of memory for {red.count} results")
        return mem

    def copy_in(self) -> None:
        """In stream order, before the kernel: the result starts from the identity
        (``initialize_to_identity``) but where the kernel accumulates, and a last-group
        counter from zero; a new accumulator starts from the identity, its counter from
        zero (the kernel leaves them so)."""
        red, q = self.red, self.cgh._queue
        driver, stream = q._driver, q._stream
        nbytes = red.count * red.dtype.itemsize
        if self._home is not None:   # the sub-buffer's current value, combined with
            mem, start, tmp = self._home
            driver.copy(stream, tmp, 0, mem, start, nbytes)
        if red.initialize_to_identity and not self._accumulates:
            driver.fill(stream, self._result, 0, red._identity_arg.value,
                        red.count * red.dtype.itemsize)
        if self._count is not None:
            driver.fill(stream, self._count._alloc, 0, bytes(4), 4)
        fresh = self._fresh
        if fresh is not None:
            driver.fill(stream, fresh.total._alloc, 0, red._identity_arg.value,
                        fresh.total.nbytes)
            driver.fill(stream, fresh.count._alloc, 0, bytes(4), 4)
            fresh.fresh = False

    def copy_out(self) -> None:
        """After the kernel: a sub-buffer's result from its temporary into its place in
        the parent (elsewhere the kernel wrote the result in place)."""
        if self._home is not None:
            mem, start, tmp = self._home
            nbytes = self.red.count * self.red.dtype.itemsize
            driver = self.cgh._queue._driver
            token = driver.copy(None, mem, start, tmp, 0, nbytes)
            if token is not None:
                token.wait()
            self._home = None
            driver.free(tmp)


# The accumulators of atomic reductions ----------------------------------------------------
_INIT_ARGS = {flag: KernelArg(KernelArgKind.scalar, np.uint32(flag).tobytes())
              for flag in (False, True)}
# An atomic reduction's accumulator, counter and init flag where the kernel does not
# accumulate (Target.accumulating_reductions): unused.
_NO_ACCUMULATOR = (KernelArg(KernelArgKind.mem, None), KernelArg(KernelArgKind.mem, None),
                   _INIT_ARGS[False])
# Accumulators a queue keeps (beyond these, a launch gets its own).
_MAX_KEPT = 64


class _Accumulator:
    """An atomic reduction's accumulator (``total``: one element per result, the
    identity between launches) and done counter (``count``: zero between launches),
    with their KernelArgs; ``fresh`` until a launch sets them up."""

    __slots__ = ("total", "count", "args", "fresh")

    def __init__(self, total: usm_array, count: usm_array):
        self.total, self.count, self.fresh = total, count, True
        self.args = (KernelArg(KernelArgKind.mem, total._alloc),
                     KernelArg(KernelArgKind.mem, count._alloc))


def _accumulator(q, name: str, red: reduction, n: int) -> _Accumulator:
    """The accumulator of reducer parameter ``name`` for a launch on ``q``. A queue whose
    backend stream runs commands in issue order keeps one per parameter name and
    reduction kind: its launches run one after another, and each leaves it as it found
    it. Any other launch gets its own (set up before it, as a new one is)."""
    key = (name, red.op.ir_name, red.dtype.str, n, red._identity_arg.value)
    kept, errors = q._accumulators
    if errors != q._errors.added:   # a command failed: its kernel may have left one
        kept, errors = q._accumulators = ({}, q._errors.added)
    entry = kept.get(key) if q._stream_in_order else None
    if entry is None:
        dev, ctx = q._device, q._context
        entry = _Accumulator(usm_array._make((n,), red.dtype, "device", dev, ctx),
                             usm_array._make((1,), np.uint32, "device", dev, ctx))
        if q._stream_in_order and len(kept) < _MAX_KEPT:
            kept[key] = entry
    return entry


# Launching with reductions ----------------------------------------------------------------
def prepare(kernel, args) -> tuple:
    """``(kernel, args, leading)`` for ``parallel_for(r, kernel, *args)``: reductions
    given before the kernel, as C++ writes them (``parallel_for(r, red1, red2, kernel,
    *args)``), are ``leading``; a kernel whose reducers take their operator from the
    launch is the kernel compiled for the reductions' operators."""
    leading = []
    while isinstance(kernel, reduction):
        if not args:
            raise exception(errc.invalid, "parallel_for: the kernel is missing after the "
                            "reductions")
        leading.append(kernel)
        kernel, args = args[0], args[1:]
    if getattr(kernel, "unbound_reducers", None):
        kernel = _bind_operators(kernel, args, leading)
    return kernel, args, leading


def _bind_operators(kernel, args, leading):
    sig = kernel.signature()
    user = [p for p in sig.params if p.kind not in ("index", "kernel_handler")]
    if leading:
        given = iter(leading)
        pairs = [(p, next(given, None)) for p in user if p.kind == "reducer"]
    else:
        pairs = [(p, a) for p, a in zip(user, args) if p.kind == "reducer"]
    ops = {}
    for p, red in pairs:
        if p.op is not None:
            continue
        if not isinstance(red, reduction):
            raise exception(errc.kernel_argument, f"kernel {kernel.name}: argument "
                            f"{p.name!r}: expected a sycl.reduction for this sycl.reducer "
                            f"parameter, got {type(red).__name__}")
        ops[p.name] = red.op.ir_name
    return kernel.with_reducer_operators(ops) if ops else kernel


def place(params, args, leading, kernel: str) -> tuple:
    """The user arguments in parameter order: reductions given before the kernel go to
    its reducer parameters in turn, the other arguments fill the rest."""
    if not leading:
        return args
    user = [p for p in params if p.kind not in ("index", "kernel_handler")]
    reducers = [p for p in user if p.kind == "reducer"]
    if len(leading) != len(reducers):
        raise exception(errc.kernel_argument, f"kernel {kernel} has {len(reducers)} reducer "
                        f"parameter(s), {len(leading)} reduction(s) given before it")
    reds, rest = iter(leading), iter(args)
    out = [next(reds) if p.kind == "reducer" else next(rest, _MISSING) for p in user]
    if list(rest) or any(a is _MISSING for a in out):
        raise exception(errc.kernel_argument, f"kernel {kernel} takes {len(user)} "
                        f"argument(s) ({', '.join(p.name for p in user)}), "
                        f"{len(leading) + len(args)} given")
    return tuple(out)


_MISSING = object()


def bind_all(args, cgh, global_size, local_size) -> list:
    """``args`` with each reduction bound to this launch (:class:`bound_reduction`)."""
    out = list(args)
    for i, a in enumerate(out):
        if a.__class__ is reduction:
            out[i] = a.bind(cgh, global_size, local_size)
    return out


__all__ = ["bind_all", "bound_reduction", "place", "prepare", "reduction", "span"]
