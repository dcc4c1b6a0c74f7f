"""The link probe process (run as a script, not imported by pysycl): JIT-links host
objects that a bundle file carries and pysycl did not make, before the user's process
links them.

Why: LLVM's RuntimeDyld, which LLJIT uses here, asserts (the llvmlite wheel has
assertions on, so the process aborts) on objects whose fixups do not fit, and the
object checker cannot foresee every such case from the file alone. The probe links the
object in a process of its own: an abort there is an answer ("this object crashes the
linker") instead of the end of the user's program. ``object_check.probe_link`` starts
it once, sends one object at a time and starts it again after a crash.

Wire format (both ways): ``u32 n`` then ``n`` fields, each ``u32 length`` + bytes.
Request: ``[object, exported symbols (newline separated)]``; reply: ``[b"ok"]`` or
``[b"error", message]``. It imports only the standard library and llvmlite.
"""
from __future__ import annotations

import itertools
import os
import struct
import sys

_U32 = struct.Struct("<I")


def read_message(stream) -> list[bytes] | None:
    head = stream.read(4)
    if not head:
        return None
    if len(head) < 4:
        raise EOFError("truncated message")
    fields = []
    for _ in range(_U32.unpack(head)[0]):
        raw = stream.read(4)
        if len(raw) < 4:
            raise EOFError("truncated message")
        data = stream.read(_U32.unpack(raw)[0])
        if len(data) < _U32.unpack(raw)[0]:
            raise EOFError("truncated message")
        fields.append(data)
    return fields


def write_message(stream, fields: list[bytes]) -> None:
    stream.write(b"".join([_U32.pack(len(fields))] +
                          [_U32.pack(len(f)) + f for f in fields]))
    stream.flush()


def main() -> int:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine(reloc="pic")
    jit = llvm.create_lljit_compiler(tm)
    names = itertools.count()
    write_message(out, [b"ready"])
    while True:
        fields = read_message(sys.stdin.buffer)
        if fields is None:
            return 0
        obj, symbols = fields[0], [s for s in fields[1].decode().split("\n") if s]
        builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
        for s in symbols:
            builder.export_symbol(s)
        try:
            tracker = builder.link(jit, f"probe{next(names)}")
            del tracker
            reply = [b"ok"]
        except RuntimeError as e:
            reply = [b"error", str(e).encode("utf-8", "replace")]
        write_message(out, reply)


if __name__ == "__main__":
    raise SystemExit(main())
