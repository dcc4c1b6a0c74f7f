"""A buffer's destruction waits for its commands and writes the results back (SYCL 2020
4.7.2.3), on every backend: dropped with ``del``, going out of scope, or still alive at
interpreter exit; with a contiguous or a strided host array. Each case runs in a fresh
process (a crash or hang there is a failure)."""
import os
import subprocess
import sys
import textwrap

import pytest

_PRELUDE = """
import atexit, sys
import numpy as np
EXIT = {}
# Registered before pysycl is imported, so it runs after pysycl's own exit hook.
atexit.register(lambda: print("EXIT", EXIT["check"]() if "check" in EXIT else "none",
                              flush=True))
import pysycl as sycl
dev = [d for d in sycl.device.get_devices() if d.backend.name == BACKEND][0]
q = sycl.queue(dev)

@sycl.kernel
def scale(it: sycl.item[2], acc: sycl.accessor[np.float64, 2, sycl.read_write]):
    acc[it] = acc[it] * 3.0 + 1.0

rng = np.random.default_rng(7)
"""

CASES = {
    "del_before_wait": """
        a = rng.random((64, 48)); ref = a * 3.0 + 1.0
        buf = sycl.buffer(a)
        q.submit(lambda cgh: cgh.parallel_for(sycl.range(64, 48), scale,
                                              sycl.accessor(buf, cgh)))
        del buf
        print("OK", NAME, bool(np.array_equal(a, ref)))
    """,
    "strided_array_del": """
        big = rng.random((128, 96)); before = big.copy()
        view = big[::2, ::2]
        buf = sycl.buffer(view)
        q.submit(lambda cgh: cgh.parallel_for(sycl.range(64, 48), scale,
                                              sycl.accessor(buf, cgh)))
        del buf
        ref = before.copy(); ref[::2, ::2] = before[::2, ::2] * 3.0 + 1.0
        print("OK", NAME, bool(np.array_equal(big, ref)))
    """,
    "out_of_scope": """
        def work(a):
            buf = sycl.buffer(a)
            for _ in range(3):
                q.submit(lambda cgh: cgh.parallel_for(sycl.range(64, 48), scale,
                                                      sycl.accessor(buf, cgh)))
        a = rng.random((64, 48)); ref = ((a * 3.0 + 1.0) * 3.0 + 1.0) * 3.0 + 1.0
        work(a)
        print("OK", NAME, bool(np.allclose(a, ref, rtol=0, atol=0)))
    """,
    "sub_buffer_outlives_parent_name": """
        a = rng.random((64, 48)); ref = a.copy(); ref[8:24] = ref[8:24] * 3.0 + 1.0
        buf = sycl.buffer(a)
        sub = sycl.buffer(buf, sycl.id(8, 0), sycl.range(16, 48))
        del buf        # the sub-buffer keeps the parent's memory: no write-back yet
        q.submit(lambda cgh: cgh.parallel_for(sycl.range(16, 48), scale,
                                              sycl.accessor(sub, cgh)))
        del sub
        print("OK", NAME, bool(np.array_equal(a, ref)))
    """,
    "alive_at_exit": """
        a = rng.random((64, 48)); ref = a * 3.0 + 1.0
        buf = sycl.buffer(a)
        q.submit(lambda cgh: cgh.parallel_for(sycl.range(64, 48), scale,
                                              sycl.accessor(buf, cgh)))
        EXIT["check"] = lambda: bool(np.array_equal(a, ref))
        print("OK", NAME, True)
    """,
}



def _run(backend: str, names, tmp_path) -> str:
    script = tmp_path / "case.py"   # kernels compile from source: a file, not -c
    body = "".join(f"NAME = {n!r}\n" + textwrap.dedent(CASES[n]) for n in names)
    script.write_text(f"BACKEND = {backend!r}\n" + _PRELUDE + body)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for n in names:
        assert f"OK {n} True" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    return proc.stdout


def test_dropped_buffer_writes_back(device, tmp_path):
    """del before any wait, a strided array, out of scope, a sub-buffer outliving the
    parent's name: one process runs them in turn."""
    names = [n for n in sorted(CASES) if n != "alive_at_exit"]
    assert "EXIT none" in _run(device.backend.name, names, tmp_path)


def test_buffer_alive_at_exit_writes_back(device, tmp_path):
    assert "EXIT True" in _run(device.backend.name, ["alive_at_exit"], tmp_path)



COLLECTED_INSIDE = """
buffer_mod = sys.modules["pysycl.runtime.buffer"]

a = rng.random((8, 8)); ref = a * 3.0 + 1.0
buf = sycl.buffer(a)
q.submit(lambda cgh: cgh.parallel_for(sycl.range(8, 8), scale, sycl.accessor(buf, cgh)))
other = sycl.buffer(np.zeros(4))
# The collector may run a buffer's destructor wherever an object is allocated, also
# while this thread registers a use of another buffer (holding the registration lock)
# or works on that buffer's memory (holding its lock): the destructor must not wait
# for a lock its own thread holds.
with buffer_mod._access_lock, other._mem._lock:
    del buf
print("OK", NAME, bool(np.array_equal(a, ref)))
"""


