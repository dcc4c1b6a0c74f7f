"""LLVM IR text -> PTX through LLVM's NVPTX backend, with libdevice linked on demand.

Pipeline (``PtxCompiler.compile``), each step for a reason:

1. parse + ``verify()``: a malformed module is an ``errc.build`` error, never an LLVM abort;
2. check that every kernel is defined and every ``__nv_*`` call can be resolved;
3. link libdevice only when an ``__nv_*`` function is declared, and only the functions
   needed (see ``_libdevice_module``: cached bitcode re-parsed per link, because
   ``link_in`` consumes its source);
4. internalise every function that is not a kernel, so O3 inlines and drops libdevice;
5. O3 with the NVPTX ``TargetMachine`` (reused: NVPTX TMs hold no per-module state,
   unlike SPIR-V's) and emit PTX;
6. check that every kernel came out as a ``.entry`` (it would not without ``ptx_kernel``).

The llvmlite wheel has LLVM assertions on, so an LLVM error kills the process. By default
(``PYSYCL_CUDA_COMPILE_WORKER``, see ``config``) steps 1-6 run in one persistent worker
process; a crash there becomes ``exception(errc.build)`` carrying LLVM's stderr and the
worker restarts on the next compile. A round trip costs well under a millisecond on top of
the compile; the one-time start is the price of an interpreter and llvmlite.
"""
from __future__ import annotations

import collections
import importlib.util
import json
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Sequence

from ... import config
from ...errors import errc, exception
from ..base import Compiler, Target
from .target import DATA_LAYOUT, TRIPLE, cuda_target, ptx_symbol

LIBDEVICE_HINT = ("install pysycl[cuda] (the nvidia-nvvm wheel ships libdevice.10.bc), "
                  "or set PYSYCL_LIBDEVICE to a libdevice.10.bc")

# Functions the CUDA driver itself resolves when it JIT-links PTX, and libdevice's
# __nvvm_reflect, which the NVPTX pipeline folds (NVVMReflect).
_RESOLVED_LATER = frozenset({"vprintf", "malloc", "free", "__assertfail", "__nvvm_reflect"})


# -- libdevice --------------------------------------------------------------------------
def _site_candidates() -> list[Path]:
    """libdevice inside installed wheels, in order of preference."""
    found: list[Path] = []
    spec = importlib.util.find_spec("nvidia")      # namespace package of NVIDIA's wheels
    for root in (spec.submodule_search_locations or []) if spec else []:
        found.append(Path(root) / "cu13" / "nvvm" / "libdevice" / "libdevice.10.bc")
        found.append(Path(root) / "cuda_nvcc" / "nvvm" / "libdevice" / "libdevice.10.bc")
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    for root in (spec.submodule_search_locations or []) if spec else []:
        found.append(Path(root) / "backends" / "nvidia" / "lib" / "libdevice.10.bc")
    return found


def find_libdevice() -> str | None:
    """Path of ``libdevice.10.bc``, or None. Order: ``PYSYCL_LIBDEVICE``, the
    ``nvidia-nvvm`` (CUDA 13) and ``nvidia-cuda-nvcc-cu12`` wheels, ``$CUDA_HOME``,
    ``/usr/local/cuda*``, Triton's copy.

    >>> find_libdevice()            # doctest: +SKIP
    '/usr/local/cuda-13.0/nvvm/libdevice/libdevice.10.bc'
    """
    explicit = config.cuda_libdevice()
    if explicit:
        return explicit if os.path.isfile(explicit) else None
    candidates = _site_candidates()
    home = config.cuda_home()
    toolkits = ([Path(home)] if home else []) + [Path("/usr/local/cuda")] + sorted(
        Path("/usr/local").glob("cuda-*"), reverse=True)
    candidates[2:2] = [t / "nvvm" / "libdevice" / "libdevice.10.bc" for t in toolkits]
    for path in candidates:
        if path.is_file():
            return str(path)
    return None


# Full libdevice bitcode with every function made linkonce_odr, so that ``link_in`` only
# materialises what is referenced; and, per set of wanted ``__nv_*`` functions, the bitcode
# of just those definitions. Measured on libdevice 13.0 (470 KB): parsing it costs ~45 ms,
# cloning a parsed copy ~60 ms, and O3 over a module with all of it linked ~115 ms;
# re-parsing a cached subset costs well under 1 ms.
_libdevice_full: dict[str, bytes] = {}
_libdevice_subsets: dict[tuple[str, frozenset[str]], bytes] = {}


