"""Build cache: keys, verification, atomic multi-process use, one build per key."""
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from pysycl.bundle.cache import Cache, CacheKey, cache_clear, cache_info, default_cache
from pysycl.errors import exception

KEY = CacheKey({"ir": "module @k { ret }", "target": "native_cpu", "mode": "literal",
                "values": b"\x2a\x00\x00\x00"})


def entry_path(cache: Cache, key: CacheKey):
    return cache.directory / key.hexdigest[:2] / f"{key.hexdigest}.bin"


class TestCacheKey:
    def test_digest_depends_on_names_values_and_order(self):
        base = CacheKey({"a": "x", "b": "y"})
        assert base == CacheKey({"a": "x", "b": "y"})
        assert base.hexdigest != CacheKey({"a": "x", "c": "y"}).hexdigest
        assert base.hexdigest != CacheKey({"a": "x", "b": "z"}).hexdigest
        assert base.hexdigest != CacheKey({"b": "y", "a": "x"}).hexdigest
        # str and bytes of the same spelling are different parts.
        assert CacheKey({"a": "x"}) != CacheKey({"a": b"x"})
        assert len(base.hexdigest) == 64

    def test_diff_names_the_changed_parts(self):
        old = CacheKey({"ir": "1", "target": "cpu", "spec": b"\x00"})
        new = CacheKey({"ir": "2", "target": "cpu", "opt": "O3"})
        assert old.diff(new) == ["part 'ir' changed", "part 'opt' added", "part 'spec' removed"]
        assert old.diff(old) == []
        assert CacheKey({"a": "1", "b": "2"}).diff(CacheKey({"b": "2", "a": "1"})) == ["parts reordered"]

    def test_bad_part_type(self):
        with pytest.raises(exception):
            CacheKey({"ir": 3})


class TestDiskAndMemory:
    def test_put_get_and_second_instance_reads_disk(self, tmp_path):
        c = Cache(tmp_path)
        assert c.get(KEY) is None
        c.put(KEY, b"payload")
        assert c.get(KEY) == b"payload"
        assert entry_path(c, KEY).is_file()
        fresh = Cache(tmp_path)  # empty memory layer
        assert fresh.get(KEY) == b"payload"
        assert not list(c.directory.glob("*/.tmp-*"))  # no temp files left behind

    def test_memory_layer_serves_without_disk(self, tmp_path):
        c = Cache(tmp_path)
        c.put(KEY, b"v")
        os.unlink(entry_path(c, KEY))
        assert c.get(KEY) == b"v"

    def test_memory_layer_is_bounded(self, tmp_path):
        c = Cache(tmp_path, enabled=False, memory_entries=2)
        keys = [CacheKey({"i": str(i)}) for i in range(3)]
        for i, k in enumerate(keys):
            c.put(k, bytes([i]))
        assert c.get(keys[0]) is None and c.get(keys[2]) == b"\x02"

    def test_disabled_cache_writes_nothing(self, tmp_path):
        c = Cache(tmp_path, enabled=False)
        assert c.get_or_build(KEY, lambda: b"x") == b"x"
        assert not (tmp_path / "v1").exists()

    def test_values_must_be_bytes(self, tmp_path):
        with pytest.raises(exception):
            Cache(tmp_path).put(KEY, "text")

    def test_info_and_clear(self, tmp_path):
        c = Cache(tmp_path)
        assert c.info() == {"entries": 0, "bytes": 0, "path": str(tmp_path / "v1")}
        c.put(KEY, b"a" * 100)
        c.put(CacheKey({"other": "1"}), b"b")
        info = c.info()
        assert info["entries"] == 2 and info["bytes"] > 101
        (entry_path(c, KEY).parent / ".tmp-stale").write_bytes(b"junk")
        assert c.clear() == 2
        assert c.info()["entries"] == 0
        assert c.get(KEY) is None  # memory cleared too
        assert not list(c.directory.rglob("*"))

    def test_default_cache_follows_config(self, tmp_path, monkeypatch):
        monkeypatch.setenv("PYSYCL_CACHE_DIR", str(tmp_path))
        monkeypatch.setenv("PYSYCL_CACHE", "1")
        default_cache().put(KEY, b"d")
        assert cache_info()["entries"] == 1 and cache_info()["path"] == str(tmp_path / "v1")
        assert cache_clear() == 1
        monkeypatch.setenv("PYSYCL_CACHE", "0")
        default_cache().put(KEY, b"d")
        assert cache_info()["entries"] == 0


