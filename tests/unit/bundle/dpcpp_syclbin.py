"""An independent SYCLBIN reader and DPC++'s three SYCLBIN writers, for the tests.

Written from the DPC++ sources (intel/llvm ``llvm/lib/Object/SYCLBIN.cpp`` v1 and v2,
``llvm/lib/Object/OffloadBinary.cpp``, ``sycl/source/detail/syclbin.cpp``,
``llvm/lib/Support/PropertySetIO.cpp`` and ``Base64.cpp``), never from pysycl's writer:
it imports nothing from pysycl, so a test that checks pysycl's files with it checks
them against DPC++'s reading of the format, and a file it writes is laid out the way
DPC++'s tools lay it out.

The three writers:

* ``write_linker_wrapper``: ``clang-linker-wrapper --syclbin`` of the v1 era: the SYBI
  image of ``SYCLBIN::write`` (IR module metadata ``type`` only) as the one image of
  an ``OffloadBinary::write`` version 1 envelope (16-byte string entries, NUL-terminated
  values, ``OFK_SYCL`` 4).
* ``write_runtime``: the runtime's own ``SYCLBIN::write`` (``ext_oneapi_get_content``):
  the SYBI image (``type`` and ``target``) right after a version 2 envelope header and
  its one entry (``OFK_SYCL`` 8, no strings).
* ``write_v2``: the newest LLVM ``SYCLBIN::write``: a multi-entry ``OffloadBinary``
  version 2 (24-byte string entries) with one entry per role.
"""
from __future__ import annotations

import struct

SYBI_MAGIC = 0x53594249
OB_MAGIC = b"\x10\xff\x10\xad"
IMG_SYCLBIN = 7
GLOBAL = "SYCLBIN/global metadata"
IR_META = "SYCLBIN/ir module metadata"
NATIVE_META = "SYCLBIN/native device code image metadata"

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


# -- PropertySetIO text -----------------------------------------------------------------

def b64_encode(data: bytes) -> str:
    """LLVM's Base64Impl: each 3-byte group read as a little-endian 24-bit number and
    written 6 bits at a time from the lowest; a short tail writes only the characters
    its bits need; no padding."""
    out = []
    for i in range(0, len(data), 3):
        chunk = data[i:i + 3]
        bits = int.from_bytes(chunk, "little")
        for k in range({1: 2, 2: 3, 3: 4}[len(chunk)]):
            out.append(_ALPHABET[(bits >> (6 * k)) & 63])
    return "".join(out)


def b64_decode(text: str) -> bytes:
    out = bytearray()
    for i in range(0, len(text), 4):
        group = text[i:i + 4]
        bits = 0
        for k, ch in enumerate(group):
            bits |= _ALPHABET.index(ch) << (6 * k)
        out += bits.to_bytes(3, "little")[:{2: 1, 3: 2, 4: 3}[len(group)]]
    return bytes(out)


def props_text(sets: dict) -> bytes:
    """``[set]`` then ``key=1|u32`` or ``key=2|<base64 of u64 bit size + bytes>``."""
    lines = []
    for name, props in sets.items():
        lines.append(f"[{name}]\n")
        for key, value in props.items():
            if isinstance(value, int):
                lines.append(f"{key}=1|{value}\n")
            else:
                data = value.encode() if isinstance(value, str) else bytes(value)
                lines.append(f"{key}=2|{b64_encode(struct.pack('<Q', 8 * len(data)) + data)}\n")
    return "".join(lines).encode()


def parse_props(raw: bytes) -> dict:
    """PropertySetRegistry::read: blank lines skipped, ``key`` up to the first ``=``,
    type up to the first ``|``; byte arrays give their payload (size prefix checked)."""
    sets: dict = {}
    current = None
    for line in raw.decode().split("\n"):
        if not line:
            continue
        if line[0] == "[":
            assert line[-1] == "]", line
            current = sets.setdefault(line[1:-1], {})
            continue
        key, _, rest = line.partition("=")
        kind, _, value = rest.partition("|")
        if kind == "1":
            current[key] = int(value)
        else:
            assert kind == "2", line
            blob = b64_decode(value)
            bits = struct.unpack_from("<Q", blob)[0]
            assert (bits + 7) // 8 == len(blob) - 8, line
            current[key] = blob[8:]
    return sets


# -- reader -------------------------------------------------------------------------

def _offload_entries(data: bytes) -> tuple[int, list[dict]]:
    """OffloadBinary::create: every entry with its string map and image."""
    magic, version, size, entries_offset, count = struct.unpack_from("<4sIQQQ", data)
    assert magic == OB_MAGIC and version in (1, 2) and size <= len(data)
    if version == 1:
        assert count == 40      # EntrySize
        count = 1
    entries = []
    for k in range(count):
        kind, okind, flags, s_off, n_str, i_off, i_size = struct.unpack_from(
            "<HHIQQQQ", data, entries_offset + 40 * k)
        assert i_off + i_size <= size
        strings = {}
        for j in range(n_str):
            if version == 1:
                key_off, val_off = struct.unpack_from("<QQ", data, s_off + 16 * j)
                val = data[val_off:data.index(b"\0", val_off)]
            else:
                key_off, val_off, val_size = struct.unpack_from("<QQQ", data, s_off + 24 * j)
                val = data[val_off:val_off + val_size]
            strings[data[key_off:data.index(b"\0", key_off)].decode()] = val.decode()
        entries.append({"kind": kind, "offload_kind": okind, "flags": flags,
                        "strings": strings, "image": data[i_off:i_off + i_size]})
    return version, entries


