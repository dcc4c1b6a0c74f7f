"""A whole runtime program as a user writes it: USM, buffers, host tasks, events."""
import time

import numpy as np

import pysycl as sycl


def test_pipeline_of_host_tasks_and_memory_commands():
    q = sycl.queue()
    n = 1000
    src = np.arange(n, dtype=np.float64)
    dev = sycl.malloc_device(n, np.float64, q)
    shared = sycl.malloc_shared(n, np.float64, q)
    e_in = q.copy(src, dev)
    e_mid = q.memcpy(shared, dev, depends_on=e_in)

    def square(cgh):
        cgh.depends_on(e_mid)
        cgh.host_task(lambda: np.square(np.asarray(shared), out=np.asarray(shared)))
    e_sq = q.submit(square)
    total = np.zeros(1)
    with sycl.buffer(total) as tb:
        def reduce(cgh):
            cgh.depends_on(e_sq)
            acc = sycl.accessor(tb, cgh, sycl.write_only, sycl.no_init)
            cgh.host_task(lambda: acc.__setitem__(0, np.asarray(shared).sum()))
        q.submit(reduce)
    q.wait_and_throw()
    assert total[0] == float((src ** 2).sum())
    sycl.free(dev, q)
    sycl.free(shared, q)


def test_out_of_order_queue_buffer_ordering_with_slow_first_writer():
    q = sycl.queue()
    data = np.zeros(8, np.int32)
    log = []
    with sycl.buffer(data) as b:
        def first(cgh):
            acc = sycl.accessor(b, cgh, sycl.write_only)
            cgh.host_task(lambda: (time.sleep(0.1), acc.__setitem__(slice(None), 1),
                                   log.append("w1")))

        def reader(cgh):
            acc = sycl.accessor(b, cgh, sycl.read_only)
            cgh.host_task(lambda: log.append(("r", int(acc[0]))))

        def second(cgh):
            acc = sycl.accessor(b, cgh, sycl.read_write)
            cgh.host_task(lambda: (acc.__setitem__(slice(None), acc[0] + 10),
                                   log.append("w2")))
        for cgf in (first, reader, second):
            q.submit(cgf)
    assert log == ["w1", ("r", 1), "w2"] and data.tolist() == [11] * 8


def test_kernel_on_the_default_device():
    q = sycl.queue()
    x = sycl.malloc_shared(64, np.float32, q)
    np.asarray(x)[:] = 2
    q.parallel_for(64, _scale, x, np.float32(1.5)).wait()
    assert np.asarray(x).tolist() == [3.0] * 64
    with sycl.buffer(np.ones((8, 8), np.float32)) as b:
        q.submit(lambda cgh: cgh.parallel_for(
            sycl.nd_range(sycl.range(8, 8), sycl.range(4, 4)), _inc,
            sycl.accessor(b, cgh, sycl.read_write)))
        with sycl.host_accessor(b, sycl.read_only) as v:
            assert float(v.sum()) == 128.0


@sycl.kernel
def _scale(it: sycl.id[1], x: sycl.global_ptr[np.float32], a: np.float32):
    x[it[0]] = x[it[0]] * a


@sycl.kernel
def _inc(it: sycl.nd_item[2], acc: sycl.accessor[np.float32, 2, sycl.read_write]):
    acc[it.get_global_id(0), it.get_global_id(1)] += 1.0
