"""The OpenCL ICD loader ``dlopen``s every library named by an ICD file in the folder that
pysycl points ``OCL_ICD_VENDORS`` at. That folder is reused only when it holds exactly
what pysycl wrote there, inside a kernel cache that is the user's own; otherwise a fresh
folder is used, never a predictable shared one. A planted ICD file names a library
(compiled here) whose constructor writes a marker file: the marker must never appear,
and the Intel device must still be found. Each case runs in a fresh interpreter (the
loader reads ``OCL_ICD_VENDORS`` once per process)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from pysycl.backends.opencl import environment

pytest.importorskip("pyopencl")
COMPILER = shutil.which("gcc") or shutil.which("cc")
pytestmark = [
    pytest.mark.skipif(environment.find_runtime() is None, reason="intel-opencl-rt not installed"),
    pytest.mark.skipif(COMPILER is None, reason="no C compiler to build the planted library"),
    pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX folders and modes"),
]

PLANTED_C = r'''
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(MARKER, "w");
    if (f) { fputs("planted library loaded\n", f); fclose(f); }
}
'''

QUEUE = """
    import json, os
    import pysycl as sycl
    q = sycl.queue()          # a plain queue: every backend is discovered
    devs = [d for d in sycl.device.get_devices() if d.backend.name == "opencl"]
    print(json.dumps({"vendors": os.environ.get("OCL_ICD_VENDORS"),
                      "platforms": [d.get_platform().get_info(sycl.info.platform.name)
                                    for d in devs]}))
"""


class Env:
    """A cache folder, a private TMPDIR (so the "predictable /tmp folder" is ours alone)
    and the planted library, for subprocesses."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir(mode=0o700)
        self.cache = tmp_path / "cache"
        self.marker = tmp_path / "marker"
        self.library = tmp_path / "libplanted.so"
        source = tmp_path / "planted.c"
        source.write_text(PLANTED_C)
        subprocess.run([COMPILER, "-shared", "-fPIC", f'-DMARKER="{self.marker}"', "-o",
                        str(self.library), str(source)], check=True, capture_output=True)

    def run(self, code=QUEUE, **extra) -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("OCL_ICD_VENDORS", "PYSYCL_DEVICE_SELECTOR", "PYSYCL_CACHE")}
        env.update(PYSYCL_CACHE_DIR=str(self.cache), TMPDIR=str(self.tmp), **extra)
        r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code)],
                           env=env, capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, r.stderr[-3000:]
        out = json.loads(r.stdout.strip().splitlines()[-1])
        out["stderr"] = r.stderr
        return out

    def plant(self, folder, name="planted.icd"):
        (folder / name).write_text(f"{self.library}\n")


@pytest.fixture
def env(tmp_path):
    return Env(tmp_path)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_planted_library_runs_when_the_loader_reads_its_icd_file(env, tmp_path):
    """The control: handed to the loader directly, the planted ICD file does load the
    library, so the marker's absence below means the file was not read."""
    planted = tmp_path / "planted-vendors"
    planted.mkdir()
    env.plant(planted)
    env.run("""
        import json, pyopencl
        try:
            pyopencl.get_platforms()
        except pyopencl.Error:
            pass                    # no usable platform there: only loading matters
        print(json.dumps({}))
    """, OCL_ICD_VENDORS=str(planted), PYSYCL_OPENCL_PYPI_RUNTIME="0")
    assert env.marker.exists()


def _cached_folder(env, baseline) -> "os.PathLike":
    folder = type(env.cache)(baseline["vendors"])
    assert folder.parent == env.cache / "opencl-vendors"
    assert _mode(env.cache) == 0o700 and _mode(folder.parent) == 0o700 and _mode(folder) == 0o700
    return folder


def _swap_content(folder, env):
    (folder / "pysycl-intel-cpu.icd").write_text(f"{env.library}\n")


