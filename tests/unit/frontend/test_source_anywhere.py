"""Kernels whose source is not a file: ``python -c``, ``sycl.kernel(source=...)``,
``exec``; and the hint for a plain Python function called from a kernel."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl

SRC = str(Path(sycl.__file__).resolve().parents[1])


def _env():
    return dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_kernel_defined_on_the_command_line_compiles():
    program = textwrap.dedent("""
        import numpy as np, pysycl as sycl
        @sycl.kernel
        def axpy(i: sycl.id[1], y: sycl.global_ptr[np.float32], x: sycl.global_ptr[np.float32]):
            y[i] = np.float32(2) * x[i] + y[i]
        rng = np.random.default_rng(3)
        x, y = rng.random(100, dtype=np.float32), rng.random(100, dtype=np.float32)
        q = sycl.queue(sycl.cpu_selector_v)
        dx, dy = sycl.malloc_shared(100, np.float32, q), sycl.malloc_shared(100, np.float32, q)
        dx[:], dy[:] = x, y
        q.parallel_for(100, axpy, dy, dx).wait()
        print("OK", np.allclose(dy.to_numpy(), 2 * x + y))
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         env=_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    assert "OK True" in out.stdout


def test_kernel_from_source_text_runs(queue):
    scale = sycl.kernel(source="""
        def scale(i: sycl.id[1], a: sycl.global_ptr[np.float32], f: np.float32):
            a[i] = a[i] * f
    """)
    x = np.random.default_rng(5).random(64, dtype=np.float32)
    a = sycl.malloc_shared(64, np.float32, queue)
    a[:] = x
    queue.parallel_for(64, scale, a, np.float32(-1.5)).wait()
    np.testing.assert_allclose(a.to_numpy(), -1.5 * x, rtol=1e-6)


def test_device_function_from_source_and_namespace(queue):
    twice = sycl.device(source="def twice(v):\n    return v + v\n")
    env = {"sycl": sycl, "np": np, "twice": twice}
    k = sycl.kernel(source=textwrap.dedent("""
        def use(i: sycl.id[1], a: sycl.global_ptr[np.int32]):
            a[i] = twice(a[i])
    """), namespace=env)
    x = np.arange(-8, 8, dtype=np.int32)
    a = sycl.malloc_shared(16, np.int32, queue)
    a[:] = x
    queue.parallel_for(16, k, a).wait()
    np.testing.assert_array_equal(a.to_numpy(), 2 * x)


def test_errors_in_source_text_point_at_its_line():
    broken = sycl.kernel(source="""
        def broken(i: sycl.id[1], a: sycl.global_ptr[np.int32]):
            a[i] = not_defined_anywhere + 1
    """)
    with pytest.raises(sycl.compile_error) as err:
        broken.ir_module()
    assert "line 3" in str(err.value) and "not_defined_anywhere" in str(err.value)
    with pytest.raises(sycl.compile_error):
        sycl.kernel(source="def bad(:\n    pass\n")
    with pytest.raises(sycl.exception) as err:
        sycl.kernel(source="def a():\n    pass\ndef b():\n    pass\n")
    assert err.value.code() == sycl.errc.invalid
    with pytest.raises(TypeError):
        sycl.kernel(source=b"def a(): pass")


def test_exec_without_source_says_how():
    env = {"sycl": sycl, "np": np}
    exec("@sycl.kernel\ndef hidden(i: sycl.id[1], a: sycl.global_ptr[np.int32]):\n"
         "    a[i] = 1\n", env)
    with pytest.raises(sycl.compile_error, match=r"source=\.\.\."):
        env["hidden"].ir_module()


def plain_helper(v):
    return v * 3


@sycl.kernel
def calls_plain(i: sycl.id[1], a: sycl.global_ptr[np.int32]):
    a[i] = plain_helper(a[i])


def test_calling_a_plain_function_hints_at_sycl_device():
    with pytest.raises(sycl.compile_error, match="@sycl.device"):
        calls_plain.ir_module()
