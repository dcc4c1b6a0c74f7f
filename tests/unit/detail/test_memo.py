"""detail.memo: values made once per key under threads, nothing kept from a failed make,
least-recently-used eviction, and clear_caches reaching every memo (the launchers a
kernel keeps among them)."""
from __future__ import annotations

import gc
import random
import threading
import weakref

import pytest

from pysycl.detail.memo import LRUMemo, Memo, clear_caches, memo_of


def test_each_key_is_made_once_while_threads_race():
    memo = Memo()
    calls: dict[int, int] = {}
    lock = threading.Lock()
    start = threading.Barrier(8)
    keys = [random.Random(seed).randrange(5) for seed in range(200)]
    results: list[tuple[int, int]] = []

    def make(key):
        with lock:
            calls[key] = calls.get(key, 0) + 1
        return key * key

    def work(offset):
        start.wait()
        for key in keys[offset::8]:
            results.append((key, memo.get_or_make(key, lambda key=key: make(key))))
    pool = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert calls == {key: 1 for key in set(keys)}
    assert sorted(results) == sorted((key, key * key) for key in keys)


def test_a_failed_make_stores_nothing_and_the_next_caller_makes_it():
    memo = Memo()
    with pytest.raises(ZeroDivisionError):
        memo.get_or_make("k", lambda: 1 // 0)
    assert memo.get("k") is None
    assert memo.get_or_make("k", lambda: 7) == 7


def test_lru_memo_evicts_the_least_recently_used():
    limit = [3]
    memo = LRUMemo(lambda: limit[0])
    rng = random.Random(5)
    order: list[int] = []            # the reference: most recently used last
    for _ in range(300):
        key = rng.randrange(6)
        assert memo.get_or_make(key, lambda key=key: -key) == -key
        if key in order:
            order.remove(key)
        order.append(key)
        del order[:-limit[0]]
        assert list(memo.entries) == order
    limit[0] = 1                      # a smaller limit applies at the next new entry
    memo.get_or_make(99, lambda: 0)
    assert list(memo.entries) == [99]


def test_clear_caches_empties_every_memo_and_memos_die_with_their_owners():
    class Owner:
        pass
    owner = Owner()
    memo_of(owner).get_or_make("x", lambda: 1)
    other = LRUMemo(lambda: 4)
    other.get_or_make("y", lambda: 2)
    clear_caches()
    assert memo_of(owner).entries == {} and other.entries == {}
    gone = weakref.ref(memo_of(owner))
    del owner
    gc.collect()
    assert gone() is None
