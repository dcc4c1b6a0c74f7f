"""Check a host object file before JITLink sees it.

JITLink trusts its input more than a loader of untrusted files may: the llvmlite wheel
has LLVM assertions on, and a section, symbol or relocation that points outside its
object ends in an assertion (the process aborts) or a wild write. An object read from a
bundle file can be anything, so before linking the executor checks it against what an
ELF relocatable object must be (the System V gABI and the psABI of its machine): the
header, every section inside the file with a sane alignment, one symbol table whose
names, sections and extents are in range, relocation tables whose symbols exist and
whose fixups lie inside the section they patch, with only the relocation types LLVM
emits for this machine. Anything else is ``errc.invalid`` naming the problem. This
checks form, not intent: well-formed code still does whatever it says (see
docs/bundle-files.md for which native code pysycl runs).

>>> check_object(b"\\x7fELF")
Traceback (most recent call last):
...
pysycl.errors.exception: native object: truncated ELF header (4 bytes)
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading

from ...errors import errc, exception

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")

ET_REL = 1
EM_X86_64, EM_AARCH64 = 62, 183
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA = 0, 1, 2, 3, 4
SHT_NOTE, SHT_NOBITS, SHT_REL, SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_GROUP = 7, 8, 9, 14, 15, 17
SHT_SYMTAB_SHNDX = 18
SHT_LLVM_ADDRSIG = 0x6FFF4C03
SHT_X86_64_UNWIND = 0x70000001
_SECTION_TYPES = {SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOTE,
                  SHT_NOBITS, SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_LLVM_ADDRSIG,
                  SHT_X86_64_UNWIND}
SHF_ALLOC = 0x2
# write, alloc, exec, merge, strings, info link, link order, group, TLS, exclude,
# x86-64 large.
_KNOWN_FLAGS = 0x1 | 0x2 | 0x4 | 0x10 | 0x20 | 0x40 | 0x80 | 0x200 | 0x400 | 0x80000000 \
    | 0x10000000
SHF_TLS = 0x400
_MAX_ALIGN = 1 << 16
# Bigger than any kernel's code: a size beyond it is damage, and the JIT would map it.
_MAX_NOBITS = 1 << 30

STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE = 0, 1, 2, 3, 4
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2

# Relocation type -> bytes patched, per machine: what LLVM's code generators emit for
# position-independent objects (no 32-bit absolute or GOT-base-relative types: LLVM's
# RuntimeDyld asserts that their values fit, and PIC code never has them).
_RELOCATIONS = {
    EM_X86_64: {
        1: 8,    # R_X86_64_64
        2: 4,    # R_X86_64_PC32
        4: 4,    # R_X86_64_PLT32
        9: 4,    # R_X86_64_GOTPCREL
        24: 8,   # R_X86_64_PC64
        41: 4,   # R_X86_64_GOTPCRELX
        42: 4,   # R_X86_64_REX_GOTPCRELX
    },
    EM_AARCH64: {
        257: 8, 258: 4, 260: 8, 261: 4,        # ABS64, ABS32, PREL64, PREL32
        263: 4, 264: 4, 265: 4, 266: 4,        # MOVW_UABS_G0..G3
        267: 4, 268: 4, 269: 4, 270: 4,        # MOVW_UABS_G0_NC...
        275: 4, 277: 4, 278: 4, 279: 4,        # ADR_PREL_PG_HI21, ADD_ABS_LO12_NC, LDST8
        282: 4, 283: 4, 284: 4, 285: 4, 286: 4,  # JUMP26, CALL26, LDST16/32/64
        299: 4, 311: 4, 312: 4,                # LDST128, ADR_GOT_PAGE, LD64_GOT_LO12_NC
    },
}
# Instructions that the x86-64 linker may rewrite in place read the bytes before the
# fixup (the opcode and REX prefix): the fixup must leave room for them.
_X86_64_RELAXED = {4: 1, 9: 2, 41: 2, 42: 3}
# 32-bit PC-relative fixups: the linker asserts that the distance fits in 32 bits. To a
# symbol of this object (PC32, PLT32 to a local): the target must lie in or near the
# symbol's section. Through a GOT entry or a PLT stub the linker makes (GOTPCREL*,
# PLT32 to an undefined symbol): the addend is the instruction's tail, a few bytes.
_X86_64_PCREL32 = {2, 4}
_X86_64_VIA_ENTRY = {9, 41, 42}
_NEAR = 1 << 16
_ENTRY_ADDEND = 64


def _bad(reason: str) -> exception:
    return exception(errc.invalid, f"native object: {reason}")


def _cstring(table: bytes, offset: int, what: str) -> str:
    if not 0 <= offset < len(table):
        raise _bad(f"{what} name offset {offset} is outside its string table")
    end = table.find(b"\0", offset)
    if end < 0:
        raise _bad(f"{what} name at {offset} is not NUL-terminated")
    try:
        return table[offset:end].decode("ascii")
    except UnicodeDecodeError:
        raise _bad(f"{what} name at {offset} is not ASCII") from None


class _Section:
    __slots__ = ("index", "name", "type", "flags", "offset", "size", "link", "info",
                 "align", "entsize")

    def __init__(self, index, fields):
        (self.name, self.type, self.flags, _addr, self.offset, self.size, self.link,
         self.info, self.align, self.entsize) = fields
        self.index = index


def _header(data: bytes) -> tuple:
    if len(data) < _EHDR.size:
        raise _bad(f"truncated ELF header ({len(data)} bytes)")
    (ident, etype, machine, version, entry, phoff, shoff, _flags, ehsize, _phentsize,
     phnum, shentsize, shnum, shstrndx) = _EHDR.unpack_from(data)
    if ident[:4] != b"\x7fELF":
        raise _bad("not an ELF file")
    if ident[4] != 2 or ident[5] != 1 or ident[6] != 1:
        raise _bad("not a 64-bit little-endian ELF version 1 file")
    if etype != ET_REL or version != 1 or entry or phoff or phnum:
        raise _bad("not a relocatable object (type, version, entry or program headers)")
    if machine not in _RELOCATIONS:
        raise _bad(f"machine {machine} is not one pysycl makes host code for")
    if ehsize != _EHDR.size or shentsize != _SHDR.size:
        raise _bad("unexpected ELF or section header size")
    if not 1 <= shnum < SHN_LORESERVE or shoff % 8:
        raise _bad(f"{shnum} sections at offset {shoff}")
    if shoff > len(data) or shnum * _SHDR.size > len(data) - shoff:
        raise _bad(f"section headers ({shnum} at offset {shoff}) run past the end "
                   f"of the {len(data)}-byte object")
    if not 0 < shstrndx < shnum:
        raise _bad(f"section name table index {shstrndx} is out of range")
    return machine, shoff, shnum, shstrndx


def _sections(data: bytes, shoff: int, shnum: int) -> list[_Section]:
    secs = [_Section(i, _SHDR.unpack_from(data, shoff + i * _SHDR.size))
            for i in range(shnum)]
    if any(data[shoff:shoff + _SHDR.size]):
        raise _bad("section 0 is not the null section")
    for s in secs[1:]:
        if s.type not in _SECTION_TYPES:
            raise _bad(f"section {s.index} has type {s.type:#x}, which pysycl's objects "
                       "never have")
        if s.flags & ~_KNOWN_FLAGS or s.flags & SHF_TLS:
            raise _bad(f"section {s.index} has flags {s.flags:#x}")
        if s.align > _MAX_ALIGN or (s.align & (s.align - 1)):
            raise _bad(f"section {s.index} has alignment {s.align}")
        if s.type == SHT_NOBITS:
            if s.size > _MAX_NOBITS:
                raise _bad(f"section {s.index} asks for {s.size} bytes")
        elif s.offset > len(data) or s.size > len(data) - s.offset:
            raise _bad(f"section {s.index} (offset {s.offset}, size {s.size}) runs past "
                       f"the end of the {len(data)}-byte object")
    # The header, the section table and the sections' bytes are disjoint, as every
    # linker writes them (LLVM's RuntimeDyld miscomputes fixups when a section's bytes
    # overlap the header: an assertion, so an abort).
    spans = [(0, _EHDR.size, "the ELF header"), (shoff, shoff + shnum * _SHDR.size,
                                                  "the section table")]
    spans += [(s.offset, s.offset + s.size, f"section {s.index}") for s in secs[1:]
              if s.type != SHT_NOBITS and s.size]
    spans.sort()
    for (_a, end, first), (start, _b, second) in zip(spans, spans[1:]):
        if start < end:
            raise _bad(f"{first} and {second} overlap in the file")
    return secs


def _string_table(data: bytes, s: _Section, what: str) -> bytes:
    if s.type != SHT_STRTAB:
        raise _bad(f"{what} (section {s.index}) is not a string table")
    table = data[s.offset:s.offset + s.size]
    if not table or table[0] != 0 or table[-1] != 0:
        raise _bad(f"{what} (section {s.index}) does not start and end with NUL")
    return table


def _symbols(data: bytes, secs: list[_Section]) -> tuple[_Section, list[tuple]]:
    tables = [s for s in secs if s.type == SHT_SYMTAB]
    if len(tables) != 1:
        raise _bad(f"{len(tables)} symbol tables (one expected)")
    st = tables[0]
    if st.entsize != _SYM.size or st.size % _SYM.size or st.size == 0:
        raise _bad("symbol table entry size or table size is wrong")
    if not 0 < st.link < len(secs):
        raise _bad("symbol table names no string table")
    names = _string_table(data, secs[st.link], "symbol names")
    count = st.size // _SYM.size
    if not 0 < st.info <= count:
        raise _bad(f"symbol table says {st.info} local symbols of {count}")
    syms = []
    for i in range(count):
        name, info, other, shndx, value, size = _SYM.unpack_from(data, st.offset + i * _SYM.size)
        bind, kind = info >> 4, info & 0xF
        if i == 0:
            if name or info or shndx or value or size:
                raise _bad("symbol 0 is not the null symbol")
            syms.append(("", bind, kind, shndx, value, size))
            continue
        text = _cstring(names, name, f"symbol {i}")
        if kind not in (STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE):
            raise _bad(f"symbol {text or i!r} has type {kind}")
        if bind not in (STB_LOCAL, STB_GLOBAL, STB_WEAK) or other & ~0x3:
            raise _bad(f"symbol {text or i!r} has binding {bind} / visibility {other}")
        if (bind == STB_LOCAL) != (i < st.info):
            raise _bad(f"symbol {text or i!r} is out of order (locals come first)")
        if shndx == SHN_COMMON or (SHN_LORESERVE <= shndx and shndx != SHN_ABS):
            raise _bad(f"symbol {text or i!r} has section index {shndx:#x}")
        if shndx == SHN_UNDEF:
            if bind == STB_LOCAL or kind not in (STT_NOTYPE, STT_OBJECT, STT_FUNC) or \
                    not text:
                raise _bad(f"undefined symbol {text or i!r} is local or has no name")
        elif shndx != SHN_ABS:
            if shndx >= len(secs):
                raise _bad(f"symbol {text or i!r} is in section {shndx} of {len(secs)}")
            sec = secs[shndx]
            if not sec.flags & SHF_ALLOC and kind != STT_SECTION:
                raise _bad(f"symbol {text or i!r} is in a section that is not loaded")
            if value > sec.size or size > sec.size - value:
                raise _bad(f"symbol {text or i!r} (value {value}, size {size}) lies "
                           f"outside its section ({sec.size} bytes)")
        syms.append((text, bind, kind, shndx, value, size))
    return st, syms


def _relocations(data: bytes, secs: list[_Section], st: _Section, syms: list[tuple],
                 machine: int) -> None:
    widths = _RELOCATIONS[machine]
    for s in secs:
        if s.type == SHT_REL:
            raise _bad(f"section {s.index} holds REL relocations (RELA expected)")
        if s.type != SHT_RELA:
            continue
        if s.entsize != _RELA.size or s.size % _RELA.size:
            raise _bad(f"relocation section {s.index} has a wrong entry size")
        if s.link != st.index:
            raise _bad(f"relocation section {s.index} does not use the symbol table")
        if not 0 < s.info < len(secs) or secs[s.info].type in (SHT_NULL, SHT_NOBITS,
                                                                 SHT_SYMTAB, SHT_STRTAB,
                                                                 SHT_RELA):
            raise _bad(f"relocation section {s.index} patches section {s.info}, which "
                       "holds no data")
        target = secs[s.info]
        if not target.flags & SHF_ALLOC:
            raise _bad(f"relocation section {s.index} patches section {s.info}, which is "
                       "not loaded")
        for k in range(s.size // _RELA.size):
            offset, info, addend = _RELA.unpack_from(data, s.offset + k * _RELA.size)
            sym, rtype = info >> 32, info & 0xFFFFFFFF
            width = widths.get(rtype)
            if width is None:
                raise _bad(f"relocation {k} of section {s.index} has type {rtype}")
            if not 0 < sym < len(syms):
                raise _bad(f"relocation {k} of section {s.index} names symbol {sym} of "
                           f"{len(syms)}")
            before = _X86_64_RELAXED.get(rtype, 0) if machine == EM_X86_64 else 0
            if offset < before or offset > target.size or width > target.size - offset:
                raise _bad(f"relocation {k} of section {s.index} patches bytes "
                           f"{offset}..{offset + width} of a {target.size}-byte section")
            if machine == EM_X86_64 and target.type != SHT_NOBITS and \
                    any(data[target.offset + offset:target.offset + offset + width]):
                # LLVM leaves a RELA fixup's bytes zero (the addend is in the entry);
                # RuntimeDyld adds whatever is there to the addend, so other bytes (a
                # fixup moved onto the next instruction) give another target, or one
                # out of reach, where it asserts.
                raise _bad(f"relocation {k} of section {s.index} patches bytes "
                           f"{offset}..{offset + width} that are not zero")
            _check_target(secs, syms[sym], rtype, addend, machine,
                          f"relocation {k} of section {s.index}")


def _check_target(secs, symbol, rtype: int, addend: int, machine: int, what: str) -> None:
    """The symbol a fixup refers to is loaded, and a 32-bit fixup's distance fits."""
    name, _bind, kind, shndx, value, _size = symbol
    if kind == STT_FILE:
        raise _bad(f"{what} names a file symbol")
    defined = shndx not in (SHN_UNDEF, SHN_ABS)
    if defined and not secs[shndx].flags & SHF_ALLOC:
        raise _bad(f"{what} names symbol {name!r} of a section that is not loaded")
    if machine != EM_X86_64:
        return
    if rtype in _X86_64_VIA_ENTRY or (rtype == 4 and shndx == SHN_UNDEF):
        if abs(addend) > _ENTRY_ADDEND:
            raise _bad(f"{what} has addend {addend} through a GOT entry or stub")
    elif rtype in _X86_64_PCREL32:
        if not defined:
            raise _bad(f"{what}: a 32-bit PC-relative fixup to {name!r}, which is not in "
                       "this object")
        where = value + addend
        if not -_NEAR <= where <= secs[shndx].size + _NEAR:
            raise _bad(f"{what} reaches {where} bytes from the start of a "
                       f"{secs[shndx].size}-byte section")


