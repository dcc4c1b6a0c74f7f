"""What a command refers to lives until the device has run it, not until its event is
dropped: a temporary NumPy array used in place by a kernel, or copied by ``q.memcpy``,
queued behind a slow kernel on an in-order or out-of-order queue, whose memory the
program's next allocations would reuse. (Before, an in-order queue let go of the
kernel's array as soon as a newer command came, and the kernel read another array's
values; the copy read freed memory and crashed the process.) Each case runs in a fresh
interpreter: a crash is a failure."""
import json
import subprocess
import sys
import textwrap

from reliability_helpers import device_prelude

SCRIPT = """
import json
import numpy as np


@sycl.kernel
def slow_sum(it: sycl.item[1], x: sycl.global_ptr[np.float32],
             out: sycl.global_ptr[np.float32], n: np.int32, rounds: np.int32):
    acc = 0.0
    for r in range(rounds):
        for j in range(n):
            acc += x[j]
    out[it] = acc / rounds


rng = np.random.default_rng(61)
results = {}
n = 1 << 15
for in_order in (True, False):
    q = sycl.queue(dev, in_order=in_order)
    x = rng.standard_normal(n).astype(np.float32)
    want = float(x.astype(np.float64).sum())
    # A slow kernel first, so what follows waits on the device.
    blocker = np.zeros(4, np.float32)
    q.parallel_for(sycl.range(4), slow_sum, x, blocker, np.int32(n), np.int32(40))
    first = np.zeros(4, np.float32)
    q.parallel_for(sycl.range(4), slow_sum, x.copy(), first, np.int32(n), np.int32(1))
    dst = sycl.malloc_device(n, np.float32, q)
    q.memcpy(dst, x.copy())                           # the copy's source: a temporary
    q.parallel_for(sycl.range(4), slow_sum, x, blocker, np.int32(8), np.int32(1))
    gc.collect()
    junk = [np.full(n, 7.0, np.float32) for _ in range(64)]   # reuses freed memory
    q.wait()
    back = np.empty(n, np.float32)
    q.memcpy(back, dst).wait()
    sycl.free(dst, q)
    results[str(in_order)] = {"kernel": float(first[0]), "want": want,
                              "copy_equal": bool(np.array_equal(back, x))}
print(json.dumps(results))
"""


def test_temporary_arrays_outlive_their_commands(device):
    code = device_prelude(device) + textwrap.dedent(SCRIPT)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for in_order, r in results.items():
        assert abs(r["kernel"] - r["want"]) <= 1e-3 * (1 + abs(r["want"])), (in_order, r)
        assert r["copy_equal"], in_order
