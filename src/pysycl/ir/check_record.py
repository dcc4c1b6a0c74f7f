"""The failure record of checked builds, shared by the code generator that writes it
(``codegen/debug_checks``) and the runtime that reads it after a launch
(``bundle/launch``): a program-scope global in the global address space::

    RECORD_SYMBOL (or BOUNDS_RECORD_SYMBOL): i64 x 4 = {site, index, extent, table size}
    SITES_SYMBOL: i8 x N = "kind\\tfile:line\\tsubject\\0" for site 1, 2, ...

``site`` is 0 until a check fails. A bounds build (``PYSYCL_DEBUG=bounds``) names its
record :data:`BOUNDS_RECORD_SYMBOL`: its ``global_ptr`` kernel parameters also take the
size in bytes of their memory as a hidden i64 argument. (No name is a prefix of another:
the runtime finds them in an image's bytes.)

>>> table = b"assert\\tk.py:2\\tassertion failed\\0bounds\\tk.py:3\\tUSM pointer 'p'\\0"
>>> message("k", site_text(table, 2), 12, 10)
"kernel k: k.py:3: index 12 is out of range for USM pointer 'p' of 10 elements; the access was not made and the work-item stopped"
"""
from __future__ import annotations

import struct

RECORD_SYMBOL = "__pysycl_check_record"
BOUNDS_RECORD_SYMBOL = "__pysycl_bounds_record"
SITES_SYMBOL = "__pysycl_check_sites"
RECORD_BYTES = 32


def unpack(record: bytes) -> tuple[int, int, int, int]:
    """(site, index, extent, site-table size) of a record's bytes (index signed)."""
    site, index, extent, size = struct.unpack("<QqqQ", bytes(record[:RECORD_BYTES]))
    return site, index, extent, size


def site_text(table: bytes, site: int) -> str:
    """The text of ``site`` (1-based) in the site table."""
    parts = bytes(table).split(b"\0")
    if not 1 <= site <= len(parts):
        return f"bounds\t<kernel>\tcheck #{site}"
    return parts[site - 1].decode("utf-8", "replace")


def message(kernel: str, text: str, index: int, extent: int) -> str:
    """The error text of a failed check (``text``: its site's text)."""
    kind, _, rest = text.partition("\t")
    where, _, subject = rest.partition("\t")
    if kind == "bounds":
        what = "element" if extent == 1 else "elements"
        return (f"kernel {kernel}: {where}: index {index} is out of range for {subject} of "
                f"{extent} {what}; the access was not made and the work-item stopped")
    return f"kernel {kernel}: {where}: {subject}"


__all__ = ["RECORD_SYMBOL", "BOUNDS_RECORD_SYMBOL", "SITES_SYMBOL", "RECORD_BYTES", "unpack",
           "site_text", "message"]
