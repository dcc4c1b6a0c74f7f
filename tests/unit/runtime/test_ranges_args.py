"""Index spaces, nd_range validation and kernel-argument packing."""
from types import SimpleNamespace as P

import numpy as np
import pytest

from pysycl.backends.base import KernelArgKind
from pysycl.runtime.args import Packer, check_launch
from runtime_api import sycl

DEV = P(max_work_group_size=256, max_work_item_sizes=(64, 128, 256))


def test_ranges():
    r = sycl.range(4, 8)
    assert r.size() == 32 and tuple(r) == (4, 8) and sycl.range(5) == (5,)
    nd = sycl.nd_range(sycl.range(8, 8), sycl.range(4, 2))
    assert nd.get_group_range() == (2, 4) and tuple(nd.get_offset()) == (0, 0)
    assert sycl.id(1, 2)[1] == 2
    assert sycl.id[2].kind == "id" and sycl.item[2].dims == 2 and sycl.nd_item[3].dims == 3
    with pytest.raises(sycl.exception):
        sycl.range(1, 2, 3, 4)


def test_range_and_id_arithmetic_is_elementwise():
    # SYCL 2020 4.9.1.1 / 4.9.1.3: element-wise with the same type or a scalar, on
    # either side (as tuples, `*` would repeat and `+` concatenate).
    rng = np.random.default_rng(4)
    for dims in (1, 2, 3):
        a = rng.integers(1, 1000, dims)
        b = rng.integers(1, 50, dims)
        k = int(rng.integers(1, 9))
        for cls in (sycl.range, sycl.id):
            x, y = cls(*a.tolist()), cls(*b.tolist())
            cases = [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a // b),
                     (x // y, a // b), (x % y, a % b), (x << y % 8, a << b % 8),
                     (x >> y % 8, a >> b % 8), (x & y, a & b), (x | y, a | b),
                     (x ^ y, a ^ b), (x + k, a + k), (k + x, k + a), (x * k, a * k),
                     (k * x, k * a), (x / k, a // k), (x % k, a % k), (k - y % k, k - b % k)]
            for got, want in cases:
                assert type(got) is cls and list(got) == want.tolist()
    r = sycl.range(8, 4)
    r += 2
    assert r == sycl.range(10, 6)
    assert sycl.nd_range(sycl.range(4, 2) * 8, sycl.range(4, 2)).get_group_range() == (8, 8)
    assert sycl.id(1, 2) + sycl.range(3, 4) == sycl.id(4, 6)
    with pytest.raises(TypeError) as e:
        sycl.range(1, 2) + sycl.range(1, 2, 3)
    assert isinstance(e.value, sycl.exception) and e.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as e:
        sycl.range(1, 2) - 3                     # no size_t wrap-around
    assert e.value.code() == sycl.errc.invalid


@pytest.mark.parametrize("g, l, words", [
    ((10,), (4,), "not a multiple"),
    ((256, 256), (32, 16), "max_work_group_size"),
    ((256, 8), (256, 1), "max_work_item_sizes"),   # D-dim: the last D limits (128, 256)
    ((8, 8), (0, 8), "empty"),
    ((8, 8), (8,), "differ"),
])
def test_bad_nd_ranges(g, l, words):
    with pytest.raises(sycl.exception) as e:
        check_launch(DEV, g, l, "my_kernel")
    assert e.value.code() == sycl.errc.nd_range
    assert words in str(e.value) and "my_kernel" in str(e.value)


def test_good_nd_ranges():
    check_launch(DEV, (64, 64), (8, 16), "k")
    check_launch(DEV, (10,), None, "k")
    # A 1-D range is checked against the last limit (SYCL order, as CUDA reports it).
    check_launch(DEV, (256,), (256,), "k")


def _params(*specs):
    return [P(name=n, kind=k, dtype=None if d is None else np.dtype(d), dims=dims, mode=m)
            for n, k, d, dims, m in specs]


def test_scalar_and_struct_packing_and_errors():
    pt = np.dtype([("x", np.float32), ("y", np.int32)], align=True)
    pk = Packer(_params(("it", "index", None, 1, None), ("n", "scalar", np.int32, 0, None),
                        ("s", "scalar", np.float32, 0, None), ("p", "struct", pt, 0, None)),
                "k")
    args, local = pk.pack((3, 1.5, (2.0, 7)), None)
    assert [a.kind for a in args] == [KernelArgKind.scalar] * 2 + [KernelArgKind.bytes]
    assert args[0].value == np.int32(3).tobytes() and args[1].value == np.float32(1.5).tobytes()
    assert args[2].value == np.array((2.0, 7), pt).tobytes() and local == 0
    for bad, word in (((3,), "takes 3"), (("x", 1.0, (0, 0)), "'n'"),
                      ((2.5, 1.0, (0, 0)), "not an integer"), ((2**40, 1.0, (0, 0)), "fit")):
        with pytest.raises(sycl.exception) as e:
            pk.pack(bad, None)
        assert e.value.code() == sycl.errc.kernel_argument and word in str(e.value)


def test_pointer_accessor_and_local_packing():
    q = sycl.queue(sycl.cpu_selector_v)
    a = sycl.malloc_device(8, np.float32, q)
    buf = sycl.buffer(np.zeros((4, 6), np.float32))
    pk = Packer(_params(("p", "global_ptr", np.float32, 0, None),
                        ("acc", "accessor", np.float32, 2, sycl.read_write),
                        ("tmp", "local_accessor", np.float32, 1, None)), "k")
    seen = {}

    def cgf(cgh):
        acc = sycl.accessor(buf, cgh, sycl.read_write)
        seen["args"] = pk.pack((a, acc, cgh.local_accessor(np.float32, 10)), cgh)
    q.submit(cgf)
    args, local = seen["args"]
    kinds = [x.kind for x in args]
    assert kinds == [KernelArgKind.mem, KernelArgKind.mem] + [KernelArgKind.scalar] * 7 + \
        [KernelArgKind.local, KernelArgKind.scalar]
    assert args[1].value == buf._mem._host.ctypes.data
    # access range, memory range, access offset, base
    assert [int.from_bytes(x.value, "little") for x in args[2:9]] == [4, 6, 4, 6, 0, 0, 0]
    assert args[9].value == 40 and local == 40
    wrong = sycl.malloc_device(8, np.int32, q)
    with pytest.raises(sycl.exception) as e:
        q.submit(lambda cgh: pk.pack((wrong, None, None), cgh))
    assert e.value.code() == sycl.errc.kernel_argument and "'p'" in str(e.value)
    # host NumPy memory is a valid pointer on a host-accessible device
    host = np.zeros(3, np.float32)
    out = []
    q.submit(lambda cgh: out.append(pk.steps[0](host, [], cgh, [])))


def test_a_numpy_scalar_is_no_memory_for_a_pointer_parameter():
    # np.float32(1.0) exposes __array_interface__ over a temporary copy of its value: a
    # kernel writing through it would change nothing the program can see.
    @sycl.kernel
    def doubles(it: sycl.item[1], a: sycl.global_ptr[np.float32]):
        a[it] = a[it] * 2.0

    q = sycl.queue()
    with pytest.raises(TypeError, match="NumPy scalar"):
        q.parallel_for(1, doubles, np.float32(1.0))
    host = np.random.default_rng(5).random(4, dtype=np.float32)
    want = host * 2
    q.parallel_for(4, doubles, host).wait()
    np.testing.assert_array_equal(host, want)