def _group_writable(folder, env):
    os.chmod(folder / "pysycl-intel-cpu.icd", 0o664)    # anyone in the group could plant


def _symlink(folder, env):
    env.plant(env.cache, "elsewhere.icd")
    (folder / "pysycl-intel-cpu.icd").unlink()
    (folder / "pysycl-intel-cpu.icd").symlink_to(env.cache / "elsewhere.icd")


@pytest.mark.parametrize("damage", [
    lambda folder, env: env.plant(folder),        # an extra .icd file
    lambda folder, env: env.plant(folder, "pysycl-intel-cpu.icd.bak"),   # any extra file
    _swap_content,                                 # the expected file names another library
    _group_writable,
    _symlink,
], ids=["extra-icd", "extra-file", "changed-content", "group-writable", "symlink"])
def test_planted_icd_in_the_cached_folder_is_not_loaded(env, damage):
    baseline = env.run()
    assert baseline["platforms"] and all("Intel" in p for p in baseline["platforms"])
    folder = _cached_folder(env, baseline)
    damage(folder, env)
    out = env.run()
    assert not env.marker.exists(), "the planted library was loaded"
    assert out["platforms"] == baseline["platforms"]
    assert out["vendors"] != str(folder) and "not using ICD folder" in out["stderr"]
    # A fresh folder inside the checked cache, gone once its process exited.
    assert os.path.dirname(out["vendors"]) == str(folder.parent)
    assert not os.path.exists(out["vendors"])


def test_reused_folder_is_exactly_as_written(env):
    first = env.run()
    folder = _cached_folder(env, first)
    second = env.run()
    assert second["vendors"] == str(folder) and second["platforms"] == first["platforms"]
    assert sorted(os.listdir(folder)) == ["pysycl-intel-cpu.icd"]
    assert all(_mode(p) & 0o022 == 0 for p in folder.iterdir())


def _old_predictable_folder(env, monkeypatch) -> "os.PathLike":
    """Where earlier versions put the folder when the cache could not be written:
    ``<tmp>/pysycl-<uid>-opencl-vendors/<digest of the contents>``."""
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    entries = environment._icd_entries(environment.find_runtime())
    digest = hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]
    folder = env.tmp / f"pysycl-{os.getuid()}-opencl-vendors" / digest
    folder.mkdir(parents=True)
    for name, text in entries.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("cache_state", ["unwritable", "group-writable", "off"])
def test_premade_predictable_tmp_folder_is_not_used(env, monkeypatch, cache_state):
    planted = _old_predictable_folder(env, monkeypatch)
    env.plant(planted)
    extra = {}
    if cache_state == "unwritable":     # even root cannot make a folder under a file
        (env.tmp / "a-file").write_text("")
        env.cache = env.tmp / "a-file" / "cache"
    elif cache_state == "group-writable":
        env.cache.mkdir()
        os.chmod(env.cache, 0o777)
    else:
        extra["PYSYCL_CACHE"] = "0"
    out = env.run(QUEUE + """
    st = os.stat(os.environ["OCL_ICD_VENDORS"])
    print(json.dumps({"vendors": os.environ["OCL_ICD_VENDORS"], "mode": st.st_mode & 0o777,
                      "platforms": [d.get_platform().get_info(sycl.info.platform.name)
                                    for d in devs]}))
    """, **extra)
    assert not env.marker.exists(), "the planted library was loaded"
    assert out["platforms"] and all("Intel" in p for p in out["platforms"])
    vendors = out["vendors"]
    assert not vendors.startswith(str(planted.parent)) and out["mode"] == 0o700
    assert os.path.dirname(vendors) == str(env.tmp)
    assert os.path.basename(vendors).startswith("pysycl-opencl-vendors-")
    assert not os.path.exists(vendors)                 # removed at exit
    if cache_state == "group-writable":
        assert os.listdir(env.cache) == [] and "not using the kernel cache" in out["stderr"]
