"""The build chain (bundle/build_chain.py): every declared stage prints its output when
``PYSYCL_DUMP`` names it (to stderr, or into ``PYSYCL_DUMP_DIR``); an image's LLVM text
is the same whether its binary was just built, read from the disk cache, or found
through the warm-start index; and ``stats.tier_hits`` tells which cache tier answered.
Kernels run in fresh processes, their results checked against NumPy."""
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

from pysycl.bundle import build_chain

KMOD = textwrap.dedent('''
    import numpy as np
    import pysycl as sycl

    gain_id = sycl.specialization_id(np.float32, 1.5)

    @sycl.device
    def shifted(v):
        return v + np.float32(0.25)

    @sycl.kernel
    def axpy(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.float32],
             y: sycl.global_ptr[np.float32]):
        i = it.get_id(0)
        y[i] = h.get_specialization_constant(gain_id) * shifted(x[i]) + y[i]
''')

RUN = textwrap.dedent('''
    import json, sys
    import numpy as np
    import pysycl as sycl
    import kmod
    from pysycl.bundle import stats

    how = sys.argv[1] if len(sys.argv) > 1 else "build"
    q = sycl.queue()
    rng = np.random.default_rng(11)
    xs, ys = rng.standard_normal((2, 100), dtype=np.float32)
    x = sycl.malloc_shared((100,), np.float32, q)
    y = sycl.malloc_shared((100,), np.float32, q)
    x[:], y[:] = xs, ys
    kid = sycl.get_kernel_id(kmod.axpy)
    if how == "default":       # the default lookup: no bundle
        q.parallel_for(sycl.range(100), kmod.axpy, x, y).wait()
        kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.executable,
                                    kernel_ids=[kid])
    else:
        if how == "build":     # input bundle, then sycl.build (compile + link)
            kb = sycl.build(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                                   kernel_ids=[kid]))
        else:                  # an executable bundle straight away
            kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.executable,
                                        kernel_ids=[kid])
        def cgf(cgh):
            cgh.use_kernel_bundle(kb)
            cgh.parallel_for(sycl.range(100), kmod.axpy, x, y)
        q.submit(cgf).wait()
    expected = np.float32(1.5) * (xs + np.float32(0.25)) + ys
    tiers, counts = stats.tier_hits(), stats.snapshot()
    llvm = next(iter(kb)).asm["llvm"]
    print(json.dumps({"ok": bool(np.allclose(np.asarray(y), expected, rtol=1e-6)),
                      "tiers": tiers, "stats": counts, "llvm": llvm}))
''')


@pytest.fixture
def project(tmp_path):
    (tmp_path / "kmod.py").write_text(KMOD)
    (tmp_path / "run.py").write_text(RUN)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYSYCL_DUMP") and k != "PYSYCL_WARM_INDEX"}
    env.update(PYSYCL_CACHE_DIR=str(tmp_path / "cache"), PYSYCL_DEVICE_SELECTOR="native_cpu",
               PYTHONPATH=str(tmp_path) + os.pathsep + env.get("PYTHONPATH", ""))

    def run(how="build", **extra):
        out = subprocess.run([sys.executable, str(tmp_path / "run.py"), how], cwd=tmp_path,
                             env=dict(env, **extra), capture_output=True, text=True,
                             timeout=240)
        assert out.returncode == 0, out.stderr[-3000:]
        res = json.loads(out.stdout.strip().splitlines()[-1])
        assert res["ok"], "wrong result"
        res["stderr"] = out.stderr
        return res

    return types.SimpleNamespace(dir=tmp_path, run=run)


def _headers(stderr: str) -> list[str]:
    """The stages whose dump headers (``; ---- stage: what ----``) are in ``stderr``."""
    return [line.split()[2].rstrip(":") for line in stderr.splitlines()
            if line.startswith("; ---- ")]


# What each stage's printed output must hold for this kernel.
_SHOWS = {
    "input": "kmod.axpy", "object": "kmod.axpy", "link": "spec_constant_ids",
    "spec_constants": "kmod.axpy", "kernel_passes": "kmod.axpy", "llvm": "define",
    "binary": "bytes", "load": "kmod.axpy",
}


def test_every_stage_has_a_check():
    assert set(_SHOWS) == set(build_chain.STAGE)
    assert all(reason for _, reason in build_chain.describe())


@pytest.mark.parametrize("stage", [s.name for s in build_chain.STAGES])
def test_dump_names_one_stage(project, stage):
    res = project.run(PYSYCL_CACHE="0", PYSYCL_DUMP=stage)
    assert _headers(res["stderr"]) == [stage]
    body = res["stderr"].split(f"; ---- {stage}: ", 1)[1]
    assert _SHOWS[stage] in body


def test_dump_all_prints_the_chain_in_order(project):
    res = project.run(PYSYCL_CACHE="0", PYSYCL_DUMP="all")
    assert _headers(res["stderr"]) == [s.name for s in build_chain.STAGES]


def test_dump_dir_writes_one_file_per_output(project):
    folder = project.dir / "dumps"
    res = project.run(PYSYCL_CACHE="0", PYSYCL_DUMP="link,llvm,load",
                      PYSYCL_DUMP_DIR=str(folder))
    assert _headers(res["stderr"]) == []
    names = sorted(os.listdir(folder))
    assert [n.split("-")[1] for n in names] == ["link", "llvm", "load"]
    llvm = (folder / names[1]).read_text()
    assert llvm == res["llvm"]     # the text the image shows is the text dumped


def test_unknown_dump_name_is_warned(project):
    res = project.run(PYSYCL_CACHE="0", PYSYCL_DUMP="llvm,lvm")
    assert "PYSYCL_DUMP: no stage named lvm" in res["stderr"]
    assert _headers(res["stderr"]) == ["llvm"]


def test_llvm_text_does_not_depend_on_where_the_binary_came_from(project):
    fresh = project.run()
    assert fresh["tiers"].get("binary: built") == 1
    from_disk = project.run(PYSYCL_WARM_INDEX="0")      # IR made, binary from the cache
    assert from_disk["tiers"].get("binary: disk") == 1 and "binary: built" not in from_disk["tiers"]
    warm = project.run()                                # no IR until asked for
    assert warm["tiers"].get("binary: warm index") == 1
    assert "binary: built" not in warm["tiers"] and "binary: disk" not in warm["tiers"]
    assert "define" in fresh["llvm"] and "kmod.axpy" in fresh["llvm"]
    digests = {hashlib.sha256(r["llvm"].encode()).hexdigest() for r in (fresh, from_disk, warm)}
    assert len(digests) == 1


def test_build_checks_stay_with_the_image(monkeypatch):
    """An image's LLVM text made again later is made with the checks of its build, not
    with those in force when it is asked for."""
    from pysycl.bundle import toolchain
    seen = []
    monkeypatch.setattr(toolchain, "codegen", lambda m, t, checks=None: seen.append(checks) or "")
    job = build_chain.BuildJob(["k"], None, types.SimpleNamespace(name="t"), "emulated",
                               {"a": b"1"}, frozenset({"bounds"}))
    assert job.values is None          # only literal images fold values in
    monkeypatch.setattr(toolchain, "clone", lambda m: m)
    monkeypatch.setattr(toolchain, "lower_spec_constants", lambda *a: None)
    monkeypatch.setattr(toolchain, "kernel_passes", lambda m, t, checks=None, coarsen=None: m)
    monkeypatch.setenv("PYSYCL_DEBUG", "")
    build_chain.llvm_text(object(), job)
    assert seen == [frozenset({"bounds"})]


@pytest.mark.parametrize("how", ["default", "executable"])
def test_warm_index_is_a_tier_of_the_chain(project, how):
    """The default lookup and ``get_kernel_bundle(executable)`` of a fresh process find
    the binary through the warm-start index: the chain's ``binary`` stage reports that
    tier, and no frontend, compile, link or codegen runs."""
    cold = project.run(how)
    assert cold["tiers"].get("binary: built") == 1
    warm = project.run(how)
    assert warm["tiers"].get("binary: warm index", 0) >= 1
    assert {"input: warm index", "object: warm index"} <= set(warm["tiers"])
    assert not [t for t in warm["tiers"] if t.endswith(": built") and t != "load: built"]
    assert warm["stats"]["frontend_count"] == 0 and warm["stats"]["link_count"] == 0
    assert warm["llvm"] == cold["llvm"]          # asked for: the IR is made then
