"""``PYSYCL_TRACE`` and ``pysycl trace``: a timeline of commands and builds in the Chrome
trace format, written at exit (each case in a fresh process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pysycl as sycl

SRC = str(Path(sycl.__file__).resolve().parents[1])

PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np, pysycl as sycl

    @sycl.kernel
    def scale(i: sycl.id[1], a: sycl.global_ptr[np.float32], f: np.float32):
        a[i] = a[i] * f

    q = sycl.queue(sycl.cpu_selector_v)
    x = np.random.default_rng(1).random(500, dtype=np.float32)
    a = sycl.malloc_shared(500, np.float32, q)
    q.memcpy(a, x, x.nbytes).wait()
    q.parallel_for(500, scale, a, np.float32(3)).wait()
    with sycl.buffer(x.copy()) as b:
        q.submit(lambda h: h.parallel_for(500, scale, b.get_access(h), np.float32(2))).wait()
    q.submit(lambda h: h.host_task(lambda: None)).wait()
    print("OK", np.allclose(a.to_numpy(), 3 * x), q.has_property(sycl.property.queue.enable_profiling))
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
""")


def _env(tmp_path, **extra):
    return dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
                PYSYCL_CACHE_DIR=str(tmp_path / "cache"), **extra)


def _slices(path) -> list[dict]:
    data = json.loads(Path(path).read_text())
    events = data["traceEvents"]
    tracks = {e["tid"] for e in events if e["ph"] == "M"}
    slices = [e for e in events if e["ph"] == "X"]
    assert all(e["tid"] in tracks and e["dur"] >= 0 and e["ts"] > 0 for e in slices)
    return slices


def test_trace_records_commands_and_builds(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    trace = tmp_path / "run.json"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=_env(tmp_path, PYSYCL_TRACE=str(trace)), timeout=300)
    assert out.returncode == 0, out.stderr
    assert "OK True False" in out.stdout        # results right; the user's property unchanged
    slices = _slices(trace)
    names = [e["name"] for e in slices]
    assert names.count("kernel __main__.scale") == 2
    assert "memcpy" in names and "host_task" in names
    assert any(e["cat"] == "build" and "__main__.scale" in e["name"] for e in slices)
    kernel = next(e for e in slices if e["name"] == "kernel __main__.scale")
    assert kernel["args"]["backend"] == "native_cpu" and kernel["args"]["failed"] is False


def test_pysycl_trace_runs_the_script_with_its_arguments(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    out = subprocess.run([sys.executable, "-m", "pysycl", "trace", str(script), "3"],
                         capture_output=True, text=True, env=_env(tmp_path), timeout=300)
    assert out.returncode == 3, out.stderr                 # the script's own exit status
    assert "trace written to" in out.stderr
    assert any(e["name"] == "kernel __main__.scale" for e in _slices(tmp_path / "app.trace.json"))


def test_no_trace_without_the_variable(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    env = _env(tmp_path)
    env.pop("PYSYCL_TRACE", None)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=300, cwd=tmp_path)
    assert out.returncode == 0 and "OK True False" in out.stdout
    assert not list(tmp_path.glob("*.json"))
