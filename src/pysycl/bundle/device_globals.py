"""The per-device instance of each ``device_global`` and host copies to and from it.

SYCL (sycl_ext_oneapi_device_global): one instance per device and context
(keyed by the driver context: None for the default one),
shared by every kernel on that device whatever image it is in, initialised to T's
default (zero, or a ``@sycl.struct``'s field defaults; each image's global has that
initializer, and so does the host-side shadow), kept
across launches, bundles and spec-constant changes. Each loaded program has its own copy
of the variable (an LLVM global, found by ``detail.symbols.device_global_symbol``), so the
instance is kept coherent by ownership, lazily:

* ``owner``: the program whose global holds the current value, or ``None`` while only
  the host-side ``shadow`` does (no kernel has used the variable yet; DPC++ keeps an
  unreferenced variable in its host instance too).
* Before a launch of program P that uses the variable: if P is not the owner, the value
  moves to P (owner -> shadow -> P) and P becomes the owner. The common case, one
  program launched again and again, costs one identity test per variable.
* Host copies read or write the owner's global, or the shadow.

With ``device_image_scope`` every program keeps its own instance (one per image): a
host copy needs exactly one loaded program holding the variable (more is
``errc.invalid``); with none it goes to the shadow, and the first program loaded takes
the shadow's value (a copy before the first kernel initialises the variable).

>>> inst = DeviceGlobalInstance("dev", "m.x", 4, False)
>>> inst.host_write(None, 0, b"\\x01\\x00\\x00\\x00"); inst.host_read(None, 0, 4)
b'\\x01\\x00\\x00\\x00'
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Iterable

from ..detail import lookup_unique_id
from ..detail.symbols import device_global_symbol
from ..errors import errc, exception
from ..host_objects import _Identifiable
from ..properties import device_image_scope
from . import property_sets as ps

_lock = threading.Lock()
_instances: dict[tuple, "DeviceGlobalInstance"] = {}
_registered_modules: set[str] = set()


class _Program:
    """Reads and writes one program's copy of a variable through its device's driver."""

    __slots__ = ("program", "driver", "symbol")

    def __init__(self, program, driver, symbol: str):
        self.program, self.driver, self.symbol = program, driver, symbol

    def read(self, stream, offset: int, out: memoryview) -> None:
        self.driver.read_device_global(stream, self.program, self.symbol, offset, out)

    def write(self, stream, offset: int, data: memoryview) -> None:
        self.driver.write_device_global(stream, self.program, self.symbol, offset, data)


class DeviceGlobalInstance:
    """The instance of one device_global (``uid``) on one device."""

    def __init__(self, device, uid: str, nbytes: int, image_scope: bool, initial: bytes = b""):
        self.device, self.uid, self.nbytes, self.image_scope = device, uid, nbytes, image_scope
        self.shadow = bytearray(initial) if len(initial) == nbytes else bytearray(nbytes)
        self.dirty = False              # the shadow holds a value written by the host
        self.owner: _Program | None = None
        self.programs: list[_Program] = []   # loaded programs holding the variable
        self.lock = threading.RLock()

    # Programs -------------------------------------------------------------------------
    def _entry(self, program, driver) -> _Program:
        for e in self.programs:
            if e.program is program:
                return e
        e = _Program(program, driver, device_global_symbol(self.uid))
        self.programs.append(e)
        if self.image_scope and self.dirty:
            e.write(None, 0, memoryview(self.shadow))
        return e

    def program_loaded(self, program, driver) -> None:
        with self.lock:
            self._entry(program, driver)

    def before_launch(self, program, driver, stream) -> None:
        """Make ``program``'s global hold the device's value (non-image-scope)."""
        owner = self.owner
        if owner is not None and owner.program is program:
            return
        with self.lock:
            e = self._entry(program, driver)
            owner = self.owner
            if owner is e:
                return
            if owner is not None:
                owner.read(stream, 0, memoryview(self.shadow))
                self.dirty = True
            if self.dirty:
                e.write(stream, 0, memoryview(self.shadow))
            self.owner = e

    def program_evicted(self, program) -> None:
        """``program`` is about to be unloaded (bundle/programs.py): its copy of the
        variable, if it holds the device's value, becomes the host copy, which the next
        program to run with the variable is given."""
        with self.lock:
            e = next((e for e in self.programs if e.program is program), None)
            if e is None:
                return
            if self.image_scope or self.owner is e:
                e.read(None, 0, memoryview(self.shadow))
                self.dirty = True
            if self.owner is e:
                self.owner = None
            self.programs.remove(e)

    # Host copies ----------------------------------------------------------------------
    def check_host_copy(self) -> None:
        """``errc.invalid`` when a device_image_scope variable is in several images."""
        if self.image_scope and len(self.programs) > 1:
            raise exception(errc.invalid, f"device_global {self.uid} has the "
                            "device_image_scope property and is present in "
                            f"{len(self.programs)} device images on this device")

    def _target(self) -> _Program | None:
        if self.image_scope:
            self.check_host_copy()
            return self.programs[0] if self.programs else None
        return self.owner

    def host_read(self, stream, offset: int, nbytes: int) -> bytes:
        with self.lock:
            t = self._target()
            if t is None:
                return bytes(self.shadow[offset:offset + nbytes])
            out = bytearray(nbytes)
            t.read(stream, offset, memoryview(out))
            return bytes(out)

    def host_write(self, stream, offset: int, data) -> None:
        data = memoryview(data).cast("B")
        with self.lock:
            t = self._target()
            if t is None:
                self.shadow[offset:offset + data.nbytes] = data
                self.dirty = True
            else:
                t.write(stream, offset, data)


def program_evicted(program) -> None:
    """Save the device_global values ``program`` holds before it is unloaded."""
    for inst in list(_instances.values()):
        inst.program_evicted(program)


def instance(device, uid: str, nbytes: int, image_scope: bool,
             ctx_handle=None, initial: bytes = b"") -> DeviceGlobalInstance:
    """The instance of ``uid`` on ``device`` in the driver context ``ctx_handle`` (None:
    the default one), made on first use; ``initial``: its initial value's bytes (empty:
    zero)."""
    key = (device, uid, ctx_handle)
    inst = _instances.get(key)
    if inst is None:
        with _lock:
            inst = _instances.get(key)
            if inst is None:
                inst = _instances[key] = DeviceGlobalInstance(device, uid, nbytes, image_scope,
                                                              initial)
    return inst


def instance_of(dg, device, ctx_handle=None) -> DeviceGlobalInstance:
    """The instance of host object ``dg`` (a ``sycl.device_global``) on ``device`` in
    driver context ``ctx_handle``."""
    return instance(device, dg.unique_id, dg.nbytes,
                    dg.properties.has_property(device_image_scope), ctx_handle,
                    dg.initial_bytes)


def image_device_globals(image) -> list[tuple[str, int, bool, bytes]]:
    """``(unique_id, size, device_image_scope, initial bytes)`` of the variables an image
    holds (empty initial bytes: zero-initialised)."""
    out = []
    # A warm-start image answers from its property sets (no IR made for this).
    module = None if getattr(image, "is_warm", False) else image.module
    if module is not None and module.device_globals:
        for d in module.device_globals:
            out.append((d.unique_id, d.type.size, "sycl-device-image-scope" in d.properties,
                        bytes(d.initial)))
        return out
    for uid, desc in image.property_sets.get(ps.DEVICE_GLOBALS, {}).items():
        size, dis = ps.unpack_device_global_descriptor(desc)
        out.append((uid, size, dis, _registered_initial(uid)))
    return out


def _registered_initial(uid: str) -> bytes:
    """The initial bytes of the live host object ``uid`` (an image known only by its
    property sets was made from this process's definitions), else zero."""
    obj = lookup_unique_id(uid)
    return bytes(getattr(obj, "initial_bytes", b""))


def launch_hooks(image, device, ctx_handle=None) -> tuple[list, list]:
    """``(per_launch, per_load)`` instances of an image's variables on ``device`` in
    driver context ``ctx_handle``."""
    per_launch, per_load = [], []
    for uid, size, dis, initial in image_device_globals(image):
        inst = instance(device, uid, size, dis, ctx_handle, initial)
        (per_load if dis else per_launch).append(inst)
    return per_launch, per_load


def register_module_objects(module_name: str | None) -> None:
    """Register every specialization_id and device_global a Python module
    defines (module level and class attributes) before any of its kernels runs."""
    if not module_name or module_name in _registered_modules:
        return
    _registered_modules.add(module_name)
    mod = sys.modules.get(module_name)
    if mod is None:
        return

    def visit(values: Iterable[Any], depth: int) -> None:
        for v in list(values):
            if isinstance(v, _Identifiable):
                try:
                    v.unique_id
                except exception:
                    pass
            elif isinstance(v, type) and depth < 3 and v.__module__ == module_name:
                visit(vars(v).values(), depth + 1)
    visit(vars(mod).values(), 0)


def reset() -> None:
    """Forget every instance (tests)."""
    with _lock:
        _instances.clear()


def scope_group(uses: dict, seed) -> set:
    """The keys of ``uses`` (each mapped to the ``device_image_scope`` variables it uses)
    linked to ``seed`` through shared variables, directly or through others: the
    kernels that must share one image (DPC++'s per-source split for such variables)."""
    members, shared = {seed}, set(uses[seed])
    grew = True
    while grew:   # to a fixed point: a kernel joining brings its variables
        grew = False
        for key, used in uses.items():
            if key not in members and used & shared:
                members.add(key)
                shared |= used
                grew = True
    return members
