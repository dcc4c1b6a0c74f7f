"""``no_full_collections``: full collections wait while builds run (nested, or on several
threads at once); the collector's thresholds come back when the last build ends, and
thresholds the program set meanwhile are left as it set them."""
from __future__ import annotations

import gc
import threading

from pysycl.detail.gc_pause import no_full_collections


def test_nested_and_concurrent_builds_restore_the_thresholds():
    before = gc.get_threshold()
    inside, go, done = [], threading.Event(), threading.Event()

    def other_build():
        with no_full_collections():
            go.set()
            done.wait(30)
            inside.append(gc.get_threshold())

    t = threading.Thread(target=other_build)
    with no_full_collections():
        t.start()
        go.wait(30)
        with no_full_collections():
            inside.append(gc.get_threshold())
        inside.append(gc.get_threshold())
    inside.append(gc.get_threshold())   # the other build still runs
    done.set()
    t.join()
    assert all(th[:2] == before[:2] and th[2] > before[2] for th in inside)
    assert gc.get_threshold() == before


def test_thresholds_set_during_a_build_are_kept():
    before = gc.get_threshold()
    try:
        with no_full_collections():
            gc.set_threshold(before[0] + 1, before[1], before[2])
        assert gc.get_threshold() == (before[0] + 1, before[1], before[2])
    finally:
        gc.set_threshold(*before)


def test_an_error_in_the_build_restores_the_thresholds():
    before = gc.get_threshold()
    try:
        with no_full_collections():
            raise KeyError("build failed")
    except KeyError:
        pass
    assert gc.get_threshold() == before


def test_collect_still_collects_everything():
    class Node:
        pass

    with no_full_collections():
        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b
        assert gc.collect() >= 2
