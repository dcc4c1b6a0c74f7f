"""SYCLBIN bundle files: SYBI v1 inside a one-entry OffloadBinary envelope.

Layout (the one DPC++'s 2026.2 runtime reads; docs/bundle-files.md)::

    OffloadBinary v2 header (32) | entry (48, ImageKind 7) | "\\0" string table | pad
    SYBI image: FileHeader (56) | AM headers (32 each) | IR headers | native headers
                | metadata byte table (PropertySetRegistry texts, pad 8)
                | binary byte table (IR bytes, then native bytes, pad 8)

Metadata is DPC++ property-set text: ``[SYCLBIN/global metadata] state``, per IR
module ``[SYCLBIN/ir module metadata] type, target``, per native image
``[SYCLBIN/native device code image metadata] arch, target``; abstract modules carry
the image's ``SYCL/...`` sets unchanged.

IR module types are DPC++'s: 0 SPIR-V, 1 PTX, 2 AMDGCN. pysycl additions, all ignored
by DPC++:

* pysycl IR text is a native image of target ``PYSYCL_IR_TARGET`` (DPC++ has no
  device of target "pysycl"); files of older pysycl versions held it as an IR module
  of type ``IR_TYPE_PYSYCL`` (0x5059, ASCII "PY"), still read.
* SYCLBIN has no checksum, so the global metadata ends with a set
  ``[PYSYCL/integrity]`` whose ``sha256`` is the SHA-256 of the whole SYBI image
  with that value's base64 text replaced by the encoding of 32 zero bytes (same
  length, so no offset moves). A present checksum is always verified; a file without
  one is read if it holds no pysycl content (DPC++ writes none).

The reader also takes DPC++'s other layouts: SYBI in an OffloadBinary version 1, a
bare SYBI image, and the SYCLBIN v2 multi-entry OffloadBinary (``read_syclbin_v2``).

The reader takes untrusted bytes: it parses with ``struct`` only, bounds-checks every
offset and size before slicing, and reports any problem as
``sycl.exception(errc.invalid, reason)``.

>>> f = SyclbinFile(SyclbinState.executable, [AbstractModule(
...     PropertySetRegistry({"SYCL/kernel names": {"k": 1}}),
...     ir_modules=[IRModule(IR_TYPE_SPIRV, b"\\x03\\x02\\x23\\x07", "spir64-unknown-unknown")])])
>>> read_syclbin(write_syclbin(f)) == f
True
"""
from __future__ import annotations

import enum
import hashlib
import struct
from typing import Any

from .._records import Record
from ..errors import errc, exception
from .property_sets import PropertySetRegistry, base64_encode

OFFLOAD_MAGIC = b"\x10\xff\x10\xad"
OFFLOAD_VERSION = 2          # what the runtime's own ext_oneapi_get_content writes
IMAGE_KIND_SYCLBIN = 7       # IMG_SYCLBIN
OFFLOAD_KIND_SYCL = 5        # the runtime serializer's value; no reader checks it
SYBI_MAGIC = 0x53594249      # bytes "IBYS" on disk
SYBI_VERSION = 1

IR_TYPE_SPIRV = 0
IR_TYPE_PTX = 1
IR_TYPE_AMDGCN = 2
IR_TYPE_PYSYCL = 0x5059

GLOBAL_METADATA = "SYCLBIN/global metadata"
IR_MODULE_METADATA = "SYCLBIN/ir module metadata"
NATIVE_METADATA = "SYCLBIN/native device code image metadata"
INTEGRITY = "PYSYCL/integrity"
PYSYCL_SET_PREFIX = "PYSYCL/"

#: The target triple of the native image that holds pysycl IR text: DPC++ reads the
#: first component of a native image's triple as its device target, finds none named
#: "pysycl" and skips the image.
PYSYCL_IR_TARGET = "pysycl-unknown-unknown"
PYSYCL_IR_ARCH = "pysycl_ir"

