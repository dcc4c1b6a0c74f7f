"""Load host objects with ORC LLJIT and run work-groups on a persistent thread pool.

Calls go through ``ctypes.CFUNCTYPE``, which releases the GIL for the call, so every
worker runs native code at once (measured: 1.98x on 2 cores). A launch
is split into one contiguous range of work-groups per thread; the calling thread runs the
first range itself, so ``config.num_threads()`` threads work in all (caller + n-1 pool
workers). Launches of fewer than ``INLINE_ITEMS`` work-items run inline on the caller:
waking a worker costs tens of microseconds, more than such a launch usually takes; but
a work-item may loop over thousands of elements, so the caller times the first
work-group of such a launch and hands the rest to the pool when it would take longer
than ``INLINE_SECONDS``.

>>> program = NativeExecutor().load(obj, ["vadd"])                   # doctest: +SKIP
>>> program.launch("vadd", (n,), None, [KernelArg(KernelArgKind.mem, a.ctypes.data), ...])
"""
from __future__ import annotations

import ctypes
import itertools
import math
import os
import threading
import weakref
from time import perf_counter
from typing import Any, Sequence

try:   # the C type itself: ``queue`` would import heapq & co. (warm start, first launch)
    from _queue import SimpleQueue
except ImportError:  # pragma: no cover - other implementations
    from queue import SimpleQueue

import llvmlite.binding as llvm

from ... import config
from ...detail.symbols import device_global_symbol
from ...errors import errc, exception
from ...ir.check_record import BOUNDS_RECORD_SYMBOL, RECORD_SYMBOL, SITES_SYMBOL
from ..base import KernelArg, KernelArgKind
from .object_check import check_object
from ..host_jit import lljit, next_library_name
from .target import (LAUNCH_GLOBAL, LAUNCH_GROUPS, LAUNCH_LOCAL, LAUNCH_OFFSET, LAUNCH_WORDS,
                     entry_symbol)

# The failure record of checked builds and its site table: exported when the object has
# them, so the runtime reads them like any device global (Driver.read_device_global).
CHECK_SYMBOLS = (BOUNDS_RECORD_SYMBOL, RECORD_SYMBOL, SITES_SYMBOL)


ENTRY_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_int64, ctypes.c_void_p)
INLINE_ITEMS = 1 << 14
# ... unless the rest of the launch, at the pace of its first work-group, would take longer
# than this (a few times the cost of waking the workers). The privatised histogram of
# benchmarks/ (4096 items, each over 4096 elements, in 64 groups; 16M int32, 2 threads):
# 56 ms inline, 28 ms with the rest on the pool (Numba: 40 ms).
INLINE_SECONDS = 100e-6
# The rest of such a launch goes in chunks of about this long (at least CHUNKS_PER_THREAD
# per thread), handed out dynamically: fine enough that a thread slowed by another
# process does not hold up the launch, coarse enough that a chunk's GIL round trip
# (microseconds) does not count.
HEAVY_CHUNK_SECONDS = 500e-6
# Launches of at least this many work-items are cut into CHUNKS_PER_THREAD chunks per
# thread that threads take as they finish (dynamic scheduling, as Numba's prange does):
# on a shared machine one slowed core no longer holds up the whole launch.
DYNAMIC_ITEMS = 1 << 18
CHUNKS_PER_THREAD = 4
# parallel_for(range): groups are runs of the last dimension so the vectorised inner loop
# is long; 8192 items keep a group's working set in L2 for float32 rows.
RANGE_GROUP_ITEMS = 8192
LOCAL_ALIGN = 64

_pools_lock = threading.Lock()   # the process's executor and pinned pools


def warm_up() -> None:
    """Create the process's LLJIT and executor ahead of the first load (the native
    driver calls this when it creates a queue's stream): the first launch of a kernel
    from the disk cache then only adds its object."""
    lljit()
    if _default is None:
        default_executor()


