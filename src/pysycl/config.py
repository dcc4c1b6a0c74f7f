"""The one place that reads ``PYSYCL_*`` environment variables.

Values are read on each call (cheap) so tests can change the environment;
hot paths cache what they need at object construction.
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import errc, exception


def device_selector() -> str | None:
    """``PYSYCL_DEVICE_SELECTOR`` (like ``ONEAPI_DEVICE_SELECTOR``)."""
    return os.environ.get("PYSYCL_DEVICE_SELECTOR") or None


def cache_enabled() -> bool:
    return os.environ.get("PYSYCL_CACHE", "1") not in ("0", "false", "off", "no")


def cache_dir() -> Path:
    explicit = os.environ.get("PYSYCL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pysycl"


def key_dir() -> Path:
    """``PYSYCL_KEY_DIR``: the private folder of this user's secret keys (the key that
    signs bundle files); default ``$XDG_CONFIG_HOME/pysycl``, else ``~/.config/pysycl``."""
    explicit = os.environ.get("PYSYCL_KEY_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "pysycl"


def dump_stages() -> frozenset[str]:
    """``PYSYCL_DUMP=input,object,link,spec_constants,kernel_passes,llvm,binary,load``
    (any of the build chain's stages, ``bundle/build_chain.py``; also ``all``, ``ir``
    for the IR after every pass, and ``spirv``/``ptx`` for those targets' binaries):
    the stages whose outputs are printed as they are made."""
    raw = os.environ.get("PYSYCL_DUMP", "")
    return frozenset(s.strip() for s in raw.split(",") if s.strip())


def dump_dir() -> str | None:
    """``PYSYCL_DUMP_DIR``: write the ``PYSYCL_DUMP`` stages into this folder, one file
    per output, instead of printing them to stderr."""
    return os.environ.get("PYSYCL_DUMP_DIR") or None


def debug_options() -> frozenset[str]:
    """``PYSYCL_DEBUG=bounds,...``."""
    raw = os.environ.get("PYSYCL_DEBUG", "")
    return frozenset(s.strip() for s in raw.split(",") if s.strip())


def debug_checks() -> frozenset[str]:
    """The run-time checks compiled into kernels (``codegen.debug_checks``). Any
    ``PYSYCL_DEBUG`` value makes a debug build, whose ``assert`` statements are checked;
    ``bounds`` (or ``all``) adds accessor and fixed-array bounds checks that raise
    ``errc.kernel`` on the host.

    >>> sorted(debug_checks()) if not debug_options() else None
    []
    """
    opts = debug_options()
    if not opts or opts <= {"0", "off", "false", "no"}:
        return frozenset()
    checks = {"assert"}
    if opts & {"bounds", "all", "1"}:
        checks.add("bounds")
    return frozenset(checks)


def num_threads() -> int:
    """Worker threads of the native CPU device: ``PYSYCL_NUM_THREADS``, else the cores
    this process may run on (its CPU affinity, which ``mpiexec --bind-to``, ``taskset``
    and batch systems set), so several ranks on one node do not oversubscribe it."""
    raw = os.environ.get("PYSYCL_NUM_THREADS")
    if raw:
        if raw.isdigit() and int(raw) > 0:
            return int(raw)
        raise exception(errc.invalid, f"PYSYCL_NUM_THREADS={raw!r}: expected a positive "
                        "integer")
    return len(usable_cores())


def usable_cores() -> list[int]:
    """The CPU cores this process may run on, ascending."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return list(range(os.cpu_count() or 1))


DEFAULT_MAX_PROGRAMS = 256


def max_programs() -> int:
    """``PYSYCL_MAX_PROGRAMS``: how many loaded programs (native objects JIT-linked into
    the process, OpenCL or CUDA programs) stay loaded, least recently used unloaded
    first; also the bound on the launchers and executable images kept per
    specialization-constant value set. Default 256 (a native program takes ~140 KiB).

    >>> max_programs() >= 1
    True
    """
    raw = os.environ.get("PYSYCL_MAX_PROGRAMS")
    if not raw:
        return DEFAULT_MAX_PROGRAMS
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    raise exception(errc.invalid, f"PYSYCL_MAX_PROGRAMS={raw!r}: expected a positive integer")


DEFAULT_LITERAL_SPEC_BUILDS = 16


def literal_spec_builds() -> int:
    """``PYSYCL_LITERAL_SPEC_BUILDS``: how many value sets of one kernel get a build of
    their own with the values folded in (literal lowering, the default where code is
    made after the values are known); later value sets of that kernel share one build
    that reads them from the spec-constant buffer (emulated lowering). Default 16.
    A kernel whose values change all the time is then built once more, not per value:
    each build costs tens of milliseconds and memory the code generator never gives
    back. ``spec_constant_lowering("literal")`` asks for literal builds regardless.

    >>> literal_spec_builds() >= 0
    True
    """
    raw = os.environ.get("PYSYCL_LITERAL_SPEC_BUILDS")
    if not raw:
        return DEFAULT_LITERAL_SPEC_BUILDS
    if raw.isdigit():
        return int(raw)
    raise exception(errc.invalid, f"PYSYCL_LITERAL_SPEC_BUILDS={raw!r}: expected a "
                    "non-negative integer")


def autotune() -> str:
    """``PYSYCL_AUTOTUNE``: how ``sycl.autotune`` kernels choose their config. ``1``
    (default) measures each key once and stores the choice; ``0`` (or ``off``) launches
    the first config without measuring; ``retune`` measures again (once per key in the
    process) and replaces the stored choices.

    >>> autotune() in ("on", "off", "retune")
    True
    """
    raw = os.environ.get("PYSYCL_AUTOTUNE", "1").strip().lower()
    if raw in ("", "1", "on", "true", "yes"):
        return "on"
    if raw in ("0", "off", "false", "no"):
        return "off"
    if raw == "retune":
        return "retune"
    raise exception(errc.invalid, f"PYSYCL_AUTOTUNE={raw!r}: expected 1, 0 or retune")


#: The most work-items one thread may be given (each is an unrolled copy of the kernel).
MAX_COARSEN = 64


def coarsen() -> str | int:
    """``PYSYCL_COARSEN``: thread coarsening, where each thread runs several consecutive
    work-items of a kernel (``passes/coarsen_threads.py``). ``auto`` (default): the
    compiler's choice (CUDA kernels with neighbour reuse, such as stencils, and range
    kernels with reductions); ``off`` (or ``0``, ``1``): never; an integer K from 2 to
    64: every kernel that can be, on every backend.

    >>> coarsen() in ("auto", "off") or 2 <= coarsen() <= MAX_COARSEN
    True
    """
    raw = os.environ.get("PYSYCL_COARSEN", "auto").strip().lower()
    if raw in ("", "auto"):
        return "auto"
    if raw in ("0", "1", "off", "false", "no"):
        return "off"
    if raw.isdigit() and 2 <= int(raw) <= MAX_COARSEN:
        return int(raw)
    raise exception(errc.invalid, f"PYSYCL_COARSEN={raw!r}: expected auto, off or a "
                    f"number of work-items per thread from 2 to {MAX_COARSEN}")


def trust_bundle_code() -> bool:
    """``PYSYCL_TRUST_BUNDLE_CODE=1``: run the native code of bundle files that this user
    did not sign as it is (after its structure is checked), as DPC++ does, instead of
    building it again from the file's pysycl IR or refusing it (docs/bundle-files.md)."""
    return os.environ.get("PYSYCL_TRUST_BUNDLE_CODE", "0") not in ("0", "false", "off", "no", "")


def trace_path() -> str | None:
    """``PYSYCL_TRACE``: write a timeline of every command and build to this file
    (Chrome trace format) when the process exits."""
    return os.environ.get("PYSYCL_TRACE") or None


def cuda_libdevice() -> str | None:
    return os.environ.get("PYSYCL_LIBDEVICE") or None


def environ_get(name: str, default: str | None = None) -> str | None:
    """Read another variable the process needs (backend discovery)."""
    return os.environ.get(name, default)


def environ_with(**overrides: str) -> dict[str, str]:
    """This process's environment with ``overrides``: for a child process (``pysycl
    trace`` runs a script with ``PYSYCL_TRACE`` set)."""
    return {**os.environ, **overrides}


def environ_set(name: str, value: str) -> None:
    """Set a variable for this process (used to point the OpenCL ICD loader
    at a runtime installed from PyPI before the loader starts)."""
    os.environ[name] = value


def opencl_pypi_runtime() -> bool:
    """``PYSYCL_OPENCL_PYPI_RUNTIME=0`` stops pysycl from registering Intel's OpenCL CPU
    runtime installed from PyPI with the ICD loader (``backends.opencl.environment``)."""
    return os.environ.get("PYSYCL_OPENCL_PYPI_RUNTIME", "1") not in ("0", "false", "off", "no")


def spirv_tools_dir() -> str | None:
    """``PYSYCL_SPIRV_TOOLS``: folder holding ``spirv-val``/``spirv-dis``; default: ``PATH``."""
    return os.environ.get("PYSYCL_SPIRV_TOOLS") or None


def spirv_validate() -> str:
    """``PYSYCL_SPIRV_VALIDATE``: ``auto`` (default) runs ``spirv-val`` on every SPIR-V
    module when the tool is installed, ``1`` requires it, ``0`` skips it."""
    raw = os.environ.get("PYSYCL_SPIRV_VALIDATE", "auto").strip().lower()
    if raw in ("0", "false", "off", "no"):
        return "off"
    return "auto" if raw in ("", "auto") else "on"


def build_jobs() -> int:
    """``PYSYCL_BUILD_JOBS``: how many kernels of a bundle compile at once (threads; LLVM
    runs without the GIL). Default: the processors this process may run on."""
    raw = os.environ.get("PYSYCL_BUILD_JOBS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):   # not on Linux
        return max(1, os.cpu_count() or 1)


def cuda_home() -> str | None:
    """Root of a CUDA toolkit (``CUDA_HOME``, else ``CUDA_PATH``), where libdevice may be."""
    return os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or None


def cuda_peer_access() -> bool:
    """``PYSYCL_CUDA_PEER_ACCESS=0`` copies between two GPUs through host memory even
    where they could reach each other's memory directly (peer-to-peer)."""
    return os.environ.get("PYSYCL_CUDA_PEER_ACCESS", "1") not in ("0", "false", "off", "no")


def cuda_compile_in_worker() -> bool:
    """``PYSYCL_CUDA_COMPILE_WORKER=0`` compiles PTX in this process (faster first compile;
    an LLVM assertion then ends the program instead of raising ``errc.build``)."""
    return os.environ.get("PYSYCL_CUDA_COMPILE_WORKER", "1") not in ("0", "false", "off", "no")


# Node-local rank and rank count as MPI launchers and batch systems publish them
# (Open MPI, MPICH's Hydra, Slurm, PMIx), for picking a device per rank.
_LOCAL_RANK_VARS = (("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
                    ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
                    ("PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"),
                    ("SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"))


def launcher_local_rank() -> tuple[int, int] | None:
    """(node-local rank, ranks on this node) from the launcher's environment, if any."""
    for rank_var, size_var in _LOCAL_RANK_VARS:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank and rank.isdigit():
            count = int(size) if size and size.isdigit() else int(rank) + 1
            return int(rank), max(count, int(rank) + 1)
    return None
