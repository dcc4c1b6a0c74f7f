"""The SPIR-V code-generation worker process (run as a script, not imported by pysycl).

Why a separate process: the llvmlite 0.50 wheel is built with LLVM assertions on, and
the SPIR-V backend reports unsupported IR with ``LLVM ERROR`` (``exit``) or a failed
assertion (``abort``); either would kill the user's interpreter. ``compiler.py`` starts
this script once and sends one request at a time.

Why a fork per module: LLVM state outlives the module it was made for, and changes the
next modules a process compiles. ``SPIRVModuleAnalysis::MAI.BBNumToRegMap`` (a static
of LLVM 22's SPIR-V backend) maps (MachineFunction address, block number) to a label ID
and is not cleared between modules, so a module whose MachineFunction is allocated where
an earlier module's was can give its entry block an ID it also gave to a type or
constant: ``Id 2 is defined more than once``, in about 1 module in 130 once a process
has compiled a few hundred (never in a process's first module). Intel's OpenCL CPU
runtime crashes (SIGSEGV in its SimplifyCFG) building some of those modules. Named
struct types also pile up in the global LLVMContext (``struct.P``, then ``struct.P.0``
...), so the same IR gave different SPIR-V. The worker therefore never compiles
itself: it keeps LLVM initialised and forks a child per compile request, so every module
is the first its process compiles (about 10 ms more per module: the child's copied
pages and cold caches). A child that dies (``LLVM ERROR``, an assertion) leaves the
worker running: it answers ``crash`` with the exit status.

It imports only the standard library and llvmlite (not pysycl: the package facade may
import far more than code generation needs, and start-up time is paid on every restart).

Wire format (both directions): ``u32 n`` then ``n`` fields, each ``u32 length`` +
bytes, little endian. Requests: ``[b"compile", triple, data_layout, opt_level,
extensions (comma separated), kernel names (newline separated), llvm ir]`` and
``[b"ping"]``. Replies: ``[b"ok", payload, timings]``, ``[b"error", message]`` or
``[b"crash", exit status]`` (the status as ``subprocess`` gives it: ``-N`` for signal N;
what the child printed is on the worker's stderr).
Nothing is unpickled: a field is bytes, decoded as UTF-8 where it is text.
"""
from __future__ import annotations

import os
import struct
import sys
import tempfile
import time

_U32 = struct.Struct("<I")


def read_message(stream) -> list[bytes] | None:
    """One message, or None at a clean end of stream."""
    head = stream.read(4)
    if not head:
        return None
    if len(head) < 4:
        raise EOFError("truncated message header")
    (count,) = _U32.unpack(head)
    fields = []
    for _ in range(count):
        raw = stream.read(4)
        if len(raw) < 4:
            raise EOFError("truncated field header")
        (length,) = _U32.unpack(raw)
        data = stream.read(length)
        if len(data) < length:
            raise EOFError("truncated field")
        fields.append(data)
    return fields


def write_message(stream, fields: list[bytes]) -> None:
    parts = [_U32.pack(len(fields))]
    for f in fields:
        parts += [_U32.pack(len(f)), f]
    stream.write(b"".join(parts))
    stream.flush()


