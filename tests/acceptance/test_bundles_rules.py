"""Kernel-bundle rules end to end: unresolved, duplicate kernel and duplicate symbol at
link, corrupted disk-cache entries, and eight threads on the build/submit path.

Tests that define deliberately broken modules run in a subprocess, so the broken
kernels never join this process's default bundles."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np

import pysycl as sycl
from pysycl.bundle import stats


def _write(dirpath: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (dirpath / name).write_text(textwrap.dedent(text))


def _python(dirpath: Path, code: str, env=None,
            selector: str = "native_cpu") -> subprocess.CompletedProcess:
    (dirpath / "main_script.py").write_text(textwrap.dedent(code))
    env = dict(os.environ if env is None else env, PYSYCL_DEVICE_SELECTOR=selector)
    return subprocess.run([sys.executable, str(dirpath / "main_script.py")], cwd=dirpath,
                          capture_output=True, text=True, env=env, timeout=300)


IMPORTS_MISSING = """
    import numpy as np
    import pysycl as sycl

    @sycl.external
    def never_defined(x: np.int32) -> np.int32:
        ...

    @sycl.kernel
    def calls_missing(it: sycl.id[1], out: sycl.global_ptr[np.int32]):
        out[it[0]] = never_defined(np.int32(it[0]))
"""


def test_unresolved_symbol_at_submit_and_at_link(tmp_path):
    _write(tmp_path, {"imports_missing.py": IMPORTS_MISSING})
    res = _python(tmp_path, """
        import numpy as np, pysycl as sycl
        import imports_missing as m
        q = sycl.queue()
        out = sycl.malloc_shared(4, np.int32, q)
        for where in ("submit", "link"):
            try:
                if where == "submit":
                    q.submit(lambda cgh: cgh.parallel_for(sycl.range(4), m.calls_missing, out)).wait()
                else:
                    sycl.link(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.object,
                                                     kernel=m.calls_missing))
                print(where, "no error")
            except sycl.exception as e:
                print(where, e.code().name, "never_defined" in str(e))
    """)
    assert res.stdout.split("\n")[:2] == ["submit build True", "link build True"], res.stderr


BROKEN_NEIGHBOUR = """
    import numpy as np
    import pysycl as sycl

    @sycl.kernel
    def saxpy(it: sycl.id[1], a: np.float32, x: sycl.global_ptr[np.float32],
              y: sycl.global_ptr[np.float32]):
        y[it[0]] = a * x[it[0]] + y[it[0]]

    @sycl.kernel
    def broken(it: sycl.id[1], y: sycl.global_ptr[np.float32]):
        y[it[0]] = no_such_name * np.float32(2)

    @sycl.external
    def broken_helper(x: np.int32) -> np.int32:
        return x + "text"