class NativeProgram:
    """A loaded host object: kernel entries and exported symbols. Keeps the LLJIT
    ResourceTracker alive; dropping the program unloads its code."""

    def __init__(self, tracker, kernels: dict[str, Any], pool: "WorkerPool"):
        self._tracker = tracker
        self.kernels = kernels
        self._pool = pool
        # Per kernel: launch descriptions by (global, local, offset) and packed ``void
        # **args`` by argument values, so a repeated launch allocates nothing.
        self._prepared: dict[str, _Prepared] = {}

    def symbol_address(self, symbol: str) -> int:
        return int(self._tracker[symbol])

    def device_global_address(self, unique_id: str) -> int:
        """Address of a device_global's storage (zero-initialised at load)."""
        return self.symbol_address(device_global_symbol(unique_id))

    def launch(self, kernel_name: str, global_size: Sequence[int],
               local_size: Sequence[int] | None, args: Sequence[KernelArg],
               global_offset: Sequence[int] | None = None,
               pool: "WorkerPool | None" = None) -> None:
        """Run ``kernel_name`` to completion (on ``pool``: a sub-device's, else the
        process's). ``args``: the ABI table's KernelArgs, the
        spec-constant buffer (``mem``, may be 0) last. ``local_size`` None is a
        ``parallel_for(range)``: the executor picks the group shape."""
        prep = self._prepared.get(kernel_name)
        if prep is None:
            fn = self.kernels.get(kernel_name)
            if fn is None:
                raise exception(errc.invalid, f"kernel {kernel_name!r} is not in this program")
            prep = self._prepared[kernel_name] = _Prepared(fn)
        last = prep.last
        if last is not None and last[0] == global_size and last[1] == local_size and \
                last[2] == global_offset and list(map(id, args)) == last[3]:
            # The very KernelArg objects of the last launch (a loop over the same USM
            # arrays: their KernelArgs are cached per array, and frozen), which the memo
            # keeps alive, so no other object can have their ids.
            hit = last[4]
            if hit[2]:
                (pool or self._pool).run(prep.fn, hit[0], hit[1], hit[2], hit[3], hit[4], hit[5])
            return
        key = _launch_key((global_size, local_size, global_offset), args)
        try:
            hit = prep.launches.get(key) if key is not None else None
        except TypeError:  # a list for a range: not cached
            key, hit = None, None
        if hit is None:
            words, ngroups, items = launch_words(global_size, local_size, global_offset)
            argv, keep, local_bytes = pack_args(args)
            # (argv, launch words, groups, local bytes, inline?, what keeps them alive)
            hit = (ctypes.addressof(argv), ctypes.addressof(words), ngroups if items else 0,
                   local_bytes, items < INLINE_ITEMS, items, (argv, words, keep))
            if key is not None:
                if len(prep.launches) >= _CACHE_ENTRIES:
                    prep.launches.clear()
                prep.launches[key] = hit
        if key is not None:
            args = list(args)
            prep.last = (global_size, local_size, global_offset, list(map(id, args)), hit,
                         args)
        if not hit[2]:
            return
        (pool or self._pool).run(prep.fn, hit[0], hit[1], hit[2], hit[3], hit[4], hit[5])


_CACHE_ENTRIES = 64
_MEM, _LOCAL = KernelArgKind.mem, KernelArgKind.local


class _Prepared:
    """One kernel's launches by (global, local, offset, argument values): the packed
    ``void **args`` and launch words of each, so a repeated launch allocates nothing."""

    __slots__ = ("fn", "launches", "last")

    def __init__(self, fn):
        self.fn = fn
        self.launches: dict = {}
        # The last launch: (global, local, offset, ids of its KernelArgs, its entry of
        # ``launches``, the KernelArgs themselves, kept alive for their ids).
        self.last: tuple | None = None


def _launch_key(shape: tuple, args) -> tuple | None:
    """``shape`` and the values ``pack_args`` packs, hashable (memory as addresses);
    None when some argument cannot be keyed (a host array passed as memory)."""
    key = [shape]
    for a in args:
        v = a.value
        if a.kind is _MEM and type(v) is not int:
            v = getattr(v, "ptr", None) if v is not None else 0
            if type(v) is not int:
                return None
        key.append(v)
    return tuple(key)


