"""Sub-buffers, ``sycl.buffer(parent, offset, sub_range)`` (SYCL 2020 4.7.2.2): a
contiguous region of the parent sharing its memory; commands on overlapping
sub-buffers run in submission order; results reach the parent's array."""
import numpy as np
import pytest

from runtime_api import sycl


@sycl.kernel
def sub_affine_1d(it: sycl.item[1], acc: sycl.accessor[np.int64, 1, sycl.read_write],
                  k: np.int64):
    acc[it] = acc[it] * k + np.int64(1)


@sycl.kernel
def sub_affine_2d(it: sycl.item[2], acc: sycl.accessor[np.int64, 2, sycl.read_write],
                  k: np.int64):
    acc[it] = acc[it] * k + np.int64(1)


@sycl.kernel
def sub_affine_3d(it: sycl.item[3], acc: sycl.accessor[np.int64, 3, sycl.read_write],
                  k: np.int64):
    acc[it] = acc[it] * k + np.int64(1)


AFFINE = {1: sub_affine_1d, 2: sub_affine_2d, 3: sub_affine_3d}

# (parent shape, offset, sub_range): contiguous regions in 1, 2 and 3 dimensions.
CASES = [((20,), (3,), (11,)), ((8, 6), (2, 0), (3, 6)), ((8, 6), (5, 1), (1, 4)),
         ((4, 5, 6), (1, 0, 0), (2, 5, 6)), ((4, 5, 6), (2, 3, 0), (1, 2, 6)),
         ((4, 5, 6), (3, 4, 2), (1, 1, 3))]


def _region(parent_shape, off, rng):
    """The parent's elements a sub-buffer covers, as a flat index range."""
    start = int(np.ravel_multi_index(off, parent_shape))
    return start, start + int(np.prod(rng))


@pytest.mark.parametrize("shape,off,rng", CASES)
def test_kernel_on_a_sub_buffer_writes_back_through_the_parent(queue, shape, off, rng):
    a = np.random.default_rng(1).integers(-99, 99, shape)
    got = a.copy()
    with sycl.buffer(got) as parent:
        sub = sycl.buffer(parent, sycl.id(*off), sycl.range(*rng))
        assert sub.is_sub_buffer() and not parent.is_sub_buffer()
        assert tuple(sub.get_range()) == rng and sub.get_count() == int(np.prod(rng))
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*rng), AFFINE[len(shape)], sycl.accessor(sub, cgh), np.int64(3)))
        with sycl.host_accessor(sub, sycl.read_only) as v:
            assert v.shape == rng
            lo, hi = _region(shape, off, rng)
            np.testing.assert_array_equal(v, (a.reshape(-1)[lo:hi] * 3 + 1).reshape(rng))
    ref = a.reshape(-1).copy()
    ref[lo:hi] = ref[lo:hi] * 3 + 1
    np.testing.assert_array_equal(got, ref.reshape(shape))


def test_overlapping_sub_buffers_run_in_submission_order(queue):
    """Two overlapping halves written in turn, many times, by kernels and host tasks
    on an out-of-order queue: the result is the sequential one."""
    a = np.random.default_rng(2).integers(-5, 5, 64)
    got = a.copy()
    ref = a.copy()
    with sycl.buffer(got) as parent:
        lo = sycl.buffer(parent, sycl.id(0), sycl.range(40))
        hi = sycl.buffer(parent, sycl.id(24), sycl.range(40))
        for step in range(6):
            if step % 2:
                queue.submit(lambda cgh: cgh.parallel_for(
                    sycl.range(40), sub_affine_1d, sycl.accessor(lo, cgh), np.int64(2)))
                ref[0:40] = ref[0:40] * 2 + 1
            else:
                def cgf(cgh):
                    acc = sycl.accessor(hi, cgh, sycl.read_write)
                    cgh.host_task(lambda: acc.__setitem__(slice(None), acc[:] * -1 + 3))
                queue.submit(cgf)
                ref[24:64] = ref[24:64] * -1 + 3
    np.testing.assert_array_equal(got, ref)