class _Codegen:
    def __init__(self):
        import llvmlite.binding as llvm
        self.llvm = llvm
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        # IndVarSimplify replaces loop exit values by SCEV closed forms, which for sums
        # (``acc += x * (k + 1)``) multiply in i65; LLVM 22's SPIR-V backend then dies
        # with "OpTypeInt ... requires SPV_ALTERA_arbitrary_precision_integers".
        llvm.set_option("pysycl-spirv", "-replexitval=never")
        self.extensions: str | None = None   # None: never set in this process

    def set_extensions(self, extensions: str) -> None:
        """``--spirv-ext`` is process global; each occurrence *replaces* the allowed
        set (checked: ``+A`` then ``+B`` leaves only B, ``--spirv-ext=`` clears it), so
        the worker sets exactly the requested set whenever it differs. An unknown name
        is only printed by LLVM (the option keeps its old value), so stderr is captured
        around the call to turn it into an error."""
        if extensions == self.extensions:
            return
        value = ",".join("+" + e for e in extensions.split(",") if e)
        complaint = _capture_stderr(lambda: (
            self.llvm.set_option("pysycl-spirv", "--spirv-ext="),
            self.llvm.set_option("pysycl-spirv", f"--spirv-ext={value}") if value else None))
        if complaint.strip():
            self.extensions = None
            raise ValueError(f"invalid SPIR-V extension list {extensions!r}: {complaint.strip()}")
        self.extensions = extensions

    def compile(self, triple: str, data_layout: str, opt_level: int, kernels: list[str],
                ir: str) -> tuple[bytes, str]:
        llvm = self.llvm
        t0 = time.perf_counter()
        mod = llvm.parse_assembly(ir)
        mod.triple = triple
        mod.data_layout = data_layout
        mod.verify()
        defined = {f.name for f in mod.functions if not f.is_declaration}
        missing = [k for k in kernels if k not in defined]
        if missing:
            raise ValueError(f"kernel(s) not defined in the module: {', '.join(missing)}")
        # Only kernels are entry points; internal device functions can be inlined and
        # dropped, and do not get an ``Export`` LinkageAttributes decoration.
        for f in mod.functions:
            if not f.is_declaration and f.name not in kernels:
                f.linkage = llvm.Linkage.internal
        t1 = time.perf_counter()
        # A fresh TargetMachine per module: a reused SPIR-V TM keeps SPIRVGlobalRegistry
        # state and aborts on a later module (LLVM 22.1; fixed upstream in PR #196058).
        tm = llvm.Target.from_triple(triple).create_target_machine(opt=min(opt_level, 3))
        if opt_level > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        t2 = time.perf_counter()
        spv = tm.emit_object(mod)
        t3 = time.perf_counter()
        timings = f"parse={t1 - t0:.6f} opt={t2 - t1:.6f} emit={t3 - t2:.6f}"
        return spv, timings


def _capture_stderr(fn) -> str:
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode("utf-8", "replace")


def _handle(codegen: _Codegen, fields: list[bytes]) -> list[bytes]:
    op = fields[0] if fields else b""
    if op == b"ping":
        return [b"ok", codegen.llvm.llvm_version_info.__str__().encode(), b""]
    if op != b"compile" or len(fields) != 7:
        return [b"error", b"malformed request"]
    triple, layout, opt, exts, kernels, ir = (f.decode("utf-8") for f in fields[1:])
    try:
        codegen.set_extensions(exts)
        spv, timings = codegen.compile(triple, layout, int(opt),
                                       [k for k in kernels.split("\n") if k], ir)
    except Exception as e:   # parse/verify errors come back as RuntimeError from llvmlite
        return [b"error", f"{type(e).__name__}: {e}".encode()]
    return [b"ok", spv, timings.encode()]


def _compile_in_child(codegen: _Codegen, fields: list[bytes], out) -> None:
    """Answer a compile request on ``out`` from a forked child, so that no LLVM state
    of this module reaches another (see the module docstring). The child's reply
    comes back through a pipe; the child is reaped after the reply is passed on, so
    its exit overlaps the caller's next step."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: answer, then leave without running any cleanup
        status = 1
        try:
            os.close(read_end)
            with os.fdopen(write_end, "wb") as pipe:
                write_message(pipe, _handle(codegen, fields))
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            reply = read_message(pipe)
    except EOFError:   # the child died while writing
        reply = None
    if reply is None:
        _, status = os.waitpid(pid, 0)
        write_message(out, [b"crash", str(os.waitstatus_to_exitcode(status)).encode()])
    else:
        write_message(out, reply)
        os.waitpid(pid, 0)


def main() -> int:
    # The protocol owns the original stdout; anything else printing to fd 1 (LLVM
    # remarks, stray prints) goes to stderr, which the parent keeps for crash reports.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    codegen = _Codegen()
    write_message(out, [b"ready"])
    while True:
        fields = read_message(inp)
        if fields is None:
            return 0
        if fields[:1] == [b"compile"] and hasattr(os, "fork"):   # (not on Windows)
            _compile_in_child(codegen, fields, out)
        else:
            write_message(out, _handle(codegen, fields))


if __name__ == "__main__":
    sys.exit(main())