def _declaration(name: str, fn_type: str) -> str:
    depth = 0                        # split "ret (params)" at the last top-level "("
    for i in range(len(fn_type) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(fn_type[i], 0)
        if depth == 0:
            return f"declare {fn_type[:i].strip()} @{name}{fn_type[i:]}"
    raise ValueError(fn_type)


def _libdevice_module(path: str, wanted: dict[str, str], llvm):
    """A module holding the libdevice definitions of ``wanted`` (name -> function type)."""
    key = (path, frozenset(wanted))
    data = _libdevice_subsets.get(key)
    if data is None:
        full = _libdevice_full.get(path)
        if full is None:
            lib = llvm.parse_bitcode(Path(path).read_bytes())
            for f in lib.functions:
                if not f.is_declaration:
                    f.linkage = llvm.Linkage.linkonce_odr
            full = _libdevice_full[path] = lib.as_bitcode()
        lib = llvm.parse_bitcode(full)
        lib.triple, lib.data_layout = TRIPLE, DATA_LAYOUT
        subset = llvm.parse_assembly(
            f'target triple = "{TRIPLE}"\ntarget datalayout = "{DATA_LAYOUT}"\n'
            + "\n".join(_declaration(n, t) for n, t in sorted(wanted.items())))
        subset.link_in(lib)
        data = _libdevice_subsets[key] = subset.as_bitcode()
    return llvm.parse_bitcode(data)


# -- the compile itself (in this process or in the worker) -------------------------------
_tm_cache: dict[tuple, object] = {}
_compile_lock = threading.Lock()     # one TM is shared; LLVM codegen is not re-entrant


def _llvm():
    import llvmlite.binding as llvm
    if not _tm_cache:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
    return llvm


def _target_machine(llvm, cpu: str, features: str, opt: int):
    key = (cpu, features, opt)
    tm = _tm_cache.get(key)
    if tm is None:
        tm = llvm.Target.from_triple(TRIPLE).create_target_machine(
            cpu=cpu, features=features, opt=opt)
        _tm_cache[key] = tm
    return tm


_FTZ_FLAG = '!llvm.module.flags = !{!0}\n!0 = !{i32 4, !"nvvm-reflect-ftz", i32 1}\n'


def compile_ptx(llvm_ir: str, kernel_names: Sequence[str], cpu: str, features: str = "",
                opt: int = 3, libdevice: str | None = None, ftz: bool = False) -> str:
    """Steps 1-6 of the module docstring, in this process. Raises ``errc.build``."""
    llvm = _llvm()
    kernel_names = [ptx_symbol(k) for k in kernel_names]
    with _compile_lock:
        try:
            mod = llvm.parse_assembly(llvm_ir)
            mod.triple = TRIPLE
            mod.data_layout = DATA_LAYOUT
            mod.verify()
        except RuntimeError as e:
            raise exception(errc.build, f"invalid LLVM IR for {TRIPLE}: {e}") from None
        defined = {f.name for f in mod.functions if not f.is_declaration}
        missing = [k for k in kernel_names if k not in defined]
        if missing:
            raise exception(errc.build, f"kernel(s) {missing} not defined in the module")
        wanted = {f.name: str(f.global_value_type) for f in mod.functions
                  if f.is_declaration and f.name.startswith("__nv_")}
        if wanted:
            if libdevice is None:
                raise exception(errc.build, f"libdevice not found: {LIBDEVICE_HINT} "
                                f"(kernel calls {', '.join(sorted(wanted)[:4])})")
            mod.link_in(_libdevice_module(libdevice, wanted, llvm))
        if ftz:  # libdevice's __nvvm_reflect("__CUDA_FTZ") reads this flag (off: IEEE denormals)
            mod.link_in(llvm.parse_assembly(_FTZ_FLAG))
        kernels = set(kernel_names)
        unresolved = []
        for f in mod.functions:
            if f.is_declaration:
                if not (f.name.startswith("llvm.") or f.name in _RESOLVED_LATER):
                    unresolved.append(f.name)
            elif f.name not in kernels:
                f.linkage = llvm.Linkage.internal
        if unresolved:
            raise exception(errc.build, "undefined device function(s): "
                            + ", ".join(sorted(unresolved)))
        tm = _target_machine(llvm, cpu, features, opt)
        if opt:
            pto = llvm.create_pipeline_tuning_options(speed_level=opt)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        ptx = tm.emit_assembly(mod)
    not_entries = [k for k in kernel_names if f".entry {k}(" not in ptx]
    if not_entries:
        raise exception(errc.build, f"{not_entries} did not become PTX kernels: define them "
                        "with the ptx_kernel calling convention")
    return ptx


# -- the worker process -----------------------------------------------------------------
def _send(stream, message) -> None:
    """One message: a little-endian u64 length, then UTF-8 JSON (plain data only, so
    neither side ever deserialises code or objects from the other)."""
    data = json.dumps(message).encode()
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _recv(stream):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the compile worker closed its pipe")
    (size,) = struct.unpack("<Q", head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the compile worker closed its pipe mid-message")
    return json.loads(data)


def _worker_main() -> None:
    """Loop of the compile worker: requests on stdin, replies on a private copy of stdout
    (fd 1 is pointed at stderr so stray prints cannot break the stream)."""
    reply = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while True:
        try:
            kwargs = _recv(requests)
        except EOFError:
            return
        try:
            result = ("ok", compile_ptx(**kwargs))
        except exception as e:
            result = ("err", e.code().name, str(e))
        except Exception as e:  # noqa: BLE001 - anything else is still a build failure
            result = ("err", "build", f"{type(e).__name__}: {e}")
        _send(reply, result)


class _Worker:
    """One persistent child process; restarted after it dies."""

    def __init__(self):
        self._proc: subprocess.Popen | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._lines = 0
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        # sys.path travels on the command line so the child finds this very package
        # (editable installs, PYTHONPATH=src) without the environment being read here.
        code = (f"import sys; sys.path[:0] = {sys.path!r}; "
                "from pysycl.backends.cuda.compiler import _worker_main; _worker_main()")
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        threading.Thread(target=self._drain, args=(proc.stderr,), daemon=True).start()
        return proc

    def _drain(self, stream) -> None:
        for raw in stream:
            self._stderr.append(raw.decode(errors="replace").rstrip())
            self._lines += 1

    def run(self, **kwargs) -> str:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc, mark = self._proc, self._lines
            try:
                _send(proc.stdin, kwargs)
                result = _recv(proc.stdout)
            except (EOFError, OSError, ValueError):
                rc = proc.wait()
                self._proc = None
                threading.Event().wait(0.05)   # let the drain thread take the last lines
                news = list(self._stderr)[-max(self._lines - mark, 0):] if self._lines > mark else []
                message = "\n".join(news[-20:]) or "(no message)"
                raise exception(errc.build, f"the NVPTX backend crashed (exit status {rc}) "
                                f"compiling {', '.join(kwargs['kernel_names'])}:"
                                f"\n{message}") from None
        if result[0] == "ok":
            return result[1]
        raise exception(errc[result[1]], result[2])

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
                self._proc = None


_worker = _Worker()


# -- the Compiler ------------------------------------------------------------------------
class PtxCompiler(Compiler):
    """LLVM IR (text) -> PTX for one ``sm_XX``.

    >>> ptx = PtxCompiler(cuda_target((9, 0))).compile(ir, ["vadd"])   # doctest: +SKIP
    """

    def __init__(self, target: Target | None = None, *, opt_level: int = 3,
                 ftz: bool = False, in_worker: bool | None = None):
        self.target = target or cuda_target()
        self.opt_level = opt_level
        self.ftz = ftz
        self.in_worker = config.cuda_compile_in_worker() if in_worker is None else in_worker
        self._libdevice: str | None = None
        self._libdevice_looked = False

    @property
    def libdevice(self) -> str | None:
        if not self._libdevice_looked:
            self._libdevice, self._libdevice_looked = find_libdevice(), True
        return self._libdevice

    def options_key(self) -> str:
        """What besides the IR decides the PTX (part of the cache key)."""
        return f"{self.target.cpu};{self.target.features};O{self.opt_level};ftz={int(self.ftz)}"

    def compile(self, llvm_ir: str, kernel_names: Sequence[str]) -> bytes:
        libdevice = self.libdevice if "__nv_" in llvm_ir else None
        kwargs = dict(llvm_ir=llvm_ir, kernel_names=list(kernel_names), cpu=self.target.cpu,
                      features=self.target.features, opt=self.opt_level,
                      libdevice=libdevice, ftz=self.ftz)
        ptx = _worker.run(**kwargs) if self.in_worker else compile_ptx(**kwargs)
        return ptx.encode()

    def check_binary(self, binary: bytes, link: bool = False) -> None:
        """PTX read from a file is ASCII text that names a PTX version (the driver's
        assembler checks the rest and reports errors)."""
        text = bytes(binary).rstrip(b"\0")
        if not text.isascii() or b"\0" in text or b".version" not in text:
            raise exception(errc.invalid, "PTX module: not PTX text")

    def disassemble(self, binary: bytes) -> str:
        return binary.rstrip(b"\0").decode()
