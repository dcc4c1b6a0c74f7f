"""Names that compiled code and the runtime agree on without sharing anything else.

>>> device_global_symbol("app.counter")
'__pysycl_dg_app_counter_5b0c2c3f'
"""
from __future__ import annotations

import hashlib
import re

_NOT_LLVM_NAME = re.compile(r"[^A-Za-z0-9_.]")


def llvm_name(name: str) -> str:
    """``name`` with every character LLVM would quote replaced by ``_``."""
    return _NOT_LLVM_NAME.sub("_", name)


def device_global_symbol(unique_id: str) -> str:
    """The LLVM symbol of the device_global with ``unique_id``: readable and deterministic,
    with a hash so IDs that differ only in punctuation cannot collide."""
    digest = hashlib.sha256(unique_id.encode()).hexdigest()[:8]
    return f"__pysycl_dg_{llvm_name(unique_id).replace('.', '_')}_{digest}"