_FILE_HEADER = struct.Struct("<5I4xQQQQ")
_AM_HEADER = struct.Struct("<QQIIII")
_IMAGE_HEADER = struct.Struct("<QQQQ")
_ENVELOPE_HEADER = struct.Struct("<4sIQQQ")
_ENTRY = struct.Struct("<HHIQQQQ")
_STRING_ENTRY_V1 = struct.Struct("<QQ")     # key offset, value offset (NUL-terminated)
_STRING_ENTRY_V2 = struct.Struct("<QQQ")    # key offset, value offset, value size
_U64 = struct.Struct("<Q")
_ZERO_DIGEST_TEXT = base64_encode(struct.pack("<Q", 256) + bytes(32))


class SyclbinState(enum.IntEnum):
    """Bundle state stored in ``SYCLBIN/global metadata`` ``state``."""

    input = 0
    object = 1
    executable = 2


# Records written out by hand with the semantics of ``@dataclass`` (_records.py).
_NEW: Any = object()   # an argument not given: a new empty container


class IRModule(Record):
    """An IR image: SPIR-V (``IR_TYPE_SPIRV``) or pysycl IR text (``IR_TYPE_PYSYCL``)."""

    _fields = ("ir_type", "data", "target")
    ir_type: int
    data: bytes
    target: str | None = None

    def __init__(self, ir_type: int, data: bytes, target: str | None = None):
        self.ir_type = ir_type
        self.data = data
        self.target = target


class NativeImage(Record):
    """Device code for one target: host object, PTX, cubin...

    ``target`` is a triple (``"nvptx64-nvidia-cuda"``; ``None`` in files of early DPC++
    writers), ``arch`` e.g. ``"sm_90"``;
    ``format`` (pysycl's, e.g. ``"object"``, ``"ptx"``) is optional.
    """

    _fields = ("target", "arch", "data", "format")
    target: str | None
    arch: str
    data: bytes
    format: str | None = None

    def __init__(self, target: str | None, arch: str, data: bytes, format: str | None = None):
        self.target = target
        self.arch = arch
        self.data = data
        self.format = format


class AbstractModule(Record):
    """One device image's worth of metadata (its ``SYCL/...`` property sets) plus the
    IR modules and native images that implement it."""

    _fields = ("property_sets", "ir_modules", "native_images")
    property_sets: PropertySetRegistry
    ir_modules: list[IRModule]
    native_images: list[NativeImage]

    def __init__(self, property_sets: PropertySetRegistry = _NEW,
                 ir_modules: list[IRModule] = _NEW, native_images: list[NativeImage] = _NEW):
        self.property_sets = PropertySetRegistry() if property_sets is _NEW else property_sets
        self.ir_modules = [] if ir_modules is _NEW else ir_modules
        self.native_images = [] if native_images is _NEW else native_images


class SyclbinFile(Record):
    """A kernel bundle in one state."""

    _fields = ("state", "abstract_modules")
    state: SyclbinState
    abstract_modules: list[AbstractModule]

    def __init__(self, state: SyclbinState, abstract_modules: list[AbstractModule] = _NEW):
        self.state = state
        self.abstract_modules = [] if abstract_modules is _NEW else abstract_modules


def _invalid(reason: str) -> exception:
    return exception(errc.invalid, f"invalid SYCLBIN file: {reason}")


def _align8(n: int) -> int:
    return (n + 7) & ~7


def _text_bytes(value: str) -> bytes:
    return value.encode("utf-8")


# --- writer -------------------------------------------------------------------------

def _ir_metadata(ir: IRModule) -> bytes:
    reg = PropertySetRegistry()
    reg.add(IR_MODULE_METADATA, "type", ir.ir_type)
    if ir.target is not None:
        reg.add(IR_MODULE_METADATA, "target", _text_bytes(ir.target))
    return reg.to_text().encode("utf-8")


def _native_metadata(img: NativeImage) -> bytes:
    reg = PropertySetRegistry()
    reg.add(NATIVE_METADATA, "arch", _text_bytes(img.arch))
    if img.target is not None:
        reg.add(NATIVE_METADATA, "target", _text_bytes(img.target))
    if img.format is not None:
        reg.add(NATIVE_METADATA, "format", _text_bytes(img.format))
    return reg.to_text().encode("utf-8")