def launch_words(global_size, local_size, global_offset):
    """The int64[16] launch description, the number of groups and of work-items."""
    g = [int(x) for x in global_size]
    dims = len(g)
    if not 1 <= dims <= 3:
        raise exception(errc.nd_range, f"a launch has 1 to 3 dimensions, not {dims}")
    if local_size is None:
        loc = range_group_shape(g)
    else:
        loc = [int(x) for x in local_size]
        if len(loc) != dims or any(l <= 0 or n % l for n, l in zip(g, loc)):
            raise exception(errc.nd_range, f"global range {tuple(g)} is not a multiple of "
                                           f"the local range {tuple(loc)}")
    off = [int(x) for x in (global_offset or [0] * dims)]
    groups = [-(-n // l) for n, l in zip(g, loc)]
    words = (ctypes.c_int64 * LAUNCH_WORDS)()
    words[0] = dims
    for d in range(3):
        words[LAUNCH_GLOBAL + d] = g[d] if d < dims else 1
        words[LAUNCH_LOCAL + d] = loc[d] if d < dims else 1
        words[LAUNCH_GROUPS + d] = groups[d] if d < dims else 1
        words[LAUNCH_OFFSET + d] = off[d] if d < dims else 0
    return words, math.prod(groups), math.prod(g)


def range_group_shape(g: list[int]) -> list[int]:
    """Work-group shape for a range launch: whole rows of the last dimension (up to
    RANGE_GROUP_ITEMS), several rows when rows are short."""
    loc = [1] * len(g)
    loc[-1] = max(1, min(g[-1], RANGE_GROUP_ITEMS))
    if len(g) > 1:
        loc[-2] = max(1, min(g[-2], RANGE_GROUP_ITEMS // loc[-1]))
    return loc


def pack_args(args: Sequence[KernelArg]):
    """``void *args[]``: one pointer per LLVM-level parameter (see target.entry_symbol)."""
    keep, ptrs, local = [], [], 0
    for a in args:
        if a.kind is KernelArgKind.scalar or a.kind is KernelArgKind.bytes:
            buf = ctypes.create_string_buffer(bytes(a.value), max(len(a.value), 8))
        elif a.kind is KernelArgKind.mem:
            buf = ctypes.c_void_p(_address(a.value))
        elif a.kind is KernelArgKind.local:
            local = -(-local // LOCAL_ALIGN) * LOCAL_ALIGN
            buf = ctypes.c_int64(local)
            local += int(a.value)
        else:
            raise exception(errc.kernel_argument, f"unknown kernel argument kind {a.kind}")
        keep.append(buf)
        ptrs.append(ctypes.addressof(buf))
    argv = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
    keep.append(argv)
    return argv, keep, local


def _address(value) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    if hasattr(value, "ptr"):
        return int(value.ptr)
    if hasattr(value, "__array_interface__"):
        return int(value.__array_interface__["data"][0])
    raise exception(errc.kernel_argument, f"cannot pass {type(value).__name__} as memory")


class _Arena(threading.local):
    """Per-thread work-group local memory, grown on demand, 64-byte aligned."""

    def __init__(self):
        self.buf, self.size = None, 0

    def get(self, nbytes: int) -> int:
        if nbytes == 0:
            return 0
        if nbytes > self.size:
            self.buf = ctypes.create_string_buffer(nbytes + LOCAL_ALIGN)
            self.size = nbytes
        addr = ctypes.addressof(self.buf)
        return -(-addr // LOCAL_ALIGN) * LOCAL_ALIGN


class WorkerPool:
    """``n - 1`` persistent daemon threads plus the caller; or, pinned to ``cores`` (a
    sub-device's), ``n`` threads confined to those cores while the caller waits: the
    caller's thread belongs to the user and may run anywhere."""

    def __init__(self, n: int | None = None, cores: Sequence[int] | None = None):
        self.cores = tuple(cores) if cores else None
        self.n = max(1, n or (len(self.cores) if self.cores else config.num_threads()))
        self._arena = _Arena()
        # Started by the first launch that needs them: small launches run inline.
        self._queues: list | None = None
        self._start_lock = threading.Lock()
        _pools.add(self)

    def after_fork_in_child(self) -> None:
        """A forked child has only the forking thread: the workers (and any lock they
        held) are gone, so the next large launch starts new ones."""
        self._queues = None
        self._start_lock = threading.Lock()
        self._arena = _Arena()

    def _start(self) -> list:
        with self._start_lock:
            if self._queues is None:
                count = self.n if self.cores else self.n - 1
                queues = [SimpleQueue() for _ in range(count)]
                for i, q in enumerate(queues):
                    threading.Thread(target=self._work, args=(q,), daemon=True,
                                     name=f"pysycl-native-{i}").start()
                self._queues = queues
            return self._queues

    def _work(self, q: SimpleQueue):
        if self.cores:
            _pin_current_thread(self.cores)
        while True:
            job = q.get()
            error = None
            try:
                self._drain(job)
            except Exception as e:  # noqa: BLE001 - handed to the launching thread
                error = e
            finally:
                job[-1].put(error)   # (the launching thread always hears back)

    def _drain(self, job) -> None:
        """Run chunks of the launch until none is left or the launch is stopped (chunks
        are taken in order from a shared counter: a thread that is slowed down, by
        another process on its core say, takes fewer)."""
        fn, argv, words, bounds, counter, local, stop, _ = job
        mem = self._arena.get(local) if local else 0
        last = len(bounds) - 1
        while not stop:
            i = next(counter)   # atomic under the GIL
            if i >= last:
                return
            fn(argv, words, bounds[i], bounds[i + 1], mem)

    def run(self, fn, argv: int, words: int, ngroups: int, local: int, inline: bool,
            items: int = 0) -> None:
        if self.cores:
            self._dispatch(fn, argv, words, 0, ngroups, local, items >= DYNAMIC_ITEMS, 0.0,
                           caller_works=False)
            return
        if self.n == 1 or ngroups == 1:
            fn(argv, words, 0, ngroups, self._arena.get(local) if local else 0)
            return
        first, rest_seconds = 0, 0.0
        if inline:
            mem = self._arena.get(local) if local else 0
            start = perf_counter()
            fn(argv, words, 0, 1, mem)
            rest_seconds = (perf_counter() - start) * (ngroups - 1)
            if rest_seconds < INLINE_SECONDS:
                fn(argv, words, 1, ngroups, mem)
                return
            first = 1                # heavy work-items: the rest goes to the pool
        self._dispatch(fn, argv, words, first, ngroups, local,
                       items >= DYNAMIC_ITEMS or first > 0, rest_seconds, caller_works=True)

    def _dispatch(self, fn, argv, words, first: int, ngroups: int, local: int,
                  dynamic: bool, rest_seconds: float, caller_works: bool) -> None:
        """Run groups ``first..ngroups`` on the workers (and the caller when it works).
        Big or heavy launches go in at least CHUNKS_PER_THREAD chunks per thread, handed
        out dynamically; smaller ones in one contiguous share each (a chunk costs a GIL
        round trip)."""
        rest = ngroups - first
        workers = min(self.n, rest)
        chunks = workers
        if dynamic:
            chunks = min(rest, max(workers * CHUNKS_PER_THREAD,
                                   int(rest_seconds / HEAVY_CHUNK_SECONDS)))
        bounds = [first + rest * i // chunks for i in range(chunks + 1)]
        done = SimpleQueue()
        stop: list = []      # non-empty: start no further chunk (an interrupt)
        job = (fn, argv, words, bounds, itertools.count(), local, stop, done)
        queues = self._queues or self._start()
        helpers = workers - 1 if caller_works else workers
        for i in range(helpers):
            queues[i].put(job)
        error = None
        waiting = helpers
        try:
            if caller_works:
                try:
                    self._drain(job)
                except Exception as e:  # noqa: BLE001 - raised after the workers finished
                    error = e
            while waiting:
                error = done.get() or error
                waiting -= 1
        except BaseException:
            # KeyboardInterrupt (checked between chunks and while waiting): the workers
            # finish the chunk they are in and start no other; then it propagates.
            stop.append(True)
            while waiting:
                done.get()
                waiting -= 1
            raise
        if error is not None:
            raise error


def _pin_current_thread(cores: Sequence[int]) -> None:
    """Confine the calling thread to ``cores`` (Linux applies an affinity call on pid 0
    to the calling thread only); elsewhere the thread stays unpinned."""
    try:
        os.sched_setaffinity(0, set(cores))
    except (AttributeError, OSError):
        pass


_pinned_pools: dict[tuple[int, ...], WorkerPool] = {}


def pool_for(cores: Sequence[int]) -> WorkerPool:
    """The process's pool pinned to ``cores`` (one per core set: every queue of a
    sub-device, and equal sub-devices, share it)."""
    key = tuple(cores)
    with _pools_lock:
        pool = _pinned_pools.get(key)
        if pool is None:
            pool = _pinned_pools[key] = WorkerPool(len(key), key)
        return pool


_pools: "weakref.WeakSet[WorkerPool]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    global _pools_lock
    _pools_lock = threading.Lock()
    for pool in list(_pools):
        pool.after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


class NativeExecutor:
    """Loads objects into the process-wide LLJIT; shares one :class:`WorkerPool`."""

    def __init__(self, num_threads: int | None = None):
        self.pool = WorkerPool(num_threads)

    def load(self, obj: bytes, kernel_names: Sequence[str],
             device_global_ids: Sequence[str] = (), symbols: Sequence[str] = ()) -> NativeProgram:
        """Link ``obj`` (from NativeCpuCompiler.compile) under a fresh library name;
        libm and the C runtime come from the current process."""
        obj = bytes(obj)
        # JITLink aborts (assertions) or writes out of bounds on a malformed object:
        # every object is checked first, and must define what will be looked up.
        defined = set(check_object(obj))
        entries = {k: entry_symbol(k) for k in kernel_names}
        exported = list(entries.values()) + [device_global_symbol(u) for u in device_global_ids]
        exported += [s for s in CHECK_SYMBOLS if s in defined]   # checked builds
        missing = [s for s in exported + list(symbols) if s not in defined]
        if missing:
            raise exception(errc.invalid, f"native object: it does not define "
                                          f"{', '.join(missing)}")
        builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
        for s in exported + list(symbols):
            builder.export_symbol(s)
        try:
            tracker = builder.link(lljit(), next_library_name("native"))
        except RuntimeError as e:
            raise exception(errc.build, f"loading the native object failed: {e}") from None
        kernels = {k: ENTRY_TYPE(tracker[s]) for k, s in entries.items()}
        return NativeProgram(tracker, kernels, self.pool)


_default: NativeExecutor | None = None


def default_executor() -> NativeExecutor:
    """The process's executor (one pool of config.num_threads() threads)."""
    global _default
    with _pools_lock:
        if _default is None:
            _default = NativeExecutor()
        return _default
