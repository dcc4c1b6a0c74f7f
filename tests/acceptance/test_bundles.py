"""Kernel bundles as a user writes them (needs the frontend, codegen and runtime)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

sycl = pytest.importorskip("pysycl")
for _name in ("kernel", "external", "queue", "malloc_shared", "get_kernel_bundle"):
    if not hasattr(sycl, _name):
        pytest.skip(f"pysycl.{_name} not available yet", allow_module_level=True)

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "bundle_modules"))


def _run(q, kernel, n=8, bundle=None):
    out = sycl.malloc_shared(n, np.int32, q)

    def cgf(cgh):
        if bundle is not None:
            cgh.use_kernel_bundle(bundle)
        cgh.parallel_for(sycl.range(n), kernel, out)
    q.submit(cgf).wait()
    res = np.asarray(out).copy()
    sycl.free(out, q)
    return res


def test_two_modules_link_through_external_bundle():
    import lib_ext  # noqa: F401
    import use_ext
    q = sycl.queue()
    ctx = q.get_context()
    objs = sycl.get_kernel_bundle(ctx, sycl.bundle_state.object)
    exe = sycl.link(objs)
    assert exe.has_kernel(use_ext.apply)
    assert list(_run(q, use_ext.apply, bundle=exe)) == [3 * i for i in range(8)]


def test_default_lookup_second_submit_no_compile_bundle():
    import lib_ext  # noqa: F401
    import use_ext
    q = sycl.queue()
    _run(q, use_ext.apply)
    from pysycl.bundle import stats
    before = stats.snapshot()
    assert list(_run(q, use_ext.apply)) == [3 * i for i in range(8)]
    assert stats.snapshot()["codegen_count"] == before["codegen_count"]


SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, {mods!r})
    import pysycl as sycl
    from pysycl.bundle import stats
    import lib_ext, use_ext
    q = sycl.queue()
    if sys.argv[1] == "save":
        kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input)
        kb.set_specialization_constant(use_ext.scale_id, 2)
        sycl.save_kernel_bundle(sycl.build(kb), sys.argv[2])
        print(stats.codegen_count)
    else:
        exe = sycl.load_kernel_bundle(q.get_context(), sys.argv[2])
        out = sycl.malloc_shared(4, np.int32, q)
        def cgf(cgh):
            cgh.use_kernel_bundle(exe)
            cgh.parallel_for(sycl.range(4), use_ext.apply, out)
        q.submit(cgf).wait()
        print(np.asarray(out).tolist(), stats.codegen_count)
""")


def test_save_load_in_other_process_bundle(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT.format(mods=str(HERE / "bundle_modules")))
    path = tmp_path / "exe.syclbin"
    env = dict(os.environ, PYSYCL_CACHE="0")
    subprocess.run([sys.executable, str(script), "save", str(path)], check=True, env=env)
    out = subprocess.run([sys.executable, str(script), "load", str(path)], check=True, env=env,
                         capture_output=True, text=True).stdout.strip()
    assert out == "[0, 6, 12, 18] 0"


def test_second_process_hits_disk_cache_bundle(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT.format(mods=str(HERE / "bundle_modules")))
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(tmp_path / "cache"), PYSYCL_CACHE="1")
    counts = [subprocess.run([sys.executable, str(script), "save", str(tmp_path / "x.syclbin")],
                             check=True, env=env, capture_output=True, text=True).stdout.split()[-1]
              for _ in range(2)]
    assert int(counts[0]) > 0 and counts[1] == "0"
