"""A launch loop's launch made again: the same range, the same argument objects.

Most GPU launch loops launch one kernel over the same range with the same USM arrays
and scalars, thousands of times. Everything a launch computes from them (the checked
range, the packed parameters, the driver's geometry) is then what the last launch
computed, and the driver can make that launch again from its record
(``backends/cuda/launch_call.py``). :func:`replayer` makes, for one kernel signature,
the function that checks a launch is such a repeat, makes it, and records its event as
the general path would; anything else (another range or argument object, a freed
array, a queue with a command to wait for, a record changed by another thread's
launch) returns None, and the launch takes the general path.

What makes identity enough:

* a USM array's ``_karg`` is made once per array object and cleared when it is freed,
  so ``a._karg is k`` holds exactly while ``a`` is the live array launched with last;
* a scalar is the same object of an immutable type (Python or NumPy numbers);
* the range is an object whose value cannot change (the plan remembers only those).

>>> make = replayer((True, False), in_order=False)   # (global_ptr, scalar)
>>> make.__code__.co_filename
'<pysycl replay (pointer, scalar), out of order>'
"""
from __future__ import annotations

import numpy as np

from ..detail.generated_code import define
from .event import STREAM, issued_event
from .ranges import range as range_cls

_IMMUTABLE = frozenset({int, float, bool, complex})


def immutable(value) -> bool:
    """Whether a scalar argument's value cannot change while it is the same object."""
    return value.__class__ in _IMMUTABLE or isinstance(value, np.generic)


def replayer(pointers: tuple, in_order: bool):
    """``make(queue, space, args, packed, call, version, token) -> again or None`` for
    a kernel whose user arguments are global_ptrs where ``pointers`` is true and scalars
    elsewhere: ``again(space, args)`` is the launch's event, or None (see the module).
    ``packed``: the last launch's KernelArgs; ``call(version)``: the driver's launch of
    its record again (0: launched); ``token``: the launch's token."""
    n = len(pointers)
    names = [f"a{i}" for i in range(n)]
    lines = ["def make(queue, space, args, packed, call, version, token):"]
    if in_order:
        lines.append("    lock, ordered = queue._lock, queue._stream_in_order")
    if n:
        lines.append(f"    {''.join(f'{a}, ' for a in names)}= args")
    checks = []
    for i, pointer in enumerate(pointers):
        if pointer:   # a USM array's KernelArg (another library's array is not replayed)
            lines.append(f"    k{i} = packed[{i}]")
            lines.append(f"    if getattr(a{i}, '_karg', None) is not k{i}: return None")
            checks.append(f"b{i}._karg is not k{i}")
        else:
            lines.append(f"    if not IMMUTABLE(a{i}): return None")
            checks.append(f"b{i} is not a{i}")
    lines += ["    record = queue._record",
              "    def again(given, args):",
              "        if given is not space and (given.__class__ is not RANGE or "
              "given != space):",
              "            return None"]
    if n:
        lines += ["        try:",
                  f"            {''.join(f'b{i}, ' for i in range(n))}= args",
                  f"            if {' or '.join(checks)}:",
                  "                return None",
                  "        except (AttributeError, TypeError, ValueError):",
                  "            return None"]
    else:
        lines += ["        if args:", "            return None"]
    if in_order:
        # As LaunchPlan.issue_in_order, under the queue's lock: the newest command is
        # none, complete, or this queue's last launch on its in-order stream.
        lines += ["        lock.acquire()",
                  "        try:",
                  "            last = queue._last",
                  "            if last is not None and (last._error is not None or not (",
                  "                    last._done or last is queue._issued and ordered)):",
                  "                return None",
                  "            if call(version):",
                  "                return None",
                  "            return record(ISSUED(queue, STREAM, token))",
                  "        finally:",
                  "            lock.release()"]
    else:
        lines += ["        if call(version):",
                  "            return None",
                  "        return record(ISSUED(queue, STREAM, token))"]
    lines.append("    return again")
    kinds = ", ".join("pointer" if p else "scalar" for p in pointers)
    scope = {"IMMUTABLE": immutable, "RANGE": range_cls, "ISSUED": issued_event,
             "STREAM": STREAM}
    # Code built above from parameter kinds only; named for tracebacks.
    order = "in order" if in_order else "out of order"
    return define(lines, f"<pysycl replay ({kinds}), {order}>", scope)["make"]
