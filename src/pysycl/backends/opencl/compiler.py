"""LLVM IR text -> SPIR-V bytes, in a persistent worker process.

>>> from pysycl.backends.opencl.compiler import SpirvCompiler
>>> spv = SpirvCompiler().compile(llvm_ir, ["vadd"])       # doctest: +SKIP
>>> SpirvCompiler().compile(ir_with_atomic_fadd, ["k"],    # doctest: +SKIP
...                         extensions=frozenset({"SPV_EXT_shader_atomic_float_add"}))

Why a worker: the llvmlite wheel has LLVM
assertions on and the SPIR-V backend turns unsupported IR into ``LLVM ERROR`` (exit) or
an assertion (abort), which cannot be caught in-process; and LLVM 22's SPIR-V backend
keeps state from one module to the next that can give a later module duplicate result
IDs, so each module is compiled in a child the worker forks (``spirv_worker.py``
explains both). One long-lived worker serves every :class:`SpirvCompiler` of the
process, one request at a time; a crash becomes ``exception(errc.build)`` carrying the
child's stderr ("LLVM ERROR: ..."), and the worker goes on (a worker that died itself
is started again by the next compile).

Extensions: ``--spirv-ext`` is process global in LLVM, and each setting *replaces* the
allowed set, so the worker sets exactly the set a request asks for when it differs from
the previous request's (a ``set_option`` call, microseconds), rather than enabling a
union: the output then depends only on (IR, target, opt level, extensions), which is
what the cache key holds, and a module never silently uses an extension the caller
did not check the device for.
"""
from __future__ import annotations

import logging
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

from pysycl import config
from pysycl.backends.base import Compiler, Target
from pysycl.backends.opencl import spirv_worker
from pysycl.backends.opencl.target import SPIRV64
from pysycl.errors import errc, exception

log = logging.getLogger(__name__)

_WORKER_SCRIPT = Path(spirv_worker.__file__)
# ``-c`` puts the current directory first on sys.path; the worker must not import
# whatever happens to lie there, so drop it before running the script.
_BOOTSTRAP = ("import sys, runpy; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
              f"runpy.run_path({str(_WORKER_SCRIPT)!r}, run_name='__main__')")

# Crash messages that have a known cause.
_HINTS = (
    ("Unable to meet SPIR-V requirements",
     "the module needs a SPIR-V extension that was not enabled (bitreverse: "
     "SPV_KHR_bit_instructions; float atomics: SPV_EXT_shader_atomic_float_add / "
     "SPV_EXT_shader_atomic_float_min_max; function pointers: SPV_INTEL_function_pointers)"),
    ("indirect call", "SPIR-V without SPV_INTEL_function_pointers has no indirect calls"),
    ("G_SADDO", "llvm.sadd/ssub.with.overflow cannot be selected by LLVM 22's SPIR-V backend"),
    ("G_SSUBO", "llvm.sadd/ssub.with.overflow cannot be selected by LLVM 22's SPIR-V backend"),
)


class WorkerCrash(Exception):
    """The worker process died; ``message`` is what it wrote to stderr."""

    def __init__(self, returncode: int | None, message: str):
        super().__init__(message)
        self.returncode = returncode
        self.message = message