class TestCorruption:
    @pytest.mark.parametrize("damage,reason", [
        (lambda raw: raw[:-3], "truncated payload"),
        (lambda raw: raw[:20], "truncated header"),
        (lambda raw: raw[:-1] + bytes([raw[-1] ^ 0xFF]), "checksum mismatch"),
        (lambda raw: b"garbage" + raw, "bad magic"),
        (lambda raw: raw[:12] + b"[" + raw[13:], "unreadable header"),
    ])
    def test_damaged_entry_is_rebuilt_with_warning(self, tmp_path, caplog, damage, reason):
        c = Cache(tmp_path)
        c.put(KEY, b"good payload bytes")
        path = entry_path(c, KEY)
        path.write_bytes(damage(path.read_bytes()))
        fresh = Cache(tmp_path)
        builds = []
        with caplog.at_level(logging.WARNING, logger="pysycl.cache"):
            value = fresh.get_or_build(KEY, lambda: builds.append(1) or b"rebuilt")
        assert value == b"rebuilt" and builds == [1]
        assert any(reason in r.getMessage() and r.name == "pysycl.cache" for r in caplog.records)
        assert Cache(tmp_path).get(KEY) == b"rebuilt"  # the rebuild replaced the bad entry

    def test_key_mismatch_is_ignored(self, tmp_path, caplog):
        c = Cache(tmp_path)
        other = CacheKey({"ir": "different"})
        c.put(other, b"other payload")
        # Plant other's entry under KEY's file name (a hash collision or a bad copy).
        path = entry_path(c, KEY)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(entry_path(c, other).read_bytes())
        with caplog.at_level(logging.WARNING, logger="pysycl.cache"):
            assert Cache(tmp_path).get(KEY) is None
        assert any("key mismatch" in r.getMessage() for r in caplog.records)


class TestConcurrency:
    def test_eight_threads_one_build(self, tmp_path):
        c = Cache(tmp_path)
        builds = []
        barrier = threading.Barrier(8)
        results = []

        def build():
            builds.append(threading.get_ident())
            time.sleep(0.05)  # widen the window in which others would also build
            return b"built once"

        def worker():
            barrier.wait()
            results.append(c.get_or_build(KEY, build))

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(builds) == 1
        assert results == [b"built once"] * 8
        assert c._key_locks == {}  # per-key locks are released

    def test_different_keys_build_in_parallel(self, tmp_path):
        c = Cache(tmp_path)
        inside = threading.Barrier(2, timeout=5)

        def build():
            inside.wait()  # both builds must be running at once to pass
            return b"v"

        threads = [threading.Thread(target=c.get_or_build, args=(CacheKey({"k": str(i)}), build))
                   for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert c.info()["entries"] == 2

    def test_build_failure_propagates_and_is_not_cached(self, tmp_path):
        c = Cache(tmp_path)

        def fail():
            raise RuntimeError("LLVM crashed")
        with pytest.raises(RuntimeError):
            c.get_or_build(KEY, fail)
        assert c.get(KEY) is None
        assert c.get_or_build(KEY, lambda: b"ok") == b"ok"

    def test_second_process_hits_the_cache(self, tmp_path):
        c = Cache(tmp_path)
        c.get_or_build(KEY, lambda: b"from parent")
        script = textwrap.dedent(f"""
            from pysycl.bundle.cache import CacheKey, default_cache
            key = CacheKey({{"ir": "module @k {{ ret }}", "target": "native_cpu",
                             "mode": "literal", "values": b"\\x2a\\x00\\x00\\x00"}})
            def build():
                raise SystemExit("rebuilt: cache missed")
            print(default_cache().get_or_build(key, build).decode())
            default_cache().get_or_build(CacheKey({{"child": "1"}}), lambda: b"from child")
        """)
        env = dict(os.environ, PYSYCL_CACHE_DIR=str(tmp_path), PYSYCL_CACHE="1")
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "from parent"
        assert Cache(tmp_path).get(CacheKey({"child": "1"})) == b"from child"

    def test_processes_writing_one_entry_concurrently(self, tmp_path):
        script = textwrap.dedent("""
            import sys
            from pysycl.bundle.cache import Cache, CacheKey
            c = Cache(sys.argv[1])
            for i in range(50):
                c.put(CacheKey({"shared": str(i % 5)}), (str(i % 5) * 1000).encode())
        """)
        procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)])
                 for _ in range(4)]
        assert all(p.wait(timeout=60) == 0 for p in procs)
        fresh = Cache(tmp_path)
        for i in range(5):
            assert fresh.get(CacheKey({"shared": str(i)})) == (str(i) * 1000).encode()
        assert fresh.info()["entries"] == 5
        assert not list(fresh.directory.glob("*/.tmp-*"))