"""


def _selector(device_param) -> str:
    return "native_cpu" if device_param.backend == "native_cpu" else \
        f"{device_param.backend}:{device_param.index}"


def test_kernel_that_does_not_compile_fails_only_requests_naming_it(tmp_path, device_param):
    """get_kernel_bundle(ctx, state) without kernel ids holds the kernels that compile
    (DPC++'s bundles never hold one that did not) and warns about the others; a request
    naming the broken kernel raises its compile error."""
    _write(tmp_path, {"neighbours.py": BROKEN_NEIGHBOUR})
    res = _python(tmp_path, """
        import warnings, numpy as np, pysycl as sycl
        import neighbours as m
        q = sycl.queue(); ctx = q.get_context()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kbs = {st.name: sycl.get_kernel_bundle(ctx, st) for st in sycl.bundle_state}
            print("has", sycl.has_kernel_bundle(ctx, sycl.bundle_state.executable))
        print("warned", sorted({str(w.message).split(" is left")[0] for w in caught}))
        for name, kb in kbs.items():
            print(name, kb.has_kernel(m.saxpy), kb.has_kernel(m.broken))
        rng = np.random.default_rng(5)
        x, y = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
        a = np.float32(rng.standard_normal())
        dx, dy = sycl.malloc_shared(1000, np.float32, q), sycl.malloc_shared(1000, np.float32, q)
        np.asarray(dx)[:], np.asarray(dy)[:] = x, y
        def cgf(cgh):
            cgh.use_kernel_bundle(kbs["executable"])
            cgh.parallel_for(1000, m.saxpy, a, dx, dy)
        q.submit(cgf).wait()
        np.save("inputs.npy", np.stack([x, y, np.full_like(x, a)]))
        np.save("result.npy", np.asarray(dy))
        for st in sycl.bundle_state:
            try:
                sycl.get_kernel_bundle(ctx, st, kernel_ids=[sycl.get_kernel_id(m.broken)])
                print("named", st.name, "no error")
            except sycl.compile_error as e:
                print("named", st.name, e.code().name, e.lineno, "no_such_name" in str(e))
        try:
            q.submit(lambda cgh: cgh.parallel_for(4, m.broken, dy)).wait()
        except sycl.compile_error as e:
            print("launch", e.code().name, e.lineno)
    """, selector=_selector(device_param))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[:2] == ["has True",
                         "warned ['kernel neighbours.broken', 'library neighbours']"], res.stdout
    assert lines[2:5] == [f"{st} True False" for st in ("input", "object", "executable")]
    assert lines[5:] == [f"named {st} build 12 True" for st in ("input", "object", "executable")] + \
        ["launch build 12"]
    x, y, a = np.load(tmp_path / "inputs.npy")
    # (atol: CUDA contracts a * x + y into one fma, which rounds once)
    np.testing.assert_allclose(np.load(tmp_path / "result.npy"), a * x + y, rtol=1e-6, atol=1e-6)


DUP = """
    import numpy as np
    import pysycl as sycl

    @sycl.external
    def shared_helper(x: np.int32) -> np.int32:
        return x + np.int32({n})

    @sycl.kernel(name="dup.same_kernel")
    def k(it: sycl.id[1], out: sycl.global_ptr[np.int32]):
        out[it[0]] = shared_helper(np.int32(it[0]))
"""


def test_duplicate_kernel_and_duplicate_symbol_at_link(tmp_path):
    _write(tmp_path, {"dup_a.py": DUP.format(n=1), "dup_b.py": DUP.format(n=2),
                      "sym_a.py": DUP.format(n=1).replace('(name="dup.same_kernel")', ""),
                      "sym_b.py": DUP.format(n=2).replace('(name="dup.same_kernel")', "")})
    res = _python(tmp_path, """
        import pysycl as sycl
        from pysycl.bundle import aot
        import dup_a, dup_b, sym_a, sym_b
        ctx = sycl.queue().get_context()
        def obj(mod):
            kb = aot.compile_modules([mod], ["native_cpu"], "object")
            return sycl.kernel_bundle(ctx, ctx.get_devices(), sycl.bundle_state.object, list(kb))
        for a, b, name in ((dup_a, dup_b, "dup.same_kernel"), (sym_a, sym_b, "shared_helper")):
            try:
                sycl.link([obj(a), obj(b)])
                print("no error")
            except sycl.exception as e:
                print(e.code().name, name in str(e))
    """)
    assert res.stdout.split("\n")[:2] == ["build True", "build True"], res.stderr


CACHED = """
    import sys, numpy as np, pysycl as sycl
    from pysycl.bundle import stats

    @sycl.kernel
    def plus_seven(it: sycl.id[1], out: sycl.global_ptr[np.int32]):
        out[it[0]] = np.int32(it[0]) + np.int32(7)

    q = sycl.queue()
    out = sycl.malloc_shared(3, np.int32, q)
    q.submit(lambda cgh: cgh.parallel_for(sycl.range(3), plus_seven, out)).wait()
    print(np.asarray(out).tolist(), stats.codegen_count)
"""


def test_corrupted_cache_entry_is_rebuilt_with_a_warning(tmp_path):
    (tmp_path / "w").mkdir()
    cache = tmp_path / "cache"
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(cache), PYSYCL_CACHE="1")

    def run():
        res = _python(tmp_path / "w", CACHED, env)
        assert res.returncode == 0, res.stderr
        return res.stdout.strip(), res.stderr

    assert run()[0] == "[7, 8, 9] 1"
    assert run() == ("[7, 8, 9] 0", "")                       # a second process: disk hit
    (entry,) = list(cache.rglob("*.bin"))
    good = entry.read_bytes()
    damaged = bytearray(good)
    for i in (len(good) - 5, len(good) // 2):
        damaged[i] ^= 0xFF
    for bad in (bytes(damaged), good[: len(good) // 3]):     # flipped bytes, truncated
        entry.write_bytes(bad)
        out, err = run()
        assert out == "[7, 8, 9] 1" and "ignoring cache entry" in err
        assert entry.read_bytes() == good                        # rewritten, whole
    assert run() == ("[7, 8, 9] 0", "")


def test_eight_threads_build_and_submit(queue):
    offset = sycl.specialization_id(np.int32, 0)

    @sycl.kernel
    def threaded(it: sycl.id[1], h: sycl.kernel_handler, out: sycl.global_ptr[np.int32]):
        out[it[0]] = np.int32(it[0]) * np.int32(2) + h.get_specialization_constant(offset)

    n, threads = 64, 8
    ctx = queue.get_context()
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=threaded)
    inp.set_specialization_constant(offset, 1000 + os.getpid() % 1000)  # a fresh value set
    before = stats.codegen_count
    results, errors = [None] * threads, []
    barrier = threading.Barrier(threads)

    def work(i):
        try:
            barrier.wait()
            exe = sycl.build(inp)                 # all eight: one build of one key
            for bundle in (exe, None):            # through the bundle, then the default lookup
                out = sycl.malloc_shared(n, np.int32, queue)

                def cgf(cgh):
                    if bundle is not None:
                        cgh.use_kernel_bundle(bundle)
                    else:
                        cgh.set_specialization_constant(offset, i)
                    cgh.parallel_for(sycl.range(n), threaded, out)
                queue.submit(cgf).wait()
                results[i] = (results[i] or ()) + (np.asarray(out).copy(),)
                sycl.free(out, queue)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    base = np.arange(n, dtype=np.int32) * 2
    value = int(inp.get_specialization_constant(offset))
    for i, (via_bundle, default) in enumerate(results):
        np.testing.assert_array_equal(via_bundle, base + value)
        np.testing.assert_array_equal(default, base + i)
    # one build for the bundle's values + one per handler value set (literal images),
    # never two for one key
    assert stats.codegen_count - before <= 1 + threads
