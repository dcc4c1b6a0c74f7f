"""A pysycl kernel applied to every block of a Dask array, on a cluster of worker
processes; each worker keeps one queue and its warm kernels for all the blocks it gets.

>>> import dask.array as da                                          # doctest: +SKIP
>>> x = da.random.random((4096, 4096), chunks=(1024, 4096)).astype(np.float32)
>>> y = x.map_blocks(smooth_rows, dtype=np.float32)                  # doctest: +SKIP

Kernels travel to workers by reference (module and name), so they must live in a
module the workers can import, like this one; the compiled code comes from the
worker's kernel cache (a disk cache that every worker of the user shares safely).
"""
from __future__ import annotations

import functools

import numpy as np

import pysycl as sycl


@sycl.kernel
def smooth_row(it: sycl.item[2], src: sycl.global_ptr[np.float32],
               dst: sycl.global_ptr[np.float32], cols: np.int64):
    """dst = (left + 2 * centre + right) / 4 along each row (edges repeat)."""
    i = it.get_id(0)
    j = it.get_id(1)
    at = i * cols + j
    left = src[at - 1] if j > 0 else src[at]
    right = src[at + 1] if j < cols - 1 else src[at]
    dst[at] = (left + np.float32(2) * src[at] + right) * np.float32(0.25)


@functools.lru_cache(maxsize=None)
def worker_queue() -> sycl.queue:
    """This process's queue (one per worker process, made on first use)."""
    return sycl.queue(sycl.device_for_rank())


def smooth_rows(block: np.ndarray) -> np.ndarray:
    """``smooth_row`` on one block (a 2-D float32 NumPy array); returns a new array."""
    q = worker_queue()
    block = np.ascontiguousarray(block, np.float32)
    src = sycl.malloc_shared(block.shape, np.float32, q)
    dst = sycl.malloc_shared(block.shape, np.float32, q)
    src[:] = block
    q.parallel_for(sycl.range(*block.shape), smooth_row, src, dst,
                   np.int64(block.shape[1])).wait()
    return dst.to_numpy()


def reference(x: np.ndarray) -> np.ndarray:
    p = np.pad(x, ((0, 0), (1, 1)), mode="edge")
    return (p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:]) * np.float32(0.25)
