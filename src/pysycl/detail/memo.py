"""Caches that live on their owners: :class:`Memo`, values made once per key;
:class:`LRUMemo`, the same bounded to a number of entries; :func:`clear_caches`, which
empties every one of them (tests).

A cache belongs to the object its values are made from (a kernel's launchers to the
kernel, a linked kernel's executable images to the linked kernel, a queue's launch
plans to the queue), so it goes when its owner goes and no key outlives what it names.
``memo.get_or_make(key, make)``: a hit is one dict lookup, with no lock; on a miss the
first caller of a key calls ``make()`` while other callers of that key wait for its
value (other keys are not held up), and a ``make`` that raises stores nothing. Code
whose every call counts reads ``memo.entries`` (a plain dict) itself.

>>> memo = Memo()
>>> memo.get_or_make("answer", lambda: 42), memo.entries
(42, {'answer': 42})
>>> small = LRUMemo(lambda: 2)
>>> [small.get_or_make(k, lambda: k * 2) for k in (1, 2, 1, 3)], list(small.entries)
([2, 4, 2, 6], [1, 3])
>>> clear_caches(); memo.entries, len(small.entries)
({}, 0)
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable

_MISSING = object()
_memos: "weakref.WeakSet[Memo]" = weakref.WeakSet()
_memos_lock = threading.Lock()


class Memo:
    """Values made once per key (see the module doc)."""

    __slots__ = ("entries", "_lock", "_making", "__weakref__")

    def __init__(self):
        self.entries: dict = self._new_entries()
        self._lock = threading.Lock()          # guards _making (and an LRUMemo's order)
        self._making: dict[Hashable, threading.Lock] = {}
        with _memos_lock:
            _memos.add(self)

    @staticmethod
    def _new_entries() -> dict:
        return {}

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` if none was made."""
        return self.entries.get(key, default)

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value of ``key``, made by ``make()`` if there is none yet."""
        value = self.get(key, _MISSING)
        if value is not _MISSING:
            return value
        with self._lock:
            lock = self._making.setdefault(key, threading.Lock())
        try:
            with lock:
                value = self.get(key, _MISSING)
                if value is _MISSING:
                    value = make()
                    self._store(key, value)
        finally:
            with self._lock:
                if self._making.get(key) is lock:
                    del self._making[key]
        return value

    def _store(self, key: Hashable, value: Any) -> None:
        self.entries[key] = value

    def clear(self) -> None:
        self.entries.clear()

    def __len__(self) -> int:
        return len(self.entries)

    def __reduce__(self):   # a cache is never sent to another process: an empty one
        return (type(self), ())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self.entries)}>"


class LRUMemo(Memo):
    """A :class:`Memo` of at most ``capacity()`` entries (read at each new entry, so a
    limit from the environment takes effect at once): the least recently used entry
    goes first. For values keyed by what a program may vary without end
    (specialization-constant values)."""

    __slots__ = ("_capacity",)

    def __init__(self, capacity: Callable[[], int]):
        self._capacity = capacity
        super().__init__()

    @staticmethod
    def _new_entries() -> dict:
        return OrderedDict()

    def get(self, key: Hashable, default: Any = None) -> Any:
        value = self.entries.get(key, _MISSING)
        if value is _MISSING:
            return default
        try:
            self.entries.move_to_end(key)
        except KeyError:   # evicted meanwhile by another thread: still a hit
            pass
        return value

    def _store(self, key: Hashable, value: Any) -> None:
        with self._lock:
            entries = self.entries
            entries[key] = value
            limit = max(1, self._capacity())
            while len(entries) > limit:
                entries.popitem(last=False)

    def __reduce__(self):
        return (type(self), (self._capacity,))


def memo_of(owner: Any, name: str = "_memo") -> Memo:
    """The :class:`Memo` kept on ``owner`` as attribute ``name`` (an object with a
    ``__dict__``), made on first use."""
    memo = owner.__dict__.get(name)
    if memo is None:
        memo = owner.__dict__.setdefault(name, Memo())   # one winner if threads race
    return memo


def clear_caches() -> None:
    """Empty every :class:`Memo` and :class:`LRUMemo` of the process: launchers, launch
    plans, images and links are made again on next use (tests that count builds). The
    kernel cache on disk is not touched."""
    with _memos_lock:
        memos = list(_memos)
    for memo in memos:
        memo.clear()