def check_object(data: bytes) -> list[str]:
    """Check ``data`` is a well-formed ELF relocatable object for a machine pysycl
    makes host code for (``errc.invalid`` naming the problem); returns the names of
    its defined global symbols."""
    data = bytes(data)
    machine, shoff, shnum, shstrndx = _header(data)
    secs = _sections(data, shoff, shnum)
    names = _string_table(data, secs[shstrndx], "section names")
    for s in secs[1:]:
        _cstring(names, s.name, f"section {s.index}")
        if s.type == SHT_NULL:
            raise _bad(f"section {s.index} is a second null section")
        if s.type in (SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_LLVM_ADDRSIG) and \
                s.flags & SHF_ALLOC:
            raise _bad(f"section {s.index} is a table but is marked to be loaded")
    st, syms = _symbols(data, secs)
    _relocations(data, secs, st, syms, machine)
    return [name for name, bind, _k, shndx, _v, _s in syms
            if bind != STB_LOCAL and shndx != SHN_UNDEF]


class _LinkProbe:
    """The persistent ``link_probe.py`` process; thread safe, started again after a
    crash or in a forked child."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc = None
        self._pid = None

    def link(self, data: bytes, symbols) -> str | None:
        """None if the object links in the probe, else why not."""
        from . import link_probe
        with self._lock:
            if self._proc is None or self._pid != os.getpid() or self._proc.poll() is not None:
                self._start()
            try:
                link_probe.write_message(self._proc.stdin, [bytes(data),
                                                            "\n".join(symbols).encode()])
                reply = link_probe.read_message(self._proc.stdout)
                if reply is None:
                    raise EOFError
            except (OSError, EOFError):
                code = self._proc.wait()
                self._proc = None
                return f"the JIT linker crashed on it (exit status {code})"
        return None if reply[0] == b"ok" else reply[1].decode("utf-8", "replace")

    def _start(self) -> None:
        from . import link_probe
        self._proc = subprocess.Popen([sys.executable, link_probe.__file__],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, close_fds=True)
        self._pid = os.getpid()
        if link_probe.read_message(self._proc.stdout) != [b"ready"]:
            self._proc = None
            raise exception(errc.runtime, "the native object link probe did not start")


_probe = _LinkProbe()


def probe_link(data: bytes) -> None:
    """Check ``data`` as ``check_object`` does, then JIT-link it in the link probe
    process: ``errc.invalid`` if the linker refuses it or crashes on it. For native code
    that a file carries and pysycl did not make (``PYSYCL_TRUST_BUNDLE_CODE``)."""
    defined = check_object(data)
    why = _probe.link(data, [s for s in defined if s.startswith("__pysycl_")])
    if why is not None:
        raise _bad(f"it does not link: {why}")
