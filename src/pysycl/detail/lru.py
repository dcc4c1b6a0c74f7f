"""A dict bounded to a number of entries, least recently used out first.

Caches keyed by specialization-constant values (launchers, executable images, loaded
programs) use it: a program that sets a new value on each launch must not grow the
process without bound.

>>> cache = LRU(lambda: 2)
>>> cache.put("a", 1), cache.put("b", 2), cache.get("a"), cache.put("c", 3)
([], [], 1, [('b', 2)])
>>> sorted(cache.keys())
['a', 'c']
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable


class LRU:
    """``get``/``put`` with least-recently-used eviction. ``capacity`` is called on each
    ``put``, so a limit read from the environment takes effect at once. ``get`` takes
    no lock: ``OrderedDict.get`` and ``move_to_end`` are single operations under the
    GIL, and a key evicted between them is simply not moved."""

    def __init__(self, capacity: Callable[[], int]):
        self._capacity = capacity
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        value = self._entries.get(key, default)
        if value is not default:
            try:
                self._entries.move_to_end(key)
            except KeyError:
                pass
        return value

    def put(self, key: Hashable, value: Any) -> list[tuple[Hashable, Any]]:
        """Store ``value`` as the most recent entry; the ``(key, value)`` pairs evicted
        to make room, oldest first (the caller releases them outside any lock)."""
        evicted = []
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            limit = max(1, self._capacity())
            while len(self._entries) > limit:
                evicted.append(self._entries.popitem(last=False))
        return evicted

    def pop(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            return self._entries.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def keys(self) -> list:
        return list(self._entries.keys())

    def values(self) -> list:
        return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries
