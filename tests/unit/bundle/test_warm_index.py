"""Warm start (bundle/warm_index.py): a second process launches a cached kernel with no
frontend parse and no codegen; a changed frozen constant or device function, or a
corrupted index entry, takes the full path again and gives the right result."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import pysycl as sycl
from pysycl.bundle import cache as cache_mod
from pysycl.bundle import warm_index

KMOD = textwrap.dedent('''
    import os
    import numpy as np
    import pysycl as sycl

    SCALE = float(os.environ.get("WARM_SCALE", "2"))
    taps_id = sycl.specialization_id(np.int32, 4)

    @sycl.device
    def helper(v):
        return v + 1.0

    @sycl.kernel
    def scale(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.float32]):
        i = it.get_id(0)
        x[i] = np.float32(helper(x[i]) * SCALE) * np.float32(h.get_specialization_constant(taps_id))

    @sycl.kernel
    def plain(it: sycl.item[1], x: sycl.global_ptr[np.float32]):
        x[it.get_id(0)] = np.float32(helper(x[it.get_id(0)]) * SCALE)
''')

RUN = textwrap.dedent('''
    import json, sys
    import numpy as np
    import pysycl as sycl
    import kmod
    from pysycl.bundle import stats

    q = sycl.queue()
    x = sycl.malloc_shared((64,), np.float32, q)
    x[:] = 1
    kb = sycl.build(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                           kernel_ids=[sycl.get_kernel_id(kmod.scale)]))
    def first(cgh):
        cgh.use_kernel_bundle(kb)
        cgh.parallel_for(sycl.range(64), kmod.scale, x)
    q.submit(first).wait()
    bundle_value = float(x[5])
    y = sycl.malloc_shared((64,), np.float32, q)
    y[:] = 1
    q.parallel_for(sycl.range(64), kmod.plain, y).wait()   # the default lookup
    heavy = [m for m in ("pysycl.frontend.compiler", "pysycl.codegen", "pysycl.passes.pipeline")
             if m in sys.modules]
    print(json.dumps({"bundle": bundle_value, "default": float(y[5]), "stats": stats.snapshot(),
                      "heavy": heavy}))
''')


@pytest.fixture
def project(tmp_path):
    (tmp_path / "kmod.py").write_text(KMOD)
    (tmp_path / "run.py").write_text(RUN)
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("WARM_SCALE", "PYSYCL_WARM_INDEX")}
    env.update(PYSYCL_CACHE_DIR=str(cache), PYSYCL_DEVICE_SELECTOR="native_cpu",
               PYTHONPATH=str(tmp_path) + os.pathsep + env.get("PYTHONPATH", ""))

    def run(**extra):
        out = subprocess.run([sys.executable, str(tmp_path / "run.py")], cwd=tmp_path,
                             env=dict(env, **extra), capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, out.stderr[-3000:]
        res = json.loads(out.stdout.strip().splitlines()[-1])
        res["stderr"] = out.stderr
        return res

    return types.SimpleNamespace(dir=tmp_path, cache=cache, run=run)


def _warm(res):
    s = res["stats"]
    return s["frontend_count"] == 0 and s["codegen_count"] == 0 and s["compile_count"] == 0 \
        and s["link_count"] == 0 and s["warm_index_hits"] == 2


def _index_files(cache_dir):
    """(path, header) of the warm-start index entries in a cache directory."""
    out = []
    for path in sorted(cache_dir.glob("v*/*/*.idx")):
        raw = path.read_bytes()
        (hlen,) = np.frombuffer(raw[8:12], "<u4")
        header = json.loads(raw[12:12 + int(hlen)])
        if "index" in header["parts"]:
            out.append((path, header))
    return out


def test_second_process_hits_index_without_frontend_or_codegen(project):
    cold = project.run()
    assert cold["bundle"] == (1 + 1) * 2 * 4 and cold["default"] == (1 + 1) * 2
    assert cold["stats"]["frontend_count"] >= 1 and cold["stats"]["codegen_count"] >= 1
    warm = project.run()
    assert (warm["bundle"], warm["default"]) == (cold["bundle"], cold["default"])
    assert _warm(warm), warm["stats"]
    assert warm["heavy"] == [], "the hit path imported the compiler"


def test_changed_frozen_constant_rebuilds(project):
    project.run()
    assert _warm(project.run())
    changed = project.run(WARM_SCALE="3")       # same file, another frozen value
    assert changed["bundle"] == (1 + 1) * 3 * 4 and changed["default"] == (1 + 1) * 3
    assert changed["stats"]["frontend_count"] >= 1 and changed["stats"]["codegen_count"] >= 1
    again = project.run(WARM_SCALE="3")
    assert _warm(again) and again["bundle"] == changed["bundle"]
    back = project.run()                         # the first value's entries are still there
    assert _warm(back) and back["bundle"] == 16


def test_changed_device_function_rebuilds(project):
    project.run()
    assert _warm(project.run())
    (project.dir / "kmod.py").write_text(KMOD.replace("return v + 1.0", "return v + 2.0"))
    changed = project.run()
    assert changed["bundle"] == (1 + 2) * 2 * 4 and changed["default"] == (1 + 2) * 2
    assert changed["stats"]["codegen_count"] >= 1 and changed["stats"]["frontend_count"] >= 1
    assert _warm(project.run())


def test_corrupted_index_entry_is_ignored_with_warning(project):
    project.run()
    entries = _index_files(project.cache)
    assert entries
    for path, _ in entries:   # flip the last payload byte: checksum mismatch
        raw = bytearray(path.read_bytes())
        raw[-1] ^= 0xFF
        path.write_bytes(bytes(raw))
    res = project.run()
    assert res["bundle"] == 16 and res["default"] == 4
    assert "ignoring cache entry" in res["stderr"]
    assert res["stats"]["frontend_count"] >= 1 and res["stats"]["codegen_count"] == 0
    assert _warm(project.run())


def test_malformed_index_payload_is_ignored_with_warning(project):
    project.run()
    index = cache_mod.Cache(project.cache, suffix=".idx")   # writes under the cache's secret
    for path, header in _index_files(project.cache):   # a valid entry, not an index entry
        key = cache_mod.CacheKey.from_part_digests(header["parts"])
        key.hexdigest = header["key"]   # the header's parts are sorted; keep the digest
        index.put(key, b'{"format": 1, "kernel": 7}')
    res = project.run()
    assert res["bundle"] == 16 and res["default"] == 4
    assert "ignoring warm-start index entry" in res["stderr"]
    assert _warm(project.run())


def test_index_off_takes_full_path(project):
    project.run()
    res = project.run(PYSYCL_WARM_INDEX="0")
    assert res["stats"]["frontend_count"] >= 1 and res["stats"]["warm_index_hits"] == 0
    assert res["bundle"] == 16


# -- the fingerprint, in process ----------------------------------------------------------

def _fp(kfn):
    try:
        return warm_index._Fingerprinter().function(kfn)
    except warm_index._Opaque:
        return None


def test_fingerprint_follows_globals_and_device_functions():
    g = {"__name__": "warm_fp_mod", "np": np, "sycl": sycl}
    src = textwrap.dedent('''
        @sycl.device
        def dev(v):
            return v * K

        @sycl.kernel
        def k(i: sycl.id[1], x: sycl.global_ptr[np.float32]):
            x[i[0]] = dev(x[i[0]])
    ''')
    path = os.path.join(os.path.dirname(__file__), "_warm_fp_src.py")
    code = compile(src, path, "exec")
    import linecache
    linecache.cache[path] = (len(src), None, src.splitlines(True), path)
    try:
        g["K"] = 2
        exec(code, g)
        a = _fp(g["k"])
        assert a is not None and a == _fp(g["k"])
        g["K"] = 3                      # a frozen constant of a called device function
        assert _fp(g["k"]) not in (None, a)
        g["K"] = 2
        assert _fp(g["k"]) == a
        g["K"] = [1, 2]                 # not a frozen constant: no index
        assert _fp(g["k"]) is None
        g["K"] = type("Cfg", (), {})()  # a user object: no index
        assert _fp(g["k"]) is None
    finally:
        linecache.cache.pop(path, None)


def test_fingerprint_values():
    assert warm_index.fingerprint_value(np.float32(2)) != warm_index.fingerprint_value(np.float64(2))
    assert warm_index.fingerprint_value(2) != warm_index.fingerprint_value(2.0)
    assert warm_index.fingerprint_value(np) == "module:numpy"
    with pytest.raises(warm_index._Opaque):
        warm_index.fingerprint_value(np.zeros(3))


def test_executor_exports_the_check_record():
    """The native executor exports the failure record of checked builds by the names the
    code generator gives it (ir/check_record), so the runtime can read it."""
    from pysycl.backends.native_cpu import executor
    from pysycl.ir import check_record
    assert set(executor.CHECK_SYMBOLS) == {check_record.RECORD_SYMBOL,
                                           check_record.BOUNDS_RECORD_SYMBOL,
                                           check_record.SITES_SYMBOL}


def test_property_sets_keep_bit_masks_through_the_index():
    """A warm start writes the property sets the build wrote: a ``SYCL/kernel param opt``
    mask keeps its size in bits (the argument count), not whole bytes."""
    from pysycl.bundle import property_sets as ps
    rng = np.random.default_rng(17)
    for count in (1, 7, 8, 10, 19):
        removed = [bool(b) for b in rng.integers(0, 2, count)]
        reg = ps.PropertySetRegistry()
        reg.add_set(ps.KERNEL_PARAM_OPT, {"k": ps.kernel_param_opt_mask(removed)})
        reg.add_set("SYCL/misc properties", {"optLevel": int(rng.integers(0, 4))})
        back = warm_index.registry_from_json(json.loads(json.dumps(
            warm_index.registry_to_json(reg))))
        mask = back.to_dict()[ps.KERNEL_PARAM_OPT]["k"]
        assert ps.encode_value(mask) == ps.encode_value(ps.kernel_param_opt_mask(removed))
        assert [bool(mask[i // 8] >> (i % 8) & 1) for i in range(count)] == removed
        assert back.to_dict()["SYCL/misc properties"] == reg.to_dict()["SYCL/misc properties"]
