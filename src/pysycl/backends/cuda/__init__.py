"""The CUDA backend slice: ``target`` (nvptx64 targets and the IR conventions codegen
follows), ``compiler`` (LLVM IR -> PTX with libdevice; no GPU needed), ``driver`` (the
CUDA driver API through cuda-bindings). Nothing is imported here, so listing the package
never loads llvmlite or CUDA."""


def device_types_here() -> frozenset[str]:
    """GPUs when cuda-bindings and the driver library (``libcuda.so.1``) are installed,
    nothing otherwise; no device is touched (the registry's cheap look before a
    selector decides whether this backend can matter)."""
    import ctypes
    import importlib.util
    import sys
    try:
        if importlib.util.find_spec("cuda.bindings") is None:
            return frozenset()
    except (ImportError, ValueError):   # no ``cuda`` namespace package at all
        return frozenset()
    names = {"win32": ("nvcuda.dll",)}.get(sys.platform, ("libcuda.so.1", "libcuda.so"))
    for name in names:
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return frozenset({"gpu"})
    return frozenset()