def _sybi(f: SyclbinFile, with_checksum: bool) -> bytes:
    try:
        state = SyclbinState(f.state)
    except ValueError:
        raise exception(errc.invalid, f"bundle state {f.state!r} is not input, object "
                                      "or executable") from None
    glob = PropertySetRegistry({GLOBAL_METADATA: {"state": int(state)}})
    global_text = glob.to_text()
    if with_checksum:  # last, so the digest text sits at a known place: the end
        global_text += f"[{INTEGRITY}]\nsha256=2|{_ZERO_DIGEST_TEXT}\n"
    metas = [global_text.encode("utf-8")]
    metas += [am.property_sets.to_text().encode("utf-8") for am in f.abstract_modules]
    irs = [ir for am in f.abstract_modules for ir in am.ir_modules]
    natives = [img for am in f.abstract_modules for img in am.native_images]
    metas += [_ir_metadata(ir) for ir in irs] + [_native_metadata(n) for n in natives]
    meta_offsets, pos = [], 0
    for m in metas:
        meta_offsets.append(pos)
        pos += len(m)
    meta_size = pos
    blobs = [bytes(ir.data) for ir in irs] + [bytes(n.data) for n in natives]
    blob_offsets, pos = [], 0
    for b in blobs:
        blob_offsets.append(pos)
        pos += len(b)
    bin_size = pos

    out = bytearray(_FILE_HEADER.pack(SYBI_MAGIC, SYBI_VERSION, len(f.abstract_modules),
                                      len(irs), len(natives), meta_size, bin_size,
                                      0, len(metas[0])))
    ir_index = native_index = 0
    for i, am in enumerate(f.abstract_modules, 1):
        out += _AM_HEADER.pack(meta_offsets[i], len(metas[i]), len(am.ir_modules), ir_index,
                               len(am.native_images), native_index)
        ir_index += len(am.ir_modules)
        native_index += len(am.native_images)
    first = 1 + len(f.abstract_modules)
    for k in range(len(irs) + len(natives)):
        out += _IMAGE_HEADER.pack(meta_offsets[first + k], len(metas[first + k]),
                                  blob_offsets[k], len(blobs[k]))
    out += b"".join(metas)
    out += bytes(_align8(meta_size) - meta_size)
    out += b"".join(blobs)
    out += bytes(_align8(bin_size) - bin_size)
    return bytes(out)


def _seal(sybi: bytes) -> bytes:
    """Put the SHA-256 of the zero-digest image in place of the zero digest."""
    digest = hashlib.sha256(sybi).digest()
    text = base64_encode(struct.pack("<Q", 256) + digest).encode("ascii")
    at = _digest_position(sybi)
    return sybi[:at] + text + sybi[at + len(text):]


def _digest_position(sybi: bytes) -> int:
    header_end = _FILE_HEADER.size + _AM_HEADER.size * _FILE_HEADER.unpack_from(sybi)[2] \
        + _IMAGE_HEADER.size * sum(_FILE_HEADER.unpack_from(sybi)[3:5])
    gm_size = _FILE_HEADER.unpack_from(sybi)[8]
    return header_end + gm_size - 1 - len(_ZERO_DIGEST_TEXT)  # before the final "\n"


def write_sybi(f: SyclbinFile, *, checksum: bool = True) -> bytes:
    """The bare SYBI image (no envelope); ``write_syclbin`` is what files hold."""
    sybi = _sybi(f, checksum)
    return _seal(sybi) if checksum else sybi


def write_syclbin(f: SyclbinFile, *, checksum: bool = True) -> bytes:
    """Serialise ``f`` as an OffloadBinary v2 file with one ``IMG_SYCLBIN`` entry."""
    image = write_sybi(f, checksum=checksum)
    entries_offset = _ENVELOPE_HEADER.size
    strings_offset = entries_offset + _ENTRY.size  # no string entries follow
    image_offset = _align8(strings_offset + 1)     # after the one-NUL string table
    total = _align8(image_offset + len(image))
    out = bytearray(_ENVELOPE_HEADER.pack(OFFLOAD_MAGIC, OFFLOAD_VERSION, total,
                                          entries_offset, 1))
    out += _ENTRY.pack(IMAGE_KIND_SYCLBIN, OFFLOAD_KIND_SYCL, 0, strings_offset, 0,
                       image_offset, len(image))
    out += bytes(image_offset - len(out))
    out += image
    out += bytes(total - len(out))
    return bytes(out)


# --- reader -------------------------------------------------------------------------

