"""A launch loop's launch made again: the same range, the same argument objects.

Most GPU launch loops launch one kernel over the same range with the same arrays and
scalars, thousands of times. Everything a launch computes from them (the checked
range, the packed parameters, the driver's geometry) is then what the last launch
computed, and the driver can make that launch again from its record
(``backends/cuda/launch_call.py``). :func:`arm` makes, after such a launch, the
function that checks a launch is a repeat of it, makes it, and records its event as
the general path would; anything else (another range or argument object, a freed
array, a moved or resized tensor, another producer stream, a queue with a command to
wait for, a record changed by another thread's launch) returns None, and the launch
takes the general path.

What makes identity enough:

* a USM array is the object launched with last (referred to weakly: nothing here keeps
  memory alive), not freed since (its ``ptr`` is 0 once freed), and its memory's
  address and the parameter's type are the array's for as long as it lives;
* another library's CUDA array is the object its remembered entry refers to, asked
  again for its address and shape and for its producer's stream (the stream protocol
  is honoured at every launch; ``args.known_entry``; the current stream of a library
  is asked once for all its arrays), and held until the device ran the launch, as the
  general path holds it;
* a scalar is the same object of an immutable type (Python or NumPy numbers);
* the range is an object whose value cannot change (the plan remembers only those),
  or an ``nd_range`` made of the same three ranges (an ``nd_range`` can be changed in
  place: it is compared by its ranges, which cannot).

>>> replayer(("usm", "scalar"), in_order=False).__code__.co_filename
'<pysycl replay (usm, scalar), out of order>'
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from ..detail.generated_code import define
from .args import known_entry
from .event import STREAM, issued_event
from .ranges import nd_range as nd_range_cls
from .ranges import range as range_cls

_IMMUTABLE = frozenset({int, float, bool, complex})
USM, FOREIGN, SCALAR = "usm", "foreign", "scalar"


def immutable(value) -> bool:
    """Whether a scalar argument's value cannot change while it is the same object."""
    return value.__class__ in _IMMUTABLE or isinstance(value, np.generic)


def arm(queue, pointers, space, args, packed, call, version, token):
    """``again(space, args) -> event or None`` for the launch just made over ``space``
    (a range, or an nd_range's ``(global, local, offset)`` ranges) with ``args`` (user
    arguments: global_ptrs where ``pointers`` is true, scalars elsewhere) packed as
    ``packed``, which ``call(version)`` makes again (0: made) with the launch token
    ``token``; None when an argument may change unseen."""
    kinds, groups, entries = [], {}, []
    for value, karg, pointer in zip(args, packed, pointers):
        entry = None
        if not pointer:
            if not immutable(value):
                return None
            kinds.append(SCALAR)
        elif getattr(value, "_karg", None) is karg:
            kinds.append(USM)
        else:
            entry = known_entry(value, karg, queue._stream)
            if entry is None:
                return None
            # Arrays of one library share its current stream, asked once per launch:
            # FOREIGN + the index of the library's first argument (FOREIGN alone: the
            # array's own probe answers both).
            stream = getattr(entry.probe, "stream", None)
            kinds.append(FOREIGN if stream is None else
                         f"{FOREIGN}{groups.setdefault(stream, len(kinds))}")
        entries.append(entry)
    return replayer(tuple(kinds), queue._in_order)(queue, space, args, packed, call,
                                                   version, token, entries)


@functools.lru_cache(maxsize=256)
def replayer(kinds: tuple, in_order: bool):
    """``make(queue, space, args, packed, call, version, token, entries) -> again``
    for user arguments of ``kinds`` (see :func:`arm`, which checks what ``make`` relies
    on, and finds the remembered ``entries`` of other libraries' arrays)."""
    n = len(kinds)
    foreign = [i for i, kind in enumerate(kinds) if kind.startswith(FOREIGN)]
    lines = ["def make(queue, space, args, packed, call, version, token, entries):",
             "    record, held = queue._record, queue._held"]
    if in_order:
        lines.append("    lock, ordered = queue._lock, queue._stream_in_order")
    if n:
        lines.append(f"    {''.join(f'a{i}, ' for i in range(n))}= args")
    checks, probes = [], []
    for i, kind in enumerate(kinds):
        if kind == USM:   # (weakly: the closure keeps no memory alive once freed)
            lines.append(f"    r{i} = WEAK(a{i})")
            checks.append(f"r{i}() is not b{i} or not b{i}.ptr")
        elif kind == SCALAR:
            checks.append(f"b{i} is not a{i}")
        else:
            lines += [f"    h{i} = entries[{i}]",
                      f"    ref{i}, probe{i}, seen{i} = h{i}.ref, h{i}.probe, h{i}.seen",
                      f"    producer{i} = h{i}.ordered[1]"]
            checks.append(f"ref{i}() is not b{i}")
            if kind == FOREIGN:
                probes += [f"            s, p = probe{i}(b{i})",
                           f"            if s != seen{i} or p != producer{i}:",
                           "                return None"]
                continue
            first = int(kind[len(FOREIGN):])
            lines.append(f"    where{i} = probe{i}.where")
            if first == i:
                lines.append(f"    current{i} = probe{i}.stream")
                probes.append(f"            p{i} = current{i}()")
            probes += [f"            if p{first} != producer{i} or where{i}(b{i}) != seen{i}:",
                       "                return None"]
    lines += ["    def again(given, args):",
              "        if given.__class__ is ND_RANGE:",
              "            if (given.global_range, given.local_range, given.offset) != space:",
              "                return None",
              "        elif given is not space and (given.__class__ is not RANGE or "
              "given != space):",
              "            return None"]
    if n:
        lines += ["        try:",
                  f"            {''.join(f'b{i}, ' for i in range(n))}= args",
                  f"            if {' or '.join(checks)}:",
                  "                return None",
                  *probes,
                  "        except (AttributeError, TypeError, ValueError, RuntimeError, "
                  "KeyError):",
                  "            return None"]
    else:
        lines += ["        if args:", "            return None"]
    made = ["if call(version):", "    return None"]
    if foreign:   # held with the token until the device ran it, as the general path does
        # (KeepAlive.hold_objects, whose check of the entry it made last is inlined: a
        # launch loop holds its arrays once.)
        same = " and ".join(f"shared[1][{j}] is b{i}" for j, i in enumerate(foreign))
        made += ["shared = held._shared",
                 f"if shared is None or shared[0] is not token or len(shared[1]) != "
                 f"{len(foreign)} or not ({same}):",
                 f"    held.hold_objects(token, [{', '.join(f'b{i}' for i in foreign)}])"]
    made.append("return record(ISSUED(queue, STREAM, token))")
    if in_order:
        # As LaunchPlan.issue_in_order, under the queue's lock: the newest command is
        # none, complete, or this queue's last launch on its in-order stream.
        lines += ["        lock.acquire()",
                  "        try:",
                  "            last = queue._last",
                  "            if last is not None and (last._error is not None or not (",
                  "                    last._done or last is queue._issued and ordered)):",
                  "                return None",
                  *(f"            {line}" for line in made),
                  "        finally:",
                  "            lock.release()"]
    else:
        lines += [f"        {line}" for line in made]
    lines.append("    return again")
    scope = {"RANGE": range_cls, "ND_RANGE": nd_range_cls,
             "ISSUED": issued_event, "STREAM": STREAM, "WEAK": weakref.ref}
    # Code built above from argument kinds only; named for tracebacks.
    order = "in order" if in_order else "out of order"
    return define(lines, f"<pysycl replay ({', '.join(kinds)}), {order}>", scope)["make"]