def test_ranged_accessors_and_copies_on_a_sub_buffer(queue):
    a = np.random.default_rng(3).integers(-99, 99, (6, 5, 4))
    got = a.copy()
    out = np.zeros((2, 2, 3), a.dtype)
    src = np.random.default_rng(4).integers(-99, 99, (1, 3, 2))
    with sycl.buffer(got) as parent:
        sub = sycl.buffer(parent, sycl.id(2, 0, 0), sycl.range(3, 5, 4))   # parent[2:5]
        queue.submit(lambda cgh: cgh.copy(
            sycl.accessor(sub, cgh, sycl.range(2, 2, 3), sycl.id(1, 2, 1), sycl.read_only),
            out))
        queue.submit(lambda cgh: cgh.copy(
            src, sycl.accessor(sub, cgh, sycl.range(1, 3, 2), sycl.id(2, 1, 2),
                               sycl.write_only)))
        queue.submit(lambda cgh: cgh.fill(
            sycl.accessor(sub, cgh, sycl.range(1, 1, 4), sycl.id(0, 4, 0), sycl.write_only,
                          sycl.no_init), np.int64(77)))
    np.testing.assert_array_equal(out, a[3:5, 2:4, 1:4])
    ref = a.copy()
    ref[4:5, 1:4, 2:4] = src
    ref[2, 4, :] = 77
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("off,rng,why", [
    ((1, 1), (2, 4), "contiguous"),      # two partial rows
    ((0, 0), (2, 5), "contiguous"),      # rows shorter than the parent's
    ((7, 0), (2, 6), "fit"),             # past the end
    ((0, 5), (1, 2), "fit"),
    ((0,), (3,), "fit"),                 # wrong dimensionality
])
def test_bad_sub_buffers_are_invalid(off, rng, why):
    parent = sycl.buffer(np.zeros((8, 6), np.float32))
    with pytest.raises(sycl.exception) as e:
        sycl.buffer(parent, sycl.id(*off), sycl.range(*rng))
    assert e.value.code() == sycl.errc.invalid
    assert why in str(e.value)
    parent.close()


def test_no_sub_buffer_of_a_sub_buffer():
    parent = sycl.buffer(np.zeros(16, np.float32))
    sub = sycl.buffer(parent, sycl.id(4), sycl.range(8))
    with pytest.raises(sycl.exception) as e:
        sycl.buffer(sub, sycl.id(0), sycl.range(2))
    assert e.value.code() == sycl.errc.invalid
    parent.close()


@sycl.kernel
def flip_sign_bits(it: sycl.item[1], acc: sycl.accessor[np.uint32, 1, sycl.read_write]):
    acc[it] = acc[it] ^ np.uint32(0x80000000)


@sycl.kernel
def bump_halves(it: sycl.item[2], acc: sycl.accessor[np.int16, 2, sycl.read_write]):
    acc[it] = acc[it] + np.int16(1)


def test_reinterpret_shares_memory_and_ordering(queue):
    """SYCL 2020 buffer::reinterpret: the same bytes as other elements and a new range;
    commands on either are ordered; the original writes back."""
    rng = np.random.default_rng(66)
    x = rng.standard_normal(8).astype(np.float32)
    want = -x
    with sycl.buffer(x) as b:
        bits = b.reinterpret(np.uint32)
        assert tuple(bits.get_range()) == (8,) and bits.byte_size() == b.byte_size()
        queue.submit(lambda cgh: cgh.parallel_for(8, flip_sign_bits, sycl.accessor(bits, cgh)))
        halves = b.reinterpret(np.int16, sycl.range(4, 4))
        queue.submit(lambda cgh: cgh.parallel_for(sycl.range(4, 4), bump_halves,
                                                  sycl.accessor(halves, cgh)))
        want = (want.view(np.int16) + 1).view(np.float32)
        with sycl.host_accessor(b, sycl.read_only) as view:
            np.testing.assert_array_equal(np.asarray(view), want)
        assert not halves.is_sub_buffer()
        del bits, halves                   # dropping a reinterpreted buffer closes nothing
    np.testing.assert_array_equal(x, want)
    parent = sycl.buffer(np.arange(8, dtype=np.int32))
    sub = sycl.buffer(parent, sycl.id(2), sycl.range(4)).reinterpret(np.int16)
    with sycl.host_accessor(sub, sycl.read_only) as view:
        assert np.asarray(view).tolist() == [2, 0, 3, 0, 4, 0, 5, 0]
    for bad in (lambda: sycl.buffer(np.zeros(3, np.float32)).reinterpret(np.float64),
                lambda: parent.reinterpret(np.int32, sycl.range(9))):
        with pytest.raises(sycl.exception) as e:
            bad()
        assert e.value.code() == sycl.errc.invalid
    parent.close()