def _unpack(st: struct.Struct, data: bytes, offset: int, what: str) -> tuple:
    if offset < 0 or offset + st.size > len(data):
        raise _invalid(f"truncated {what} at offset {offset}")
    return st.unpack_from(data, offset)


def _region(data: bytes, start: int, offset: int, size: int, limit: int, what: str) -> bytes:
    """``data[start+offset : +size]`` after checking it lies within ``limit`` bytes."""
    if offset > limit or size > limit - offset:
        raise _invalid(f"{what} (offset {offset}, size {size}) runs past its table "
                       f"of {limit} bytes")
    return data[start + offset:start + offset + size]


def _registry(raw: bytes, what: str) -> PropertySetRegistry:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(f"{what} is not UTF-8 text") from None
    try:
        return PropertySetRegistry.from_text(text)
    except exception as e:
        raise _invalid(f"{what}: {e}") from None


def _text(reg: PropertySetRegistry, set_name: str, key: str, what: str,
          required: bool = True) -> str | None:
    props = reg.get(set_name) or {}
    value = props.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, bytes):
        raise _invalid(f"{what} lacks byte-array property {set_name}/{key}")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(f"{what} property {key} is not UTF-8") from None


class OffloadEntry(Record):
    """One entry of an OffloadBinary: kinds, flags, its string map and its image."""

    _fields = ("image_kind", "offload_kind", "flags", "strings", "image")
    image_kind: int
    offload_kind: int
    flags: int
    strings: dict
    image: bytes

    def __init__(self, image_kind: int, offload_kind: int, flags: int, strings: dict,
                 image: bytes):
        self.image_kind = image_kind
        self.offload_kind = offload_kind
        self.flags = flags
        self.strings = strings
        self.image = image


def _c_string(data: bytes, offset: int, what: str) -> str:
    """The NUL-terminated string at ``offset`` (within ``data``)."""
    end = data.find(b"\0", offset) if 0 <= offset < len(data) else -1
    if end < 0:
        raise _invalid(f"{what} at offset {offset} is not a NUL-terminated string in the file")
    return _decoded(data[offset:end], what)


