"""The one place that names concrete backends: drivers for the runtime, compilers for bundles.

Backends are imported lazily, on the first question asked of them (a selector that one
of them might satisfy, ``get_devices``, ``get_platforms``): a program on the native CPU
never loads OpenCL or CUDA. ``native_cpu`` is always there; ``opencl`` and ``cuda`` join
only when their driver module imports and ``discover()`` finds a device. Any failure of an optional backend (missing package, no
driver library, a broken ICD) is logged and the backend is left out: it never breaks
``import pysycl``.

>>> from pysycl.backends import registry
>>> registry.get_driver("native_cpu").name
'native_cpu'
>>> [d.backend for d in registry.all_devices()][:1]
['native_cpu']
>>> registry.get_compiler("native_cpu").target.name      # doctest: +SKIP
'native_cpu'
"""
from __future__ import annotations

import importlib
import inspect
import logging
import threading
from .base import Compiler, DeviceDescription, Driver, Target
from ..errors import errc, exception

log = logging.getLogger(__name__)

# Backend order is also the order of platforms and devices: native_cpu first because it
# is always present; selectors, not this order, decide the default device.
BACKENDS = ("native_cpu", "opencl", "cuda")
_OPTIONAL = frozenset({"opencl", "cuda"})
_PACKAGE = "pysycl.backends"
ANY_DEVICE_TYPE = frozenset({"cpu", "gpu", "accelerator"})

_lock = threading.RLock()
_drivers: dict[str, Driver | None] = {}
_devices: dict[str, list[DeviceDescription]] = {}
_compilers: dict[str, Compiler] = {}
_why_absent: dict[str, str] = {}       # backend -> why it has no devices here
_types_here: dict[str, frozenset[str]] = {}   # backend -> device_types_here() of its package


def _find_subclass(module, base: type) -> type | None:
    """The one subclass of ``base`` defined in ``module`` (a backend's convention)."""
    found = [obj for obj in vars(module).values()
             if inspect.isclass(obj) and issubclass(obj, base) and obj is not base
             and obj.__module__ == module.__name__ and not inspect.isabstract(obj)]
    return found[0] if len(found) == 1 else None


def _load_driver(name: str) -> Driver | None:
    """Import and construct backend ``name``'s driver, or None when it cannot load."""
    try:
        module = importlib.import_module(f"{_PACKAGE}.{name}.driver")
        factory = getattr(module, "create_driver", None) or _find_subclass(module, Driver)
        if factory is None:
            log.warning("backend %s: driver.py defines no Driver subclass", name)
            return None
        driver = factory()
        devices = list(driver.discover())
    except Exception as e:  # an optional backend must never break pysycl
        if name not in _OPTIONAL:
            raise
        _why_absent[name] = f"{type(e).__name__}: {e}"
        log.info("backend %s unavailable: %s", name, _why_absent[name])
        return None
    if not devices and name in _OPTIONAL:
        _why_absent[name] = driver.absent_reason or "its driver reports no devices"
        log.info("backend %s: no devices", name)
        return None
    _devices[name] = devices
    return driver


