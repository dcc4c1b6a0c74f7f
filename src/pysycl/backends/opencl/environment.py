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

>>> from pysycl.backends.opencl import environment
>>> environment.prepare()        # before ``import pyopencl``; cheap when repeated
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import logging
import os
import site
import sys
import tempfile
import threading
from pathlib import Path

from pysycl import config

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
    entries = _icd_entries(library)
    digest = hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]
    for base in (config.cache_dir() / "opencl-vendors", Path(tempfile.gettempdir()) /
                 f"pysycl-{os.getuid() if hasattr(os, 'getuid') else 'user'}-opencl-vendors"):
        folder = base / digest
        try:
            _write_entries(folder, entries)
            return folder
        except OSError as e:   # read-only cache dir: fall back to the temp dir
            log.debug("OpenCL: cannot write ICD files under %s: %s", base, e)
    folder = Path(tempfile.mkdtemp(prefix="pysycl-opencl-vendors-"))
    _write_entries(folder, entries)
    return folder


def _write_entries(folder: Path, entries: dict[str, str]) -> None:
    """Atomic per file (temporary name + rename): processes may race on one folder,
    which is named by the hash of its contents, so a complete folder is never rewritten."""
    if folder.is_dir() and all((folder / n).is_file() for n in entries):
        return
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in entries.items():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, folder / name)


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