def test_miss_logs_changed_parts(tmp_path, caplog):
    c = Cache(tmp_path)
    c.get_or_build(CacheKey({"ir": "v1", "target": "cpu"}), lambda: b"1", label="kernel mod.k")
    with caplog.at_level(logging.INFO, logger="pysycl.cache"):
        c.get_or_build(CacheKey({"ir": "v2", "target": "cpu"}), lambda: b"2", label="kernel mod.k")
    assert "cache miss for kernel mod.k: part 'ir' changed" in caplog.text


class TestCompilerDigest:
    """Cache keys carry a digest of the compiler's source files, so code made by an
    older compiler is never served."""

    def _tree(self, tmp_path):
        root = tmp_path / "pkg"
        (root / "sub" / "__pycache__").mkdir(parents=True)
        (root / "a.py").write_text("x = 1\n")
        (root / "sub" / "b.py").write_text("y = 2\n")
        (root / "sub" / "__pycache__" / "b.cpython.pyc").write_bytes(b"\x00")
        (root / "notes.txt").write_text("not source")
        return root

    def test_digest_follows_source_files(self, tmp_path):
        from pysycl.bundle import toolchain
        root = self._tree(tmp_path)
        first = toolchain.tree_digest(str(root))
        assert toolchain.tree_digest(str(root)) == first
        (root / "notes.txt").write_text("other")                      # not source
        (root / "sub" / "__pycache__" / "b.cpython.pyc").write_bytes(b"\x01")
        assert toolchain.tree_digest(str(root)) == first
        st = os.stat(root / "sub" / "b.py")
        (root / "sub" / "b.py").write_text("y = 3\n")                  # same size
        os.utime(root / "sub" / "b.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        changed = toolchain.tree_digest(str(root))
        assert changed != first
        (root / "c.py").write_text("")                                 # a new module
        assert toolchain.tree_digest(str(root)) not in (first, changed)
        assert toolchain.tree_digest(str(root), frozenset({"__pycache__", "sub"})) != \
            toolchain.tree_digest(str(root))                           # skipped folders

    def test_binary_keys_name_the_compiler(self):
        from pysycl.bundle import executables, toolchain
        from pysycl.backends import registry
        target = registry.get_target("native_cpu")
        parts = executables._key_digests("i", "s", target, "literal", b"")
        assert "compiler" in parts
        root = os.path.dirname(os.path.dirname(toolchain.__file__))
        if os.path.basename(os.path.dirname(root)) in ("site-packages", "dist-packages"):
            assert toolchain.compiler_digest().startswith("installed ")
        else:   # a source checkout: the compiler's files, not the runtime's
            assert toolchain.compiler_digest() == toolchain.tree_digest(
                root, frozenset({"__pycache__", "runtime", "cli", "examples"}))
            assert toolchain.compiler_digest() != toolchain.tree_digest(root)