def _read_sybi(img: bytes) -> dict:
    """SYCLBIN::readV1 / the runtime's SYCLBIN constructor."""
    magic, version, n_am, n_ir, n_nat = struct.unpack_from("<5I", img)
    meta_size, bin_size, gm_off, gm_size = struct.unpack_from("<QQQQ", img, 24)
    assert magic == SYBI_MAGIC and version == 1
    header = 56 + 32 * (n_am + n_ir + n_nat)
    meta = header
    binary = header + meta_size + (-meta_size & 7)
    assert len(img) >= binary + bin_size
    out = {"global": parse_props(img[meta + gm_off:meta + gm_off + gm_size]), "modules": []}
    for i in range(n_am):
        m_off, m_size, ir_n, ir_first, nat_n, nat_first = struct.unpack_from(
            "<QQIIII", img, 56 + 32 * i)
        am = {"metadata": parse_props(img[meta + m_off:meta + m_off + m_size]),
              "ir": [], "native": []}
        for role, n, first, base in (("ir", ir_n, ir_first, 56 + 32 * n_am),
                                     ("native", nat_n, nat_first, 56 + 32 * (n_am + n_ir))):
            for j in range(n):
                mo, ms, bo, bs = struct.unpack_from("<QQQQ", img, base + 32 * (first + j))
                assert mo + ms <= meta_size and bo + bs <= bin_size
                am[role].append({"metadata": parse_props(img[meta + mo:meta + mo + ms]),
                                 "bytes": img[binary + bo:binary + bo + bs]})
        out["modules"].append(am)
    return out


def read(data: bytes) -> dict:
    """SYCLBIN::read: a bare SYBI image, SYBI in an OffloadBinary (first entry), or v2.
    Gives ``{"layout", "global", "modules": [{"metadata", "ir", "native"}]}``."""
    if struct.unpack_from("<I", data)[0] == SYBI_MAGIC:
        return dict(_read_sybi(data), layout="bare")
    version, entries = _offload_entries(data)
    if struct.unpack_from("<I", entries[0]["image"])[0] == SYBI_MAGIC:
        assert entries[0]["kind"] == IMG_SYCLBIN
        return dict(_read_sybi(entries[0]["image"]), layout=f"sybi-in-offload-v{version}",
                    envelope=entries)
    out = {"layout": "v2", "global": None, "modules": []}
    for e in entries:
        assert e["kind"] == IMG_SYCLBIN
        role = e["strings"]["role"]
        if role == "global_metadata":
            out["global"] = parse_props(e["image"])
            continue
        index = int(e["strings"]["am_index"])
        while len(out["modules"]) <= index:
            out["modules"].append({"metadata": None, "ir": [], "native": []})
        am = out["modules"][index]
        if role == "am_metadata":
            am["metadata"] = parse_props(e["image"])
        else:
            (size,) = struct.unpack_from("<Q", e["image"])
            am[role].append({"metadata": parse_props(e["image"][8:8 + size]),
                             "bytes": e["image"][8 + size:]})
    return out


# -- writers ------------------------------------------------------------------------
# ``modules``: [{"metadata": {set: {key: value}}, "ir": [(bytes, triple)],
#               "native": [(bytes, arch, triple)]}]

def _sybi(state: int, modules: list, with_targets: bool) -> bytes:
    """SYCLBIN::write (v1): header, AM headers, IR headers, native headers (each padded
    to 8), the metadata table (global, AMs, IR, native; padded), the binary table (IR
    bytes, then native bytes; padded)."""
    glob = props_text({GLOBAL: {"state": state}})
    am_meta = [props_text(m["metadata"]) for m in modules]
    ir_meta, ir_bytes, nat_meta, nat_bytes = [], [], [], []
    for m in modules:
        for data, triple in m.get("ir", []):
            ir_meta.append(props_text({IR_META: {"type": 0, **({"target": triple}
                                                              if with_targets else {})}}))
            ir_bytes.append(data)
        for data, arch, triple in m.get("native", []):
            nat_meta.append(props_text({NATIVE_META: {"arch": arch, **({"target": triple}
                                                                      if with_targets else {})}}))
            nat_bytes.append(data)
    metas = [glob] + am_meta + ir_meta + nat_meta
    meta_size = sum(map(len, metas))
    bin_size = sum(map(len, ir_bytes + nat_bytes))
    out = bytearray(struct.pack("<5I4xQQQQ", SYBI_MAGIC, 1, len(modules), len(ir_bytes),
                                len(nat_bytes), meta_size, bin_size, 0, len(glob)))
    meta_pos = len(glob)
    ir_first = nat_first = 0
    for m, meta in zip(modules, am_meta):
        n_ir, n_nat = len(m.get("ir", [])), len(m.get("native", []))
        out += struct.pack("<QQIIII", meta_pos, len(meta), n_ir, ir_first, n_nat, nat_first)
        meta_pos += len(meta)
        ir_first += n_ir
        nat_first += n_nat
    bin_pos = 0
    for meta, data in zip(ir_meta + nat_meta, ir_bytes + nat_bytes):
        out += struct.pack("<QQQQ", meta_pos, len(meta), bin_pos, len(data))
        meta_pos += len(meta)
        bin_pos += len(data)
    out += b"".join(metas) + bytes(-meta_size & 7)
    out += b"".join(ir_bytes + nat_bytes) + bytes(-bin_size & 7)
    return bytes(out)


