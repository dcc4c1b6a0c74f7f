"""Ctrl-C stops a program that spends its time in kernels or host tasks: SIGINT during
a long native_cpu kernel (the work-groups running finish, no new one starts) or while
waiting for a long host task ends the process by KeyboardInterrupt, long before the
work would have finished; nothing files it away as a command's error."""
import ast
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# The work below would take minutes; an interrupted run ends in seconds. The limit only
# bounds a hang (the test fails instead of waiting for the whole work).
HANG_LIMIT_S = 60

KERNEL = """
import numpy as np, pysycl as sycl

@sycl.kernel
def spin(it: sycl.nd_item[1], out: sycl.global_ptr[np.float32], n: np.int32):
    i = it.get_global_id(0)
    x = np.float32(i)
    for k in range(n):
        x = x * np.float32(1.0000001) + np.float32(1e-7)
    out[i] = x

dev = [d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0]
q = sycl.queue(dev)
out = sycl.malloc_shared(8192, np.float32, q)
q.parallel_for(sycl.nd_range(8192, 64), spin, out, np.int32(10)).wait()   # built and warm
print("go", flush=True)
# 128 work-groups of about 0.2 s each per thread: minutes in all.
q.parallel_for(sycl.nd_range(8192, 64), spin, out, np.int32(1 << 21)).wait()
print("finished", flush=True)
"""

HOST_TASK = """
import time, pysycl as sycl
q = sycl.queue()
ev = q.host_task(lambda: time.sleep(600))
print("go", flush=True)
ev.wait()
print("finished", flush=True)
"""


def _interrupt(code: str, tmp_path):
    script = tmp_path / "program.py"    # (kernels are compiled from their source file)
    script.write_text(textwrap.dedent(code))
    p = subprocess.Popen([sys.executable, str(script)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ))
    try:
        line = p.stdout.readline()
        if line.strip() != "go":
            p.kill()
            pytest.fail(f"the program did not start: {line!r} {p.communicate()[1]}")
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=HANG_LIMIT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"SIGINT did not stop the process within {HANG_LIMIT_S} s")
    return p.returncode, out, err


@pytest.mark.parametrize("code", [KERNEL, HOST_TASK], ids=["native_kernel", "host_task"])
def test_sigint_ends_the_process_by_keyboard_interrupt(code, tmp_path):
    rc, out, err = _interrupt(code, tmp_path)
    assert "finished" not in out
    assert rc != 0
    assert err.rstrip().endswith("KeyboardInterrupt"), err
    assert "never delivered" not in err          # not filed as a command's error


def test_no_handler_swallows_interrupts():
    """No ``except BaseException`` in the sources files an interrupt away."""
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    found = []
    for dirpath, _dirs, files in os.walk(src):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.ExceptHandler) and _catches_everything(node) and \
                        not any(isinstance(n, ast.Raise) for n in ast.walk(node)):
                    found.append(f"{path}:{node.lineno}")
    assert not found, found


def _catches_everything(h) -> bool:
    t = h.type
    names = t.elts if isinstance(t, ast.Tuple) else [t]
    return t is None or any(isinstance(n, ast.Name) and n.id == "BaseException" for n in names)