class SpirvWorker:
    """A persistent child process running ``spirv_worker.py``; thread safe.

    Started on the first request, restarted when it died or after a ``fork`` (a child
    must not share its parent's pipes). A compile that crashes LLVM kills only the
    worker's child for that request (:class:`WorkerCrash`), not the worker.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._pid = None
        self.starts = 0
        self.start_seconds = 0.0

    def request(self, fields: list[bytes]) -> list[bytes]:
        with self._lock:
            if self._proc is None or self._pid != os.getpid() or self._proc.poll() is not None:
                self._start()
            offset = os.fstat(self._stderr.fileno()).st_size
            try:
                spirv_worker.write_message(self._proc.stdin, fields)
                reply = spirv_worker.read_message(self._proc.stdout)
                if reply is None:
                    raise EOFError("worker closed its output")
            except (OSError, EOFError, ValueError):
                raise self._collect_crash(offset) from None
            if reply[:1] == [b"crash"]:    # the compiling child died; the worker lives
                raise WorkerCrash(int(reply[1]), self._stderr_since(offset))
            return reply

    def _start(self) -> None:
        self._stop()
        t0 = time.perf_counter()
        # stderr goes to an unnamed file, never a pipe: LLVM may print warnings
        # that nobody reads, and a full pipe would block the worker.
        self._stderr = tempfile.TemporaryFile(prefix="pysycl-spirv-worker-")
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, close_fds=True)
        self._pid = os.getpid()
        hello = None
        try:
            hello = spirv_worker.read_message(self._proc.stdout)
        except (OSError, EOFError):
            pass
        if hello != [b"ready"]:
            err = self._collect_crash(0)
            raise exception(errc.build, f"the SPIR-V compiler worker did not start: {err.message}")
        self.starts += 1
        self.start_seconds = time.perf_counter() - t0
        log.debug("SPIR-V worker %d started in %.1f ms", self._proc.pid, self.start_seconds * 1e3)

    def _collect_crash(self, offset: int) -> WorkerCrash:
        proc = self._proc
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        text = self._stderr_since(offset)
        self._stop()
        return WorkerCrash(rc, text)

    def _stderr_since(self, offset: int) -> str:
        """The end of what the worker (and its children) wrote to stderr from ``offset``."""
        self._stderr.seek(offset)
        return self._stderr.read()[-8192:].decode("utf-8", "replace").strip()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and self._pid == os.getpid():
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        with self._lock:
            self._stop()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None


_worker = SpirvWorker()


def shared_worker() -> SpirvWorker:
    """The process-wide worker every :class:`SpirvCompiler` uses."""
    return _worker


class SpirvCompiler(Compiler):
    """Optimise LLVM IR in SPIR-V conventions and emit a SPIR-V module.

    ``opt_level`` 0-3 selects the new-PM pipeline (``speed_level``); non-kernel
    definitions are internalised first so they are inlined and dropped.
    """

    def __init__(self, target: Target = SPIRV64, opt_level: int = 3,
                 worker: SpirvWorker | None = None):
        self.target = target
        self.opt_level = opt_level
        self._worker = worker or _worker
        self.last_timings: dict[str, float] = {}

    def compile(self, llvm_ir: str, kernel_names: Sequence[str], *,
                extensions: frozenset[str] = frozenset()) -> bytes:
        """Emit SPIR-V; ``extensions`` is the exact set of SPIR-V extensions LLVM may use.

        Raises ``exception(errc.build)`` with LLVM's message when the IR does not parse
        or verify, or when code generation fails."""
        # Extensions the lowering recorded in the module (``!pysycl.spirv.extensions``,
        # backends/opencl/lowering.py) are enabled too; they are part of the IR text,
        # hence of the cache key.
        from pysycl.backends.opencl.lowering import required_extensions
        extensions = frozenset(extensions) | required_extensions(llvm_ir)
        for e in extensions:
            if not e or "," in e or not e.isidentifier():
                raise exception(errc.build, f"invalid SPIR-V extension name {e!r}")
        fields = [b"compile", self.target.triple.encode(), self.target.data_layout.encode(),
                  str(self.opt_level).encode(), ",".join(sorted(extensions)).encode(),
                  "\n".join(kernel_names).encode(), llvm_ir.encode()]
        spv = self._emit(fields, kernel_names)
        mode = config.spirv_validate()
        if mode == "off" or (mode == "auto" and find_tool("spirv-val") is None):
            return spv
        validate(spv)
        return spv

    def _emit(self, fields: list[bytes], kernel_names: Sequence[str]) -> bytes:
        t0 = time.perf_counter()
        try:
            reply = self._worker.request(fields)
        except WorkerCrash as crash:
            raise exception(errc.build, _crash_message(crash, kernel_names)) from None
        if reply[0] != b"ok":
            raise exception(errc.build, "SPIR-V compilation of "
                            f"{', '.join(kernel_names)} failed: {reply[1].decode('utf-8', 'replace')}")
        timings = dict(kv.split("=") for kv in reply[2].decode().split())
        self.last_timings = {k: float(v) for k, v in timings.items()}
        self.last_timings["total"] = time.perf_counter() - t0
        return reply[1]

    def check_binary(self, binary: bytes, link: bool = False) -> None:
        """A SPIR-V module read from a file: the header and the instruction stream
        (each instruction's word count lands on the next), then ``spirv-val`` where
        SPIRV-Tools is installed (``PYSYCL_SPIRV_VALIDATE``): a driver's compiler may
        crash or hang on a malformed module."""
        binary = bytes(binary)
        if len(binary) < 24 or len(binary) % 4 or binary[:4] != b"\x03\x02\x23\x07":
            raise exception(errc.invalid, "SPIR-V module: not a little-endian SPIR-V binary")
        words = struct.unpack(f"<{len(binary) // 4}I", binary)
        pos = 5
        while pos < len(words):
            if words[pos] >> 16 == 0:
                raise exception(errc.invalid, f"SPIR-V module: zero-length instruction at "
                                              f"word {pos}")
            pos += words[pos] >> 16
        if pos != len(words) or words[3] == 0:
            raise exception(errc.invalid, "SPIR-V module: truncated instruction stream")
        mode = config.spirv_validate()
        if mode == "off" or (mode == "auto" and find_tool("spirv-val") is None):
            return
        try:
            validate(binary)
        except exception as e:
            raise exception(errc.invalid, f"SPIR-V module: {e}") from None

    def disassemble(self, binary: bytes) -> str:
        """``spirv-dis`` output; empty when SPIRV-Tools is not installed."""
        tool = find_tool("spirv-dis")
        if tool is None:
            return ""
        r = _run_tool([tool, "--raw-id", "-", "-o", "-"], binary)
        if r.returncode:
            raise exception(errc.runtime, f"spirv-dis failed: {r.stderr.decode().strip()}")
        return r.stdout.decode()

    def validate(self, binary: bytes, target_env: str | None = None) -> None:
        """Run ``spirv-val``; raise ``exception(errc.build)`` with its message on a
        rejection and ``errc.feature_not_supported`` when the tool is missing."""
        validate(binary, target_env)


def find_tool(name: str) -> str | None:
    folder = config.spirv_tools_dir()
    if folder:
        path = Path(folder) / name
        return str(path) if path.exists() else None
    return shutil.which(name)


def validate(binary: bytes, target_env: str | None = None) -> None:
    """``spirv-val`` the module (``target_env`` e.g. ``"opencl2.2"``)."""
    tool = find_tool("spirv-val")
    if tool is None:
        raise exception(errc.feature_not_supported, "spirv-val is not on PATH")
    cmd = [tool] + (["--target-env", target_env] if target_env else []) + ["-"]
    r = _run_tool(cmd, binary)
    if r.returncode:
        msg = (r.stderr or r.stdout).decode("utf-8", "replace").strip()
        raise exception(errc.build, f"spirv-val rejected the module: {msg}")


def _run_tool(cmd: list[str], binary: bytes) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, input=binary, capture_output=True, timeout=60)


def _crash_message(crash: WorkerCrash, kernel_names: Sequence[str]) -> str:
    how = _describe_exit(crash.returncode)
    text = crash.message or "(no message)"
    msg = (f"SPIR-V code generation for {', '.join(kernel_names) or 'the module'} "
           f"crashed LLVM ({how}):\n{text}")
    for needle, hint in _HINTS:
        if needle in text:
            msg += f"\nhint: {hint}"
            break
    return msg


def _describe_exit(rc: int | None) -> str:
    if rc is None:
        return "no exit status"
    if rc < 0:
        import signal
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit status {rc}"
