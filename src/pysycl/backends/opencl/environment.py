"""Make Intel's OpenCL CPU runtime installed from PyPI visible to the ICD loader.

The ``intel-opencl-rt`` wheel puts ``libintelocl.so`` into ``<prefix>/lib`` and an ICD
file whose path is a build-machine placeholder (``/opt/anaconda1anaconda2anaconda3``)
into ``<prefix>/etc/OpenCL/vendors``, so the loader bundled with pyopencl never finds
it. What works inside one process with nothing set beforehand (measured):

1. load the runtime's dependencies (``libtbb.so.12``, ``libintlc.so.5``, ``libimf.so``,
   ``libsvml.so``, ``libirng.so``) with ``RTLD_GLOBAL``: ``LD_LIBRARY_PATH`` set after
   start-up is never read again by the dynamic linker;
2. write an ICD file with the absolute path of ``libintelocl.so`` into a private folder;
3. point ``OCL_ICD_VENDORS`` at that folder before the loader's first
   ``clGetPlatformIDs`` (it reads the variable once).

``OCL_ICD_VENDORS`` *replaces* ``/etc/OpenCL/vendors``, so the private folder also
gets a copy of every system ICD file (and of the folder or file the user had put in
``OCL_ICD_VENDORS``), keeping GPU drivers and PoCL usable.

The loader ``dlopen``s every library an ICD file in that folder names, so the folder is
written only where nobody else can write: inside the kernel cache once that is checked
(``detail.private_files``: ours, not writable by group or others), as
``opencl-vendors/<digest of the contents>``, reused only when it holds exactly the
expected files with exactly the expected contents, each ours and not writable by group
or others; otherwise (a missing or refused cache, ``PYSYCL_CACHE=0``) a fresh
``tempfile.mkdtemp`` folder (0700, an unpredictable name), removed at exit. Never a
predictable shared path.

>>> from pysycl.backends.opencl import environment
>>> environment.prepare()        # before ``import pyopencl``; cheap when repeated
"""
from __future__ import annotations

import atexit
import ctypes
import glob
import hashlib
import logging
import os
import shutil
import site
import stat
import sys
import tempfile
import threading
from pathlib import Path

from pysycl import config
from pysycl.detail.private_files import checked_cache_root, private_dir, untrusted_reason

log = logging.getLogger(__name__)

RUNTIME_LIBRARY = "libintelocl.so"
# Load order matters: libimf and libsvml need libintlc, libintelocl needs all of them.
DEPENDENCIES = ("libtbb.so.12", "libintlc.so.5", "libimf.so", "libsvml.so", "libirng.so")
SYSTEM_VENDOR_DIR = Path("/etc/OpenCL/vendors")
_ICD_NAME = "pysycl-intel-cpu.icd"

_lock = threading.Lock()
_done = False
_result: "PreparedRuntime | None" = None


class PreparedRuntime:
    """What :func:`prepare` did: the runtime library and the private vendors folder."""

    def __init__(self, library: Path, vendors_dir: Path, preloaded: tuple[str, ...]):
        self.library = library
        self.vendors_dir = vendors_dir
        self.preloaded = preloaded

    def __repr__(self) -> str:
        return f"PreparedRuntime({str(self.library)!r}, vendors={str(self.vendors_dir)!r})"


def library_dirs() -> list[Path]:
    """Folders where pip, conda and ``pip --user`` put the wheels' ``lib`` data files."""
    candidates = [Path(sys.prefix) / "lib", Path(sys.exec_prefix) / "lib"]
    try:
        candidates.append(Path(site.getuserbase()) / "lib")
    except Exception:   # site can be stubbed out in embedded interpreters
        pass
    # A wheel's data files land in <scheme root>/lib; site-packages is
    # <scheme root>/lib/pythonX.Y/site-packages, so walk two levels up.
    paths = list(getattr(site, "getsitepackages", lambda: [])())
    try:
        paths.append(site.getusersitepackages())
    except Exception:
        pass
    paths += [p for p in sys.path if p.endswith("site-packages")]
    for sp in paths:
        candidates.append(Path(sp).parent.parent)
    candidates.append(Path(sys.base_prefix) / "lib")
    seen: list[Path] = []
    for c in candidates:
        if c not in seen and c.is_dir():
            seen.append(c)
    return seen


