"""The process's loaded programs, bounded: ``config.max_programs()`` at most, least
recently used unloaded first.

Every value set of a literal specialization constant is its own executable image (on
the native CPU a host object JIT-linked into the process, ~140 KiB), and every native
value set on OpenCL its own program object; a program that sets a new value on each
launch would otherwise grow without end. A program leaves this cache when it is the
least recently used one over the limit: the launchers that hold it forget it (their
next launch loads it again) and it is unloaded once nothing refers to it any more.
A launch in progress holds its program, so an evicted program stays loaded until the
launches using it return (the native CPU unloads through the ORC resource tracker
that ``NativeProgram`` owns; OpenCL releases the ``cl_program``, which each enqueued
kernel keeps alive until it has run).

A device_global's value lives in the program that last ran with it: before a program
is forgotten its variables are read back into their host copies
(``device_globals.program_evicted``), and a reloaded program gets them again.

>>> len(loaded) <= __import__("pysycl").config.max_programs()
True
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Hashable

from .. import config
from ..detail.lru import LRU
from . import device_globals


class _Entry:
    """A loaded program and the launchers that hold it (weakly)."""

    __slots__ = ("program", "holders", "has_device_globals")

    def __init__(self, program, has_device_globals: bool):
        self.program = program
        self.holders: weakref.WeakSet = weakref.WeakSet()
        self.has_device_globals = has_device_globals


class LoadedPrograms:
    """``(image, device, native values, driver context) -> program``, bounded."""

    def __init__(self, capacity: Callable[[], int] = config.max_programs):
        self._lru = LRU(capacity)

    def lookup(self, key: Hashable, holder: Any = None):
        """The program loaded under ``key`` (now the most recent), or None; ``holder``
        (an object with a ``forget_program(program)`` method) is told when it is
        evicted."""
        entry = self._lru.get(key)
        if entry is None:
            return None
        if holder is not None:
            entry.holders.add(holder)
        return entry.program

    def insert(self, key: Hashable, program, holder: Any = None,
               has_device_globals: bool = False) -> None:
        entry = _Entry(program, has_device_globals)
        if holder is not None:
            entry.holders.add(holder)
        for _key, old in self._lru.put(key, entry):
            _release(old)

    def __len__(self) -> int:
        return len(self._lru)

    def programs(self) -> list:
        return [e.program for e in self._lru.values()]

    def clear(self) -> None:
        for key in self._lru.keys():
            entry = self._lru.pop(key)
            if entry is not None:
                _release(entry)


def _release(entry: _Entry) -> None:
    """Forget an evicted program: device_global values go back to their host copies,
    holders drop it (the caller's launch, if any, still holds it)."""
    if entry.has_device_globals:
        device_globals.program_evicted(entry.program)
    for holder in list(entry.holders):
        holder.forget_program(entry.program)


#: The process's loaded programs.
loaded = LoadedPrograms()
