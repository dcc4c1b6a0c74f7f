"""The native CPU backend slice: host object code run by a thread pool on this CPU."""


def device_types_here() -> frozenset[str]:
    """The one device this backend always has: the host CPU."""
    return frozenset({"cpu"})