def find_runtime() -> Path | None:
    """Absolute path of ``libintelocl.so`` from PyPI, or None."""
    for d in library_dirs():
        lib = d / RUNTIME_LIBRARY
        if lib.exists():
            return lib.resolve()
    return None


def prepare() -> PreparedRuntime | None:
    """Register the PyPI runtime with the ICD loader; idempotent, never raises.

    Returns what was prepared, or None (no runtime installed, disabled by
    ``PYSYCL_OPENCL_PYPI_RUNTIME=0``, or an unexpected failure, which is logged).
    """
    global _done, _result
    if _done:
        return _result
    with _lock:
        if _done:
            return _result
        try:
            _result = _prepare()
        except Exception as e:  # discovery must never fail because of this
            log.warning("could not register the PyPI OpenCL runtime: %s", e)
            _result = None
        _done = True
        return _result


def _prepare() -> PreparedRuntime | None:
    if not config.opencl_pypi_runtime():
        return None
    library = find_runtime()
    if library is None:
        return None
    preloaded = _preload_dependencies(library.parent)
    vendors = _write_vendors_dir(library)
    config.environ_set("OCL_ICD_VENDORS", str(vendors))
    log.debug("OpenCL: registered %s through %s", library, vendors)
    return PreparedRuntime(library, vendors, preloaded)


def _preload_dependencies(libdir: Path) -> tuple[str, ...]:
    loaded = []
    for name in DEPENDENCIES:
        path = _find_dependency(libdir, name)
        if path is None:
            continue    # the system may provide it (e.g. TBB from the distribution)
        try:
            ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            loaded.append(str(path))
        except OSError as e:
            log.debug("OpenCL: could not preload %s: %s", path, e)
    return tuple(loaded)


def _find_dependency(libdir: Path, name: str) -> Path | None:
    for d in [libdir, *library_dirs()]:
        if (d / name).exists():
            return d / name
    return None


def _existing_icd_files() -> list[Path]:
    """ICD files the loader would have read had we not set ``OCL_ICD_VENDORS``."""
    user = config.environ_get("OCL_ICD_VENDORS")
    if user:
        p = Path(user)
        if p.is_file():
            return [p]
        if p.is_dir():
            return sorted(p.glob("*.icd"))
        return []
    return sorted(SYSTEM_VENDOR_DIR.glob("*.icd")) if SYSTEM_VENDOR_DIR.is_dir() else []


def device_types_here() -> frozenset[str] | None:
    """Device types the ICD loader could list, from the ICD files alone (nothing is
    loaded): ``{"cpu"}`` when Intel's CPU runtime (CPU devices only) is the one driver,
    None (unknown: any type) when the loader would also open another library, empty
    when there is no driver at all.

    >>> device_types_here() in (None, frozenset(), frozenset({"cpu"}))
    True
    """
    if config.environ_get("OCL_ICD_FILENAMES"):
        return None     # libraries named directly: nothing says what they offer
    cpu_runtime = config.opencl_pypi_runtime() and find_runtime() is not None
    for icd in _existing_icd_files():
        try:
            named = os.path.basename(icd.read_text().strip())
        except OSError:
            continue    # the loader cannot read it either
        if named != RUNTIME_LIBRARY:
            return None
        cpu_runtime = True
    return frozenset({"cpu"}) if cpu_runtime else frozenset()


def _icd_entries(library: Path) -> dict[str, str]:
    """File name -> contents of the private vendors folder."""
    entries = {_ICD_NAME: f"{library}\n"}
    for icd in _existing_icd_files():
        try:
            text = icd.read_text()
        except OSError:
            continue
        # Our own folder (a second process, or OCL_ICD_VENDORS pointing at a previous
        # run's folder) and system entries naming the same runtime would show the Intel
        # platform twice.
        if icd.name == _ICD_NAME or os.path.basename(text.strip()) == RUNTIME_LIBRARY:
            continue
        if text not in entries.values():
            name = icd.name if icd.name.startswith("system-") else f"system-{icd.name}"
            entries[name] = text
    return entries