def _string_table(strings: list[str]) -> tuple[bytes, dict]:
    """An ELF-style string table (a leading NUL) and each string's offset in it."""
    table, where = bytearray(b"\0"), {}
    for s in strings:
        if s not in where:
            where[s] = len(table)
            table += s.encode() + b"\0"
    return bytes(table), where


def _offload_binary(images: list[dict], version: int) -> bytes:
    """OffloadBinary::write: header, entries, string entries, string table (padded to
    8), images back to back, padding to 8. ``images``: {kind, okind, strings, image}."""
    string_entry = 16 if version == 1 else 24
    n_strings = sum(len(i["strings"]) for i in images)
    table, where = _string_table([s for i in images for kv in i["strings"].items() for s in kv])
    strtab_at = 32 + 40 * len(images) + string_entry * n_strings
    data_at = strtab_at + len(table) + (-(strtab_at + len(table)) & 7)
    total = data_at + sum(len(i["image"]) for i in images)
    total += -total & 7
    count = 40 if version == 1 else len(images)
    out = bytearray(OB_MAGIC + struct.pack("<IQQQ", version, total, 32, count))
    s_at, i_at = 32 + 40 * len(images), data_at
    for img in images:
        out += struct.pack("<HHIQQQQ", IMG_SYCLBIN, img["okind"], 0, s_at,
                           len(img["strings"]), i_at, len(img["image"]))
        s_at += string_entry * len(img["strings"])
        i_at += len(img["image"])
    for img in images:
        for key, value in img["strings"].items():
            fields = (strtab_at + where[key], strtab_at + where[value])
            if version > 1:
                fields += (len(value.encode()),)
            out += struct.pack("<" + "Q" * len(fields), *fields)
    out += table + bytes(data_at - strtab_at - len(table))
    out += b"".join(i["image"] for i in images)
    return bytes(out) + bytes(total - len(out))


def write_linker_wrapper(state: int, modules: list) -> bytes:
    """clang-linker-wrapper (v1 era): SYBI without ``target`` keys, wrapped by
    OffloadBinary::write version 1 with the triple and kind as strings."""
    return _offload_binary([{"okind": 4, "image": _sybi(state, modules, False),
                             "strings": {"triple": "spir64-unknown-unknown", "kind": "sycl"}}],
                           version=1)


def write_runtime(state: int, modules: list) -> bytes:
    """The runtime's SYCLBIN::write: a 32-byte v2 header, one 40-byte entry, the SYBI
    image right after it at offset 72."""
    image = _sybi(state, modules, True)
    header = OB_MAGIC + struct.pack("<IQQQ", 2, 72 + len(image), 32, 1)
    entry = struct.pack("<HHIQQQQ", IMG_SYCLBIN, 8, 0, 0, 0, 72, len(image))
    return header + entry + image


def write_v2(state: int, modules: list) -> bytes:
    """The newest LLVM SYCLBIN::write: one OffloadBinary entry per role."""
    def entry(role, image, **strings):
        return {"okind": 8, "image": image,
                "strings": {"sycl_format_version": "2", "role": role, **strings}}

    def payload(meta, data):
        return struct.pack("<Q", len(meta)) + meta + data

    images = [entry("global_metadata", props_text({GLOBAL: {"state": state}}))]
    for i, m in enumerate(modules):
        images.append(entry("am_metadata", props_text(m["metadata"]), am_index=str(i)))
        for data, triple in m.get("ir", []):
            meta = props_text({IR_META: {"type": 0, "target": triple}})
            images.append(entry("ir", payload(meta, data), am_index=str(i), ir_type="0",
                                triple=triple))
        for data, arch, triple in m.get("native", []):
            meta = props_text({NATIVE_META: {"arch": arch, "target": triple}})
            images.append(entry("native", payload(meta, data), am_index=str(i), arch=arch,
                                triple=triple))
    return _offload_binary(images, version=2)


WRITERS = {"clang-linker-wrapper": write_linker_wrapper, "runtime": write_runtime,
           "llvm-v2": write_v2}
