"""Bundles of many kernels on the native CPU: kernels compile on several threads with the
same binaries as one at a time; a warm start reads one index entry for the bundle's
summaries and one for its links, and each binary only when its kernel first launches;
a binary gone from the cache is rebuilt then. Results are checked against NumPy."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

N_KERNELS = 6

_KERNEL = textwrap.dedent('''
    @sycl.kernel
    def k{i}(it: sycl.item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32], a: f32):
        j = it.get_id(0)
        if x[j] > f32(0):
            y[j] = a * x[j] + y[j]
        else:
            y[j] = y[j] - f32({i})
''')

RUN = textwrap.dedent('''
    import hashlib, json, sys
    import numpy as np
    import pysycl as sycl
    import many
    from pysycl.bundle import stats

    q = sycl.queue()
    n = int(sys.argv[1])
    kernels = [getattr(many, f"k{i}") for i in range(n)]
    kb = sycl.build(sycl.get_kernel_bundle(
        q.get_context(), sycl.bundle_state.input,
        kernel_ids=[sycl.get_kernel_id(k) for k in kernels]))
    after_build = stats.snapshot()
    rng = np.random.default_rng(3)
    xs, ys = rng.standard_normal((2, 257), dtype=np.float32)
    x = sycl.malloc_shared((257,), np.float32, q)
    x[:] = xs
    results, reads = [], []
    for i, k in enumerate(kernels):
        y = sycl.malloc_shared((257,), np.float32, q)
        y[:] = ys
        def cgf(cgh, k=k, y=y):
            cgh.use_kernel_bundle(kb)
            cgh.parallel_for(sycl.range(257), k, x, y, np.float32(1.5))
        q.submit(cgf).wait()
        expected = np.where(xs > 0, 1.5 * xs.astype(np.float64) + ys, ys - np.float32(i))
        # a * x + y may be fused: either rounding of the exact result passes
        results.append(bool(np.allclose(np.asarray(y), expected, rtol=1e-6, atol=1e-6)))
        reads.append(stats.warm_binary_reads)
    digests = [hashlib.sha256(img._binary).hexdigest() for img in kb]
    print(json.dumps({"ok": results, "after_build": after_build, "reads": reads,
                      "end": stats.snapshot(), "digests": digests}))
''')


@pytest.fixture
def project(tmp_path):
    with open(tmp_path / "many.py", "w") as f:
        f.write("import numpy as np\nimport pysycl as sycl\nf32 = np.float32\n")
        for i in range(N_KERNELS):
            f.write(_KERNEL.format(i=i))
    (tmp_path / "run.py").write_text(RUN)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSYCL_WARM_INDEX",
                                                            "PYSYCL_BUILD_JOBS")}
    env.update(PYSYCL_DEVICE_SELECTOR="native_cpu",
               PYTHONPATH=str(tmp_path) + os.pathsep + env.get("PYTHONPATH", ""))

    def run(cache="cache", n=N_KERNELS, **extra):
        out = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(n)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env=dict(env, PYSYCL_CACHE_DIR=str(tmp_path / cache), **extra))
        assert out.returncode == 0, out.stderr[-3000:]
        res = json.loads(out.stdout.strip().splitlines()[-1])
        assert res["ok"] == [True] * n
        return res

    return types.SimpleNamespace(dir=tmp_path, run=run)


def test_threads_build_the_same_binaries_as_one_at_a_time(project):
    one = project.run(cache="c1", PYSYCL_BUILD_JOBS="1")
    three = project.run(cache="c3", PYSYCL_BUILD_JOBS="3")
    assert one["after_build"]["target_compile_count"] == N_KERNELS
    assert three["after_build"]["target_compile_count"] == N_KERNELS
    assert three["digests"] == one["digests"]


def test_warm_start_reads_one_entry_per_kind_and_binaries_on_launch(project):
    project.run()                  # cold: builds, writes the entries
    warm = project.run()
    built = warm["after_build"]
    assert built["codegen_count"] == 0 and built["frontend_count"] == 0
    assert built["warm_index_hits"] == N_KERNELS
    assert built["warm_index_reads"] == 2          # the summaries, the links
    assert built["warm_binary_reads"] == 0         # none read before a launch
    assert warm["reads"] == list(range(1, N_KERNELS + 1))


def test_bundle_link_entries_are_one_file(project):
    """A cold build writes one index entry per kernel (its summary) and two for the
    bundle (summaries, links): the kernels' link entries live in the bundle's."""
    project.run()
    entries = [p for p in (project.dir / "cache").glob("v*/*/*.idx")]
    assert len(entries) == N_KERNELS + 2


def test_one_kernel_bundle_keeps_its_link_entry(project):
    """No bundle-wide entry for one kernel: its link entry is written on its own, and
    the next start finds it."""
    project.run(cache="one", n=1)
    warm = project.run(cache="one", n=1)["after_build"]
    assert warm["warm_index_hits"] == 1 and warm["codegen_count"] == 0
    assert warm["frontend_count"] == 0


def test_binary_gone_from_the_cache_is_rebuilt_at_launch(project):
    first = project.run()
    project.run()
    binaries = [p for p in (project.dir / "cache").glob("v*/*/*") if p.suffix != ".idx"
                and not p.name.startswith(".")]
    assert len(binaries) == N_KERNELS
    for p in binaries:
        p.unlink()
    again = project.run()          # the index still names them: rebuilt when launched
    assert again["end"]["target_compile_count"] == N_KERNELS
    assert again["digests"] == first["digests"]


_THREADS_PROGRAM = textwrap.dedent('''
    import hashlib, json, sys, textwrap, threading
    from pysycl.backends.native_cpu.compiler import NativeCpuCompiler

    def kernel_ir(i):
        return textwrap.dedent(f"""
            define void @k{i}(ptr noalias %x, ptr noalias %y, i64 %n) {{
            entry:
              br label %loop
            loop:
              %i = phi i64 [ 0, %entry ], [ %next, %loop ]
              %px = getelementptr float, ptr %x, i64 %i
              %py = getelementptr float, ptr %y, i64 %i
              %v = load float, ptr %px
              %w = fmul float %v, {i + 2}.0
              store float %w, ptr %py
              %next = add i64 %i, 1
              %done = icmp eq i64 %next, %n
              br i1 %done, label %exit, label %loop
            exit:
              ret void
            }}""")

    irs = [kernel_ir(i) for i in range(6)]
    compiler = NativeCpuCompiler()
    expected = [hashlib.sha256(compiler.compile(ir, [f"k{i}"])).hexdigest()
                for i, ir in enumerate(irs)]
    got, errors = [], []

    def work(t):
        try:
            for r in range(4):
                i = (t + r) % len(irs)
                got.append((i, hashlib.sha256(compiler.compile(irs[i], [f"k{i}"])).hexdigest()))
        except BaseException as e:
            errors.append(repr(e))
    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"errors": errors, "same": all(d == expected[i] for i, d in got),
                      "count": len(got), "distinct": len(set(expected))}))
''')


def test_compiler_is_safe_on_many_threads():
    """One compiler object, six threads compiling six kernels at once, in LLVM together
    (outside llvmlite's lock): each gets the bytes a lone compile gives (a TargetMachine
    per thread, an LLVM context per module). In a subprocess: a crash is an answer."""
    out = subprocess.run([sys.executable, "-c", _THREADS_PROGRAM], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res == {"errors": [], "same": True, "count": 24, "distinct": 6}


def test_heavy_llvm_calls_bypass_llvmlites_lock():
    """With the installed llvmlite, parse, verify, optimisation and emission are the
    ctypes functions themselves, not llvmlite's wrappers that take its process-wide
    lock (with those, a bundle's build threads take turns in LLVM)."""
    from llvmlite.binding import ffi
    from pysycl.backends.native_cpu import llvm_threads
    for name in ("LLVMPY_ParseAssembly", "LLVMPY_VerifyModule",
                 "LLVMPY_RunNewModulePassManager", "LLVMPY_TargetMachineEmitToMemory"):
        raw = llvm_threads.raw_function(name)
        assert raw is not getattr(ffi.lib, name)
        assert raw.argtypes == getattr(ffi.lib, name).argtypes


def test_checked_builds_stay_checked_on_build_threads(monkeypatch):
    """``toolchain.checked_builds()`` (bundle files nobody vouches for are built
    checked) is a context variable: every build thread must see it."""
    from pysycl.bundle import executables, toolchain
    seen: list = []

    def record(lk, devices, mode, values):
        seen.append((lk.name, toolchain.build_checks()))
        return lk.name
    monkeypatch.setattr(executables, "build_executable", record)
    monkeypatch.setattr(executables, "group_by_target", lambda devices: [list(devices)])
    monkeypatch.setattr(executables, "kernel_compatible", lambda fn, d: True)
    monkeypatch.setenv("PYSYCL_BUILD_JOBS", "3")
    jobs = [types.SimpleNamespace(name=f"k{i}", kid=types.SimpleNamespace(
        get_name=lambda i=i: f"k{i}"), module=types.SimpleNamespace(
        function=lambda name: None)) for i in range(8)]
    with toolchain.checked_builds():
        checked = toolchain.build_checks()
        assert executables.build_for_devices(jobs, ["dev"], "auto", None) == \
            [f"k{i}" for i in range(8)]
    assert checked and sorted(seen) == sorted((f"k{i}", checked) for i in range(8))
    assert toolchain.build_checks() != checked