def _write_vendors_dir(library: Path) -> Path:
    entries = {name: text.encode("utf-8") for name, text in _icd_entries(library).items()}
    return _cached_vendors_dir(entries) or _temporary_vendors_dir(entries)


def _cached_vendors_dir(entries: dict[str, bytes]) -> Path | None:
    """``<cache>/opencl-vendors/<digest>`` holding exactly ``entries``, or None when the
    cache is off or cannot be trusted (warned once by ``checked_cache_root``)."""
    if not config.cache_enabled():
        return None
    root = config.cache_dir()
    base = root / "opencl-vendors"
    if not checked_cache_root(root):
        return None
    reason = private_dir(base)
    if reason is not None:
        log.warning("OpenCL: not writing ICD files under %s: %s", base, reason)
        return None
    folder = base / hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]
    reason = _vendors_dir_differs(folder, entries)
    if reason is None:
        return folder
    if os.path.lexists(folder):
        log.warning("OpenCL: not using ICD folder %s: %s; writing a fresh one", folder, reason)
    try:
        fresh = Path(tempfile.mkdtemp(prefix=".tmp-", dir=base))   # 0700
        _write_entries(fresh, entries)
    except OSError as e:
        log.debug("OpenCL: cannot write ICD files under %s: %s", base, e)
        return None
    try:
        # Published complete in one step; fails when another process published first,
        # or when ``folder`` is there and not as expected (it is never removed: another
        # process may be reading it).
        os.rename(fresh, folder)
        return folder
    except OSError:
        if _vendors_dir_differs(folder, entries) is None:
            shutil.rmtree(fresh, ignore_errors=True)
            return folder
    _remove_at_exit(fresh)
    return fresh


def _vendors_dir_differs(folder: Path, entries: dict[str, bytes]) -> str | None:
    """Why ``folder`` is not exactly ``entries`` (file name -> contents) written by us,
    or None when it is. Each file is checked as opened (no symbolic links)."""
    reason = private_dir(folder, create=False)
    if reason is not None:
        return reason
    try:
        names = set(os.listdir(folder))
        if names != set(entries):
            return f"it holds {sorted(names)}, not {sorted(entries)}"
        for name, expected in entries.items():
            fd = os.open(folder / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return f"{name} is not a regular file"
                reason = untrusted_reason(st, name)
                if reason is not None:
                    return reason
                if fh.read(len(expected) + 1) != expected:
                    return f"{name} does not hold what pysycl wrote"
    except OSError as e:
        return f"cannot read it ({e.strerror or e})"
    return None


def _temporary_vendors_dir(entries: dict[str, bytes]) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="pysycl-opencl-vendors-"))   # 0700, unpredictable
    _remove_at_exit(folder)
    _write_entries(folder, entries)
    return folder


def _remove_at_exit(folder: Path) -> None:
    atexit.register(shutil.rmtree, folder, ignore_errors=True)


def _write_entries(folder: Path, entries: dict[str, bytes]) -> None:
    """Write the files into ``folder``, a fresh folder that only this process knows."""
    for name, data in entries.items():
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                     getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


def icd_loader_library() -> str | None:
    """Path of the ICD loader pyopencl links against (its wheel bundles one), for the
    ctypes calls pyopencl does not wrap (USM, device globals). None: use the system's."""
    try:
        import importlib.util
        spec = importlib.util.find_spec("pyopencl")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    pkg = Path(spec.origin).parent
    for pattern in (".libs/libOpenCL*.so*", "../pyopencl.libs/libOpenCL*.so*"):
        hits = sorted(glob.glob(str(pkg / pattern)))
        if hits:
            return hits[0]
    import ctypes.util
    return ctypes.util.find_library("OpenCL")
