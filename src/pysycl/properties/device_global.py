"""``device_global`` properties (``sycl_ext_oneapi_device_global``), attached to globals.

Enumerations carry DPC++'s integer values, which is what their ``meta_value`` is
(sycl_ext_oneapi_properties: "enumeration values are first converted to an integer").

>>> host_access(host_access_mode.read).meta_value
'0'
>>> implement_in_csr(True).meta_value
'true'
"""
from __future__ import annotations

import enum

from ..errors import errc, exception
from .base import property, singleton_property


class host_access_mode(enum.IntEnum):
    """``host_access_enum`` of the extension, in DPC++'s order."""

    read = 0
    write = 1
    read_write = 2
    none = 3


class init_mode_enum(enum.IntEnum):
    """``init_mode_enum``: how an FPGA re-initialises the variable (ignored elsewhere)."""

    reprogram = 0
    reset = 1


def _enum_value(prop: str, enum_cls, value):
    try:
        if isinstance(value, str):
            return enum_cls[value]
        if isinstance(value, bool):
            raise ValueError
        return enum_cls(value)
    except (KeyError, ValueError):
        names = ", ".join(m.name for m in enum_cls)
        raise exception(errc.invalid, f"{prop}: {value!r} is not one of {names}") from None


class device_image_scope_key(singleton_property):
    """The variable lives in one device image (no USM indirection); using it from two
    images is a link error."""

    meta_name = "sycl-device-image-scope"
    category = "global_variable"


class host_access(property):
    """Which host copies are allowed (``read``: only device->host, ...).

    >>> host_access("write").value
    <host_access_mode.write: 1>
    """

    meta_name = "sycl-host-access"
    category = "global_variable"

    def __init__(self, mode=host_access_mode.read_write):
        self._value = _enum_value("host_access", host_access_mode, mode)

    @classmethod
    def from_meta(cls, text):
        return cls(_int_or_invalid(cls.__name__, text))


class init_mode(property):
    """FPGA re-initialisation mode (ignored on other devices)."""

    meta_name = "sycl-init-mode"
    category = "global_variable"

    def __init__(self, mode):
        self._value = _enum_value("init_mode", init_mode_enum, mode)

    @classmethod
    def from_meta(cls, text):
        return cls(_int_or_invalid(cls.__name__, text))


class implement_in_csr(property):
    """FPGA: keep the variable in control/status registers."""

    meta_name = "sycl-implement-in-csr"
    category = "global_variable"

    def __init__(self, enable: bool = True):
        if not isinstance(enable, bool):
            raise exception(errc.invalid, f"implement_in_csr: expected a bool, got {enable!r}")
        self._value = enable

    @classmethod
    def from_meta(cls, text):
        if text not in ("true", "false"):
            raise exception(errc.invalid, f"implement_in_csr: bad IR value {text!r}")
        return cls(text == "true")


def _int_or_invalid(prop: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise exception(errc.invalid, f"{prop}: bad IR value {text!r}") from None


device_image_scope = device_image_scope_key()
# The extension's ready-made aliases.
host_access_read = host_access(host_access_mode.read)
host_access_write = host_access(host_access_mode.write)
host_access_read_write = host_access(host_access_mode.read_write)
host_access_none = host_access(host_access_mode.none)
implement_in_csr_on = implement_in_csr(True)
implement_in_csr_off = implement_in_csr(False)