def test_a_buffer_collected_while_its_thread_holds_buffer_locks(device, tmp_path):
    script = tmp_path / "case.py"
    script.write_text(f"BACKEND = {device.backend.name!r}\nNAME = 'locks'\n" + _PRELUDE +
                      textwrap.dedent(COLLECTED_INSIDE))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK locks True" in proc.stdout


def test_failed_command_the_buffer_writes_back_and_the_error_is_kept(device):
    """A host task writes into the buffer, then fails. Closing the buffer (end of its
    with block) still writes back and raises the error; a buffer dropped without a
    close leaves the error to its queue (a destructor cannot raise), so q.wait() raises
    it instead of the error being swallowed as 'Exception ignored in __del__'."""
    import gc

    import numpy as np

    import pysycl as sycl
    q = sycl.queue(device)
    rng = np.random.default_rng(17)

    def failing_write(buf, value):
        def cgf(cgh):
            acc = sycl.accessor(buf, cgh, sycl.read_write)

            def task():
                acc[0] = value
                raise ValueError("after the write")
            cgh.host_task(task)
        q.submit(cgf)

    big = rng.random(16)
    view = big[::2]                          # strided: written back from a copy at close
    value = float(rng.random())
    with pytest.raises(ValueError):
        with sycl.buffer(view) as buf:
            failing_write(buf, value)
    assert view[0] == value                  # written back although the command failed
    q.wait()                                 # that error was delivered once, above

    other = rng.random(8)
    kept = other.copy()
    buf = sycl.buffer(other)
    failing_write(buf, value)
    del buf
    gc.collect()
    assert other[0] == value and np.array_equal(other[1:], kept[1:])
    with pytest.raises(ValueError):
        q.wait()


def test_accessor_of_a_temporary_buffer_says_what_happened(device):
    """sycl.accessor(sycl.buffer(a), cgh): the temporary buffer is closed (written back)
    as soon as its last reference goes, before the launch; the error says so and how to
    keep it, rather than only 'closed'."""
    import numpy as np

    import pysycl as sycl
    q = sycl.queue(device)
    arr = np.random.default_rng(4).integers(0, 9, 4).astype(np.int32)
    with pytest.raises(sycl.exception) as info:
        q.submit(lambda cgh: cgh.fill(sycl.accessor(sycl.buffer(arr), cgh), np.int32(1)))
    assert info.value.code() == sycl.errc.invalid
    assert "last reference" in str(info.value) and "variable" in str(info.value)
    with sycl.buffer(arr) as buf:                     # the fix the message names
        q.submit(lambda cgh: cgh.fill(sycl.accessor(buf, cgh), np.int32(1)))
    assert arr.tolist() == [1, 1, 1, 1]


def test_set_final_data_and_set_write_back(device):
    """SYCL 2020 4.7.2.3: set_final_data(array) sends the contents there at close (also
    from a buffer made from a list), set_final_data(None) and set_write_back(False)
    send them nowhere: the array the buffer was made from keeps its values, a strided
    one (which the buffer copies) as a contiguous one (which it worked in until then,
    on a device that reaches host memory)."""
    import numpy as np

    import pysycl as sycl
    q = sycl.queue(device)
    rng = np.random.default_rng(23)

    def add_one(buf):
        q.submit(lambda cgh: cgh.fill(sycl.accessor(buf, cgh, sycl.write_only),
                                      np.float32(7)))

    values = rng.random(8).astype(np.float32)
    out = np.zeros(8, np.float32)
    b = sycl.buffer(list(values), dtype=np.float32)
    b.set_final_data(out)
    add_one(b)
    b.close()
    assert (out == 7).all()
    for made_from in (rng.random(16).astype(np.float32)[::2],    # strided: copied
                      rng.random(8).astype(np.float32)):          # contiguous: in place
        before = made_from.copy()
        redirected = np.zeros(8, np.float64)              # float32 -> float64: same kind
        for configure, where in ((lambda b: b.set_write_back(False), None),
                                 (lambda b: b.set_final_data(None), None),
                                 (lambda b: b.set_final_data(redirected), redirected)):
            with sycl.buffer(made_from) as b:
                configure(b)
                add_one(b)
                with sycl.host_accessor(b, sycl.read_only) as inside:
                    assert (np.asarray(inside) == 7).all()
            np.testing.assert_array_equal(made_from, before)
            if where is not None:
                assert (where == 7).all()
        with sycl.buffer(made_from) as b:                 # write-back set again: written
            b.set_write_back(False)
            b.set_write_back(True)
            add_one(b)
        assert (made_from == 7).all()
    kept = rng.random(8).astype(np.float32)
    with sycl.buffer(kept, properties=[sycl.property.buffer.use_host_ptr()]) as b:
        b.set_write_back(False)   # use_host_ptr: the buffer stays in the array
        assert np.shares_memory(b._mem._host, kept)
        add_one(b)
    parent = sycl.buffer(np.zeros(8, np.float32))
    sub = sycl.buffer(parent, sycl.id(2), sycl.range(4))
    for call in (lambda: sub.set_final_data(out), lambda: sub.set_write_back(False),
                 lambda: parent.set_final_data(np.zeros(4, np.float32)),
                 lambda: parent.set_final_data(np.zeros(8, np.int32))):
        with pytest.raises(sycl.exception) as e:
            call()
        assert e.value.code() == sycl.errc.invalid
    parent.close()
