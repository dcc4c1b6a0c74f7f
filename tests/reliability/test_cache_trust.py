"""The kernel cache holds native code that is linked into the process, so it is used only
when it is the current user's: folders 0700, nothing of another user's or writable by
group/others, every entry authenticated by an HMAC under a per-user secret (0600). Each
run of a kernel is a fresh interpreter on its own cache folder, and its result is
checked against NumPy whether the cache was used, refused or rebuilt."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from pysycl.bundle.cache import SECRET_NAME, Cache, CacheKey
from pysycl.detail import private_files

POSIX = hasattr(os, "getuid")
IS_ROOT = POSIX and os.getuid() == 0
OTHER_UID = 65534     # "nobody": a uid that is not ours
needs_posix = pytest.mark.skipif(not POSIX, reason="no POSIX owners and modes here")
needs_root = pytest.mark.skipif(not IS_ROOT, reason="making a file another user's needs root")

KMOD = textwrap.dedent('''
    import numpy as np
    import pysycl as sycl

    @sycl.kernel
    def poly(it: sycl.item[1], x: sycl.global_ptr[np.float32], y: sycl.global_ptr[np.float32]):
        i = it.get_id(0)
        y[i] = x[i] * x[i] * np.float32(3) - x[i] + np.float32(0.5)
''')

RUN = textwrap.dedent('''
    import json, sys
    import numpy as np
    import pysycl as sycl
    import kmod
    from pysycl.bundle import stats

    x_host = np.load(sys.argv[1])
    q = sycl.queue()
    x = sycl.malloc_shared(x_host.shape, np.float32, q)
    y = sycl.malloc_shared(x_host.shape, np.float32, q)
    x[:] = x_host
    q.parallel_for(sycl.range(x_host.size), kmod.poly, x, y).wait()
    np.save(sys.argv[2], np.asarray(y))
    print(json.dumps(stats.snapshot()))
''')


class Project:
    """A kernel module and a runner in ``tmp_path``; ``run()`` runs it in a fresh
    interpreter on cache ``root`` and checks the result against NumPy."""

    def __init__(self, tmp_path, root, rng):
        self.dir, self.root = tmp_path, root
        (tmp_path / "kmod.py").write_text(KMOD)
        (tmp_path / "run.py").write_text(RUN)
        self.x = rng.standard_normal(1000).astype(np.float32)
        np.save(tmp_path / "x.npy", self.x)

    def run(self):
        env = {k: v for k, v in os.environ.items() if k != "PYSYCL_CACHE"}
        env.update(PYSYCL_CACHE_DIR=str(self.root), PYSYCL_DEVICE_SELECTOR="native_cpu",
                   PYTHONPATH=str(self.dir) + os.pathsep + env.get("PYTHONPATH", ""))
        out = subprocess.run([sys.executable, "-X", "faulthandler", str(self.dir / "run.py"),
                              str(self.dir / "x.npy"), str(self.dir / "y.npy")],
                             cwd=self.dir, env=env, capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, out.stderr[-3000:]
        y = np.load(self.dir / "y.npy")
        x = self.x
        np.testing.assert_allclose(y, x * x * np.float32(3) - x + np.float32(0.5), rtol=1e-5,
                                   atol=1e-6)
        stats = json.loads(out.stdout.strip().splitlines()[-1])
        return stats, out.stderr

    def entries(self, suffix="*"):
        return sorted(self.root.glob(f"v1/*/*.{suffix}"))


def built(stats) -> bool:
    return stats["target_compile_count"] > 0


def warm(stats) -> bool:
    return stats["target_compile_count"] == 0 and stats["codegen_count"] == 0


@pytest.fixture
def project(tmp_path, rng):
    return Project(tmp_path, tmp_path / "cache", rng)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- what a fresh cache looks like ---------------------------------------------------------

@needs_posix
def test_cache_folders_are_0700_and_the_secret_0600(project):
    stats, _ = project.run()
    assert built(stats)
    assert mode(project.root) == 0o700 and mode(project.root / "v1") == 0o700
    entries = project.entries()
    assert {p.suffix for p in entries} == {".bin", ".idx"}
    for path in entries:
        assert mode(path.parent) == 0o700 and mode(path) == 0o600
    secret = project.root / SECRET_NAME
    assert mode(secret) == 0o600 and len(secret.read_bytes()) == private_files.SECRET_BYTES
    stats, stderr = project.run()
    assert warm(stats) and "WARNING" not in stderr.upper()


# -- folders that are not ours -----------------------------------------------------------

@needs_posix
@pytest.mark.parametrize("bad_mode", [0o777, 0o770, 0o702])
def test_group_or_other_writable_root_is_refused(project, bad_mode):
    project.root.mkdir()
    os.chmod(project.root, bad_mode)
    for _ in range(2):
        stats, stderr = project.run()
        assert built(stats)    # uncached each time
        assert stderr.count("not using the kernel cache") == 1, stderr   # warned once
        assert "writable by group or others" in stderr
    assert os.listdir(project.root) == []   # nothing written into it, not even the secret
    assert "untrusted" in Cache(project.root).info()


@needs_root
def test_root_owned_by_another_user_is_refused(project):
    project.root.mkdir(mode=0o700)
    os.chown(project.root, OTHER_UID, -1)
    stats, stderr = project.run()
    assert built(stats) and f"owned by uid {OTHER_UID}" in stderr
    assert os.listdir(project.root) == []


@needs_posix
def test_group_writable_entry_folder_is_refused(project):
    project.run()
    folders = {p.parent for p in project.entries()}
    for folder in folders:
        os.chmod(folder, 0o775)
    stats, stderr = project.run()
    assert built(stats) and "not using cache folder" in stderr
    for folder in folders:    # still refused: never "repaired" behind the user's back
        assert mode(folder) == 0o775


# -- entries that are not ours ------------------------------------------------------------

@needs_root
def test_entry_owned_by_another_user_is_ignored_and_rebuilt(project):
    project.run()
    for path in project.entries():
        os.chown(path, OTHER_UID, -1)
    stats, stderr = project.run()
    assert built(stats) and f"the entry is owned by uid {OTHER_UID}" in stderr
    assert all(os.stat(p).st_uid == os.getuid() for p in project.entries())   # replaced
    assert warm(project.run()[0])


@needs_posix
def test_group_writable_entry_is_ignored_and_rebuilt(project):
    project.run()
    for path in project.entries():
        os.chmod(path, 0o664)
    stats, stderr = project.run()
    assert built(stats) and "the entry is writable by group or others" in stderr
    assert all(mode(p) == 0o600 for p in project.entries())
    assert warm(project.run()[0])


def _split(raw: bytes):
    (hlen,) = struct.unpack_from("<I", raw, 8)
    return json.loads(raw[12:12 + hlen]), raw[12 + hlen:]


def _tamper(path):
    """Change the payload as someone who can write the file would: a payload that still
    loads (object code with a tail, JSON re-spaced) and its size and SHA-256 recomputed,
    so only the HMAC can tell."""
    header, payload = _split(path.read_bytes())
    if path.suffix == ".idx":
        payload = json.dumps(json.loads(payload), indent=1).encode()
    else:
        payload = payload + bytes(64)
    header.update(size=len(payload), sha256=hashlib.sha256(payload).hexdigest())
    raw = json.dumps(header, sort_keys=True).encode()
    path.write_bytes(b"PYSYCLC1" + struct.pack("<I", len(raw)) + raw + payload)


def test_tampered_entry_with_recomputed_checksum_fails_the_hmac_and_is_rebuilt(project):
    project.run()
    entries = project.entries()
    for path in entries:
        _tamper(path)
    stats, stderr = project.run()
    assert built(stats)
    refused = {path for path in entries if f"ignoring cache entry {path}: HMAC mismatch" in stderr}
    # The binaries and the warm-start index's entries that this run looked up.
    assert {p for p in entries if p.suffix == ".bin"} <= refused
    assert any(p.suffix == ".idx" for p in refused)
    stats, stderr = project.run()   # the rebuild replaced them with authenticated entries
    assert warm(stats) and "HMAC" not in stderr


def test_entries_copied_from_another_cache_are_checked_not_trusted(tmp_path, project):
    """A cache copied, shared or restored from elsewhere was written under another secret."""
    project.run()
    shutil.copytree(project.root / "v1", tmp_path / "restored" / "v1")   # modes kept: 0700
    project.root = tmp_path / "restored"
    stats, stderr = project.run()
    assert built(stats) and "HMAC mismatch" in stderr
    assert warm(project.run()[0])


# -- the secret ---------------------------------------------------------------------------

@needs_posix
@pytest.mark.parametrize("damage,reason", [
    (lambda p: os.chmod(p, 0o644), "readable by group or others"),
    (lambda p: os.chmod(p, 0o620), "writable by group or others"),
    (lambda p: p.write_bytes(b"short"), "holds 5 bytes"),
    (lambda p: (p.unlink(), p.symlink_to(p.parent / "elsewhere")), "cannot read"),
])
def test_a_secret_that_is_not_private_disables_the_cache(project, damage, reason):
    project.run()
    damage(project.root / SECRET_NAME)
    entries_before = {p: p.read_bytes() for p in project.entries()}
    stats, stderr = project.run()
    assert built(stats) and "its secret" in stderr and reason in stderr
    assert {p: p.read_bytes() for p in project.entries()} == entries_before   # untouched


@needs_root
def test_a_secret_owned_by_another_user_disables_the_cache(project):
    project.run()
    os.chown(project.root / SECRET_NAME, OTHER_UID, -1)
    stats, stderr = project.run()
    assert built(stats) and f"owned by uid {OTHER_UID}" in stderr


def test_secret_is_made_once_under_concurrency(tmp_path):
    path = tmp_path / "secret"
    got, barrier = [], threading.Barrier(8)

    def make():
        barrier.wait()
        got.append(private_files.private_secret(path))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 1 and got[0] == path.read_bytes()
    assert len(got[0]) == private_files.SECRET_BYTES


def test_in_process_cache_uses_the_same_rules(tmp_path):
    """``Cache`` itself (also the warm-start index and the device code cache, which are
    ``Cache`` objects): a tampered payload with a recomputed checksum is refused."""
    key = CacheKey({"ir": "module @k {}"})
    Cache(tmp_path).put(key, b"object code")
    path = next(tmp_path.glob("v1/*/*.bin"))
    header, _ = _split(path.read_bytes())
    payload = b"other code!"
    header.update(size=len(payload), sha256=hashlib.sha256(payload).hexdigest())
    raw = json.dumps(header, sort_keys=True).encode()
    path.write_bytes(b"PYSYCLC1" + struct.pack("<I", len(raw)) + raw + payload)
    fresh = Cache(tmp_path)
    assert fresh.get(key) is None
    assert fresh.get_or_build(key, lambda: b"rebuilt") == b"rebuilt"
    assert Cache(tmp_path).get(key) == b"rebuilt"


@needs_posix
def test_cache_removed_while_running_is_made_again_private(tmp_path):
    """The checks are made once per process; a cache removed meanwhile (``rm -rf``) is
    made again, 0700, under a new secret, and what it held before is not trusted."""
    root = tmp_path / "cache"
    key, other = CacheKey({"ir": "a"}), CacheKey({"ir": "b"})
    Cache(root).put(key, b"first")
    old_secret = (root / SECRET_NAME).read_bytes()
    shutil.rmtree(root)
    Cache(root).put(other, b"second")
    assert mode(root) == 0o700 and mode(root / "v1") == 0o700
    assert all(mode(p) == 0o700 for p in root.glob("v1/*"))
    assert (root / SECRET_NAME).read_bytes() != old_secret
    assert Cache(root).get(other) == b"second" and Cache(root).get(key) is None