def get_driver(name: str) -> Driver:
    """The driver of backend ``name``; ``errc.platform`` if it is unknown or absent here.

    >>> get_driver("native_cpu").name
    'native_cpu'
    """
    name = getattr(name, "name", name)  # accept a sycl.backend member
    if name not in BACKENDS:
        raise exception(errc.platform, f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    driver = _drivers.get(name, ...)
    if driver is ...:
        with _lock:
            driver = _drivers.get(name, ...)
            if driver is ...:
                driver = _drivers[name] = _load_driver(name)
    if driver is None:
        raise exception(errc.platform, f"backend {name!r} is not available on this machine")
    return driver


def device_types_here(name: str) -> frozenset[str]:
    """The device types backend ``name`` may offer on this machine, answered without
    loading its runtime: a loaded backend answers from its devices; otherwise the
    backend package's ``device_types_here()`` (a cheap look at what is installed: a
    package, a driver library, ICD files) answers, and ``None`` from it, its absence or
    any failure means "any type". Selectors use it to leave alone backends that cannot
    offer a better device (``runtime.device.select_device``).

    >>> device_types_here("native_cpu")
    frozenset({'cpu'})
    """
    if name in _drivers:
        return frozenset(d.device_type for d in _devices.get(name, ()))
    types = _types_here.get(name)
    if types is None:
        try:
            probe = getattr(importlib.import_module(f"{_PACKAGE}.{name}"),
                            "device_types_here", None)
            found = probe() if probe is not None else None
        except Exception as e:  # a broken probe costs laziness, never a device
            log.debug("backend %s: device-type probe failed: %s", name, e)
            found = None
        types = _types_here[name] = ANY_DEVICE_TYPE if found is None else frozenset(found)
    return types


def available_backends() -> list[str]:
    """Names of the backends that loaded and have devices, in platform order."""
    out = []
    for name in BACKENDS:
        try:
            get_driver(name)
        except exception:
            continue
        out.append(name)
    return out


def why_absent(name: str) -> str | None:
    """Why backend ``name`` has no devices here (None when it has some).

    >>> why_absent("native_cpu") is None
    True
    """
    return None if name in available_backends() else _why_absent.get(name, "not loaded")


def devices_of(name: str) -> list[DeviceDescription]:
    """Devices of one backend (empty when the backend is absent)."""
    try:
        get_driver(name)
    except exception:
        return []
    return list(_devices.get(name, ()))


def all_devices() -> list[DeviceDescription]:
    """Every device of every available backend, in platform order.

    >>> all_devices()[0].backend
    'native_cpu'
    """
    return [d for name in BACKENDS for d in devices_of(name)]


# Compilers --------------------------------------------------------------------------
def backend_of_target(target_name: str) -> str:
    """Which backend compiles a target: ``"spirv64v1.2"`` -> ``"opencl"``.

    >>> backend_of_target("nvptx64-sm_90")
    'cuda'
    """
    if target_name.startswith("native_cpu"):
        return "native_cpu"
    if target_name.startswith("spirv"):
        return "opencl"
    if target_name.startswith(("nvptx", "ptx", "sm_")):
        return "cuda"
    raise exception(errc.invalid, f"unknown code-generation target {target_name!r}")


def get_target(target_name: str) -> Target:
    """The :class:`Target` named ``target_name``, from the backend's ``target.py``.

    A target module may define ``target_for_name(name)``; otherwise a module-level
    ``Target`` whose ``name`` matches is used.
    """
    backend = backend_of_target(target_name)
    module = importlib.import_module(f"{_PACKAGE}.{backend}.target")
    finder = getattr(module, "target_for_name", None)
    if finder is not None:
        target = finder(target_name)
        if target is not None:
            return target
    for value in vars(module).values():
        if isinstance(value, Target) and value.name == target_name:
            return value
    if backend == "opencl" and target_name.startswith("spirv64v"):
        major, minor = target_name[len("spirv64v"):].split(".")
        return module.spirv_target((int(major), int(minor)))
    if backend == "native_cpu":
        for name in ("native_cpu_target", "host_target"):
            if callable(getattr(module, name, None)):
                return getattr(module, name)()
    raise exception(errc.invalid, f"backend {backend} has no target {target_name!r}")


def get_compiler(target_name: str) -> Compiler:
    """The (cached, thread-safe) compiler of a target; needs no device.

    A backend's ``compiler.py`` may define ``compiler_for(target_name)``; otherwise its
    one ``Compiler`` subclass is built with ``target=get_target(target_name)``.
    """
    compiler = _compilers.get(target_name)
    if compiler is not None:
        return compiler
    with _lock:
        compiler = _compilers.get(target_name)
        if compiler is None:
            backend = backend_of_target(target_name)
            try:
                module = importlib.import_module(f"{_PACKAGE}.{backend}.compiler")
            except ImportError as e:
                raise exception(errc.feature_not_supported,
                                f"no compiler for target {target_name!r}: {e}") from None
            factory = getattr(module, "compiler_for", None)
            if factory is not None:
                compiler = factory(target_name)
            else:
                cls = _find_subclass(module, Compiler)
                if cls is None:
                    raise exception(errc.feature_not_supported,
                                    f"backend {backend} defines no Compiler")
                compiler = cls(target=get_target(target_name))
            _compilers[target_name] = compiler
    return compiler


def required_cpu_features(target: Target) -> tuple[str, ...]:
    """The host CPU features code made for ``target`` may use (a backend's
    ``target.py`` may define ``required_features(target)``; none otherwise)."""
    module = importlib.import_module(f"{_PACKAGE}.{backend_of_target(target.name)}.target")
    fn = getattr(module, "required_features", None)
    return tuple(fn(target)) if fn is not None else ()


def host_cpu_features() -> frozenset[str]:
    """The features of this machine's CPU (LLVM's names, e.g. ``avx2``)."""
    features = get_target("native_cpu").features
    return frozenset(f[1:] for f in features.split(",") if f.startswith("+"))


def get_lowering(target_name: str):
    """The codegen ``TargetLowering`` of a target, from its backend's ``lowering.py``.

    A lowering module may define ``lowering_for(target)``; otherwise its one
    ``TargetLowering`` subclass is built with ``get_target(target_name)``. A fresh object
    each call: lowerings are cheap and carry per-module settings (``debug``).

    >>> type(get_lowering("nvptx64-sm_90")).__name__
    'CudaLowering'
    """
    from ..codegen.target_lowering import TargetLowering
    backend = backend_of_target(target_name)
    try:
        module = importlib.import_module(f"{_PACKAGE}.{backend}.lowering")
    except ImportError as e:
        raise exception(errc.feature_not_supported,
                        f"no code generator for target {target_name!r}: {e}") from None
    target = get_target(target_name)
    factory = getattr(module, "lowering_for", None)
    if factory is not None:
        return factory(target)
    cls = _find_subclass(module, TargetLowering)
    if cls is None:
        raise exception(errc.feature_not_supported, f"backend {backend} defines no TargetLowering")
    return cls(target)


def reset() -> None:
    """Forget loaded drivers and compilers (tests that change the environment)."""
    with _lock:
        _drivers.clear()
        _devices.clear()
        _compilers.clear()
        _types_here.clear()



# Interop ----------------------------------------------------------------------------
# DLDeviceType codes (dlpack.h): kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLCUDAManaged 13,
# kDLOneAPI 14. The native CPU's memory is all plain host memory.
_DLPACK = {("native_cpu", "device"): 1, ("native_cpu", "shared"): 1, ("native_cpu", "host"): 1,
           ("cuda", "device"): 2, ("cuda", "host"): 3, ("cuda", "shared"): 13}


def dlpack_device(desc: DeviceDescription, usm_kind: str) -> tuple[int, int]:
    """``__dlpack_device__`` of USM of ``usm_kind`` on ``desc``.

    >>> dlpack_device(all_devices()[0], "device")
    (1, 0)
    """
    code = _DLPACK.get((desc.backend, usm_kind), 14)
    if code in (1, 3):
        return (code, 0)
    ordinal = desc.handle if isinstance(desc.handle, int) else \
        [d for d in devices_of(desc.backend)].index(desc)
    return (code, int(ordinal))
