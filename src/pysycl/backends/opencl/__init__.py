"""The OpenCL backend slice: SPIR-V images for any OpenCL 3.0 driver through pyopencl."""


def device_types_here() -> frozenset[str] | None:
    """What the installed OpenCL drivers may offer, read from their ICD files without
    loading any: only a CPU when the one driver is Intel's CPU runtime from PyPI, None
    (any type) when another ICD is installed, nothing without pyopencl."""
    import importlib.util
    if importlib.util.find_spec("pyopencl") is None:
        return frozenset()
    from . import environment
    return environment.device_types_here()