def _decoded(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(f"{what} is not UTF-8") from None


def _entry_strings(data: bytes, version: int, offset: int, count: int, k: int) -> dict:
    """The string map of entry ``k``: v1 entries ``{u64 key, u64 value}`` (both
    NUL-terminated), v2 entries ``{u64 key, u64 value, u64 value size}``."""
    st = _STRING_ENTRY_V1 if version == 1 else _STRING_ENTRY_V2
    if count > (len(data) - min(offset, len(data))) // st.size:
        raise _invalid(f"OffloadBinary entry {k} claims {count} strings past the end")
    out: dict[str, str] = {}
    for i in range(count):
        fields = _unpack(st, data, offset + i * st.size, f"entry {k} string {i}")
        key = _c_string(data, fields[0], f"entry {k} string key")
        if version == 1:
            value = _c_string(data, fields[1], f"entry {k} string {key!r}")
        else:
            value = _decoded(_region(data, 0, fields[1], fields[2], len(data),
                                     f"entry {k} string {key!r}"), f"entry {k} string {key!r}")
        if key in out:
            raise _invalid(f"OffloadBinary entry {k} repeats string {key!r}")
        out[key] = value
    return out


def read_offload_binary(data: bytes) -> tuple[int, list[OffloadEntry]]:
    """``(version, entries)`` of an OffloadBinary (``llvm/Object/OffloadBinary.h``):
    version 1 (one entry, its ``EntrySize`` field 40) or 2 (``EntriesCount`` entries).
    Everything is bounds-checked against the envelope's ``Size``."""
    magic, version, size, entries_offset, count = _unpack(_ENVELOPE_HEADER, data, 0,
                                                          "OffloadBinary header")
    if magic != OFFLOAD_MAGIC:
        raise _invalid("not an OffloadBinary (bad magic)")
    if version not in (1, 2):
        raise _invalid(f"unsupported OffloadBinary version {version}")
    if size > len(data) or size < _ENVELOPE_HEADER.size + _ENTRY.size:
        raise _invalid(f"OffloadBinary says {size} bytes, file has {len(data)}")
    data = data[:size]
    if version == 1:
        if count != _ENTRY.size:  # v1: this field is EntrySize
            raise _invalid(f"unexpected OffloadBinary v1 entry size {count}")
        count = 1
    if count < 1 or count > (size - min(entries_offset, size)) // _ENTRY.size:
        raise _invalid(f"{count} OffloadBinary entries do not fit in {size} bytes")
    entries = []
    for k in range(count):
        kind, okind, flags, s_off, n_str, i_off, i_size = _unpack(
            _ENTRY, data, entries_offset + k * _ENTRY.size, "OffloadBinary entry")
        strings = _entry_strings(data, version, s_off, n_str, k)
        image = _region(data, 0, i_off, i_size, size, f"OffloadBinary entry {k} image")
        entries.append(OffloadEntry(kind, okind, flags, strings, image))
    return version, entries


def unwrap_offload_binary(data: bytes) -> bytes:
    """The SYBI image of a SYCLBIN v1 file: the only entry of its OffloadBinary
    envelope (v1 or v2), of image kind ``IMG_SYCLBIN``."""
    _version, entries = read_offload_binary(data)
    if len(entries) != 1:
        raise _invalid(f"a SYBI image must be the only OffloadBinary entry, found {len(entries)}")
    if entries[0].image_kind != IMAGE_KIND_SYCLBIN:
        raise _invalid(f"OffloadBinary entry has image kind {entries[0].image_kind}, "
                       "not SYCLBIN (7)")
    return entries[0].image


def _has_sybi_magic(data: bytes) -> bool:
    return data[:4] == struct.pack("<I", SYBI_MAGIC)


def read_syclbin(data: bytes, *, require_checksum: bool | None = None) -> SyclbinFile:
    """Parse a SYCLBIN file in any layout DPC++ writes: SYBI v1 in an OffloadBinary
    envelope (what ``clang-linker-wrapper`` and the runtime's ``ext_oneapi_get_content``
    write), a bare SYBI image (as LLVM's reader also accepts), or the v2 multi-entry
    OffloadBinary. Every problem is ``sycl.exception(errc.invalid)``.

    ``require_checksum``: ``None`` (the default) requires pysycl's checksum on files
    that hold pysycl content (``PYSYCL/`` sets, pysycl IR) and accepts files without
    it otherwise (DPC++'s); ``True``/``False`` always/never require it. A checksum that
    is present is always verified.
    """
    data = bytes(data)
    if _has_sybi_magic(data):
        return read_sybi(data, require_checksum=require_checksum)
    _version, entries = read_offload_binary(data)
    if _has_sybi_magic(entries[0].image):
        return read_sybi(unwrap_offload_binary(data), require_checksum=require_checksum)
    f = read_syclbin_v2(entries)
    if require_checksum or (require_checksum is None and has_pysycl_content(f)):
        raise _invalid("no pysycl checksum (pysycl writes SYBI v1 files with one)")
    return f


def has_pysycl_content(f: SyclbinFile) -> bool:
    """True if ``f`` holds anything only pysycl writes (its sets or its IR)."""
    for am in f.abstract_modules:
        if any(name.startswith(PYSYCL_SET_PREFIX) for name in am.property_sets):
            return True
        if any(ir.ir_type == IR_TYPE_PYSYCL for ir in am.ir_modules):
            return True
        if any(n.target == PYSYCL_IR_TARGET for n in am.native_images):
            return True
    return False


# --- SYCLBIN v2: a multi-entry OffloadBinary --------------------------------------------

_V2_ROLES = ("global_metadata", "am_metadata", "ir", "native")


def _am_index(entry: OffloadEntry, k: int, limit: int) -> int:
    text = entry.strings.get("am_index", "")
    if not (text.isascii() and text.isdigit()):
        raise _invalid(f"SYCLBIN v2 entry {k} has am_index {text[:20]!r}, not a decimal")
    index = int(text)
    if index >= limit:
        raise _invalid(f"SYCLBIN v2 entry {k} am_index {index} is out of range")
    return index


def _split_payload(image: bytes, what: str) -> tuple[bytes, bytes]:
    """``[u64 metadata size][metadata][raw bytes]`` -> (metadata, raw)."""
    (size,) = _unpack(_U64, image, 0, f"{what} metadata size")
    if size > len(image) - _U64.size:
        raise _invalid(f"{what} metadata size {size} runs past its entry")
    return image[8:8 + size], image[8 + size:]


def read_syclbin_v2(entries: list[OffloadEntry]) -> SyclbinFile:
    """A SYCLBIN v2 file from its OffloadBinary entries (``role``, ``am_index`` and
    ``sycl_format_version`` strings; entry order is not significant)."""
    glob = None
    ams: dict[int, dict] = {}
    for k, e in enumerate(entries):
        if e.image_kind != IMAGE_KIND_SYCLBIN:
            raise _invalid(f"SYCLBIN v2 entry {k} has image kind {e.image_kind}, not SYCLBIN (7)")
        version = e.strings.get("sycl_format_version", "2")
        if version != "2":
            raise _invalid(f"SYCLBIN v2 entry {k} has sycl_format_version {version[:20]!r}")
        role = e.strings.get("role")
        if role not in _V2_ROLES:
            raise _invalid(f"SYCLBIN v2 entry {k} has unknown role {str(role)[:40]!r}")
        if role == "global_metadata":
            if glob is not None:
                raise _invalid("SYCLBIN v2 file has two global_metadata entries")
            glob = _registry(e.image, "global metadata")
            continue
        am = ams.setdefault(_am_index(e, k, len(entries)), {"meta": None, "ir": [], "native": []})
        if role == "am_metadata":
            if am["meta"] is not None:
                raise _invalid(f"SYCLBIN v2 file repeats am_metadata of entry {k}")
            am["meta"] = _registry(e.image, f"entry {k} module metadata")
        else:
            raw_meta, raw = _split_payload(e.image, f"entry {k}")
            reg = _registry(raw_meta, f"entry {k} image metadata")
            am[role].append(_ir_module(reg, raw, f"entry {k}") if role == "ir"
                            else _native_image(reg, raw, f"entry {k}"))
    if glob is None:
        raise _invalid("SYCLBIN v2 file has no global_metadata entry")
    if sorted(ams) != list(range(len(ams))):
        raise _invalid("SYCLBIN v2 am_index values are not contiguous from 0")
    modules = []
    for i in range(len(ams)):
        if ams[i]["meta"] is None:
            raise _invalid(f"SYCLBIN v2 file has no am_metadata for module {i}")
        modules.append(AbstractModule(ams[i]["meta"], ams[i]["ir"], ams[i]["native"]))
    return SyclbinFile(_state(glob), modules)


def _state(glob: PropertySetRegistry) -> SyclbinState:
    state = (glob.get(GLOBAL_METADATA) or {}).get("state")
    if state not in (0, 1, 2):
        raise _invalid(f"bundle state {state!r} is not input (0), object (1) or executable (2)")
    return SyclbinState(state)


def read_sybi(data: bytes, *, require_checksum: bool | None = None) -> SyclbinFile:
    """Parse a bare SYBI v1 image (``require_checksum`` as in ``read_syclbin``)."""
    (magic, version, n_am, n_ir, n_native, meta_size, bin_size, gm_offset,
     gm_size) = _unpack(_FILE_HEADER, data, 0, "SYCLBIN header")
    if magic != SYBI_MAGIC:
        raise _invalid("bad SYCLBIN magic")
    if version != SYBI_VERSION:
        raise _invalid(f"unsupported SYCLBIN version {version}")
    header_end = _FILE_HEADER.size + _AM_HEADER.size * n_am + _IMAGE_HEADER.size * (n_ir + n_native)
    if header_end > len(data):
        raise _invalid(f"{n_am} modules, {n_ir} IR and {n_native} native headers "
                       f"do not fit in {len(data)} bytes")
    meta_start, bin_start = header_end, header_end + _align8(meta_size)
    if bin_start > len(data) or bin_size > len(data) - bin_start:
        raise _invalid("metadata and binary tables run past the end of the file")
    global_raw = _region(data, meta_start, gm_offset, gm_size, meta_size, "global metadata")
    glob = _registry(global_raw, "global metadata")
    has_checksum = _verify_checksum(data, glob, global_raw, meta_start + gm_offset)
    state = _state(glob)
    ir_headers = [_unpack(_IMAGE_HEADER, data, _FILE_HEADER.size + _AM_HEADER.size * n_am
                          + _IMAGE_HEADER.size * i, "IR module header") for i in range(n_ir)]
    native_headers = [_unpack(_IMAGE_HEADER, data, _FILE_HEADER.size + _AM_HEADER.size * n_am
                              + _IMAGE_HEADER.size * (n_ir + i), "native image header")
                      for i in range(n_native)]
    tables = (data, meta_start, meta_size, bin_start, bin_size)
    modules, next_ir, next_native = [], 0, 0
    for i in range(n_am):
        m_off, m_size, ir_count, ir_first, nat_count, nat_first = _unpack(
            _AM_HEADER, data, _FILE_HEADER.size + _AM_HEADER.size * i, "abstract module header")
        # Each image belongs to exactly one module, in order, so nothing is dropped.
        if ir_first != next_ir or nat_first != next_native:
            raise _invalid(f"abstract module {i} does not start at the next unclaimed image")
        if ir_count > n_ir - ir_first or nat_count > n_native - nat_first:
            raise _invalid(f"abstract module {i} claims more images than the file has")
        next_ir, next_native = ir_first + ir_count, nat_first + nat_count
        am_reg = _registry(_region(data, meta_start, m_off, m_size, meta_size,
                                   f"abstract module {i} metadata"), f"abstract module {i} metadata")
        irs = [_read_image(tables, ir_headers[k], f"IR module {k}", _ir_module)
               for k in range(ir_first, next_ir)]
        natives = [_read_image(tables, native_headers[k], f"native image {k}", _native_image)
                   for k in range(nat_first, next_native)]
        modules.append(AbstractModule(am_reg, irs, natives))
    if next_ir != n_ir or next_native != n_native:
        raise _invalid("some images belong to no abstract module")
    f = SyclbinFile(state, modules)
    if not has_checksum and (require_checksum or
                             (require_checksum is None and has_pysycl_content(f))):
        raise _invalid("no pysycl checksum on a file with pysycl content "
                       "(pass require_checksum=False to read it anyway)")
    return f


def _read_image(tables, header, what: str, make):
    data, meta_start, meta_size, bin_start, bin_size = tables
    m_off, m_size, b_off, b_size = header
    reg = _registry(_region(data, meta_start, m_off, m_size, meta_size, f"{what} metadata"),
                    f"{what} metadata")
    return make(reg, _region(data, bin_start, b_off, b_size, bin_size, what), what)


def _ir_module(reg: PropertySetRegistry, raw: bytes, what: str) -> IRModule:
    ir_type = (reg.get(IR_MODULE_METADATA) or {}).get("type")
    if not isinstance(ir_type, int):
        raise _invalid(f"{what} has no u32 type")
    return IRModule(ir_type, raw, _text(reg, IR_MODULE_METADATA, "target", what, required=False))


def _native_image(reg: PropertySetRegistry, raw: bytes, what: str) -> NativeImage:
    # Early writers (clang-linker-wrapper's first SYCLBIN) gave native images no target.
    return NativeImage(_text(reg, NATIVE_METADATA, "target", what, required=False),
                       _text(reg, NATIVE_METADATA, "arch", what), raw,
                       _text(reg, NATIVE_METADATA, "format", what, required=False))


def _verify_checksum(data: bytes, glob: PropertySetRegistry, global_raw: bytes,
                     global_at: int) -> bool:
    """Verify pysycl's checksum if the global metadata has one; False if it has none."""
    integrity = glob.get(INTEGRITY)
    if integrity is None:
        return False
    digest = integrity.get("sha256")
    if not isinstance(digest, bytes) or len(digest) != 32 or len(integrity) != 1:
        raise _invalid("malformed checksum property")
    text = base64_encode(struct.pack("<Q", 256) + digest).encode("ascii")
    line = b"sha256=2|" + text + b"\n"
    # The writer puts the integrity set last; anything after it would be unchecked
    # text that could still change the meaning of the global metadata.
    if not global_raw.endswith(b"[" + INTEGRITY.encode() + b"]\n" + line):
        raise _invalid("checksum is not the last property of the global metadata")
    at = global_at + len(global_raw) - 1 - len(text)
    zeroed = data[:at] + _ZERO_DIGEST_TEXT.encode("ascii") + data[at + len(text):]
    if hashlib.sha256(zeroed).digest() != digest:
        raise _invalid("checksum mismatch: the file is corrupted")
    return True
