"""``PYSYCL_DEVICE_SELECTOR``: which devices the process may see (like DPC++'s
``ONEAPI_DEVICE_SELECTOR``).

A filter is a list of terms separated by ``,`` or ``;``. A term is ``backend``,
``backend:devices`` or ``!term`` (exclude). ``backend`` is ``native_cpu``, ``opencl``,
``cuda`` or ``*``; ``devices`` is ``*``, a type (``cpu``, ``gpu``, ``acc``/``fpga``) or
an index into that backend's devices. A bare type or index after a term reuses that
term's backend, so ``opencl:cpu,gpu`` means ``opencl:cpu,opencl:gpu``.

>>> from pysycl.backends.base import DeviceDescription
>>> matches(parse("opencl:gpu,native_cpu"), "native_cpu", "cpu", 0)
True
>>> matches(parse("cuda:1"), "cuda", "gpu", 0)
False
"""
from __future__ import annotations

from ..backends import registry
from ..backends.base import DeviceDescription
from ..errors import errc, exception
from .. import config

_TYPES = {"cpu": "cpu", "gpu": "gpu", "acc": "accelerator", "fpga": "accelerator",
          "accelerator": "accelerator"}

Term = tuple[bool, str, str]  # (exclude, backend or "*", device spec)


def parse(text: str) -> list[Term]:
    """Terms of a filter string; a malformed one is ``errc.invalid`` naming the term."""
    terms: list[Term] = []
    last_backend = None
    for raw in text.replace(";", ",").split(","):
        item = raw.strip()
        if not item:
            continue
        exclude = item.startswith("!")
        item = item.lstrip("!").strip().lower()
        if ":" in item:
            backend, spec = (s.strip() for s in item.split(":", 1))
        elif item in registry.BACKENDS or item == "*":
            backend, spec = item, "*"
        elif last_backend is not None:
            backend, spec = last_backend, item
        else:
            raise exception(errc.invalid, f"PYSYCL_DEVICE_SELECTOR: {raw.strip()!r} names no "
                            f"backend (use one of {', '.join(registry.BACKENDS)} or *)")
        if backend not in registry.BACKENDS and backend != "*":
            raise exception(errc.invalid, f"PYSYCL_DEVICE_SELECTOR: unknown backend "
                            f"{backend!r} in {raw.strip()!r}")
        if spec != "*" and spec not in _TYPES and not spec.isdigit():
            raise exception(errc.invalid, f"PYSYCL_DEVICE_SELECTOR: unknown device {spec!r} "
                            f"in {raw.strip()!r} (use *, cpu, gpu, acc or an index)")
        last_backend = backend
        terms.append((exclude, backend, spec))
    return terms


def _term_matches(term: Term, backend: str, dtype: str, index: int) -> bool:
    _, tb, spec = term
    if tb != "*" and tb != backend:
        return False
    if spec == "*":
        return True
    if spec.isdigit():
        return int(spec) == index
    return _TYPES[spec] == dtype


def matches(terms: list[Term], backend: str, dtype: str, index: int) -> bool:
    """Whether device ``index`` of ``backend`` passes: some including term matches (or
    there are only exclusions) and no excluding term does."""
    includes = [t for t in terms if not t[0]]
    if includes and not any(_term_matches(t, backend, dtype, index) for t in includes):
        return False
    return not any(_term_matches(t, backend, dtype, index) for t in terms if t[0])


_parsed: tuple[str | None, list[Term]] = (None, [])


def _terms() -> list[Term] | None:
    """The parsed filter, or None when ``PYSYCL_DEVICE_SELECTOR`` is not set."""
    global _parsed
    text = config.device_selector()
    if text is None:
        return None
    if _parsed[0] != text:
        _parsed = (text, parse(text))
    return _parsed[1]


def visible_backends() -> list[str]:
    """Backends the filter may let a device of through, in platform order; none is
    loaded to answer (a backend no term asks for is never even loaded)."""
    terms = _terms()
    if terms is None or not any(not t[0] for t in terms):
        return list(registry.BACKENDS)
    return [name for name in registry.BACKENDS
            if any(t[1] in (name, "*") for t in terms if not t[0])]


def visible_devices_of(name: str) -> list[DeviceDescription]:
    """The devices of backend ``name`` that the filter lets through (loads that backend
    only)."""
    terms = _terms()
    if terms is None:
        return registry.devices_of(name)
    if name not in visible_backends():
        return []
    return [desc for index, desc in enumerate(registry.devices_of(name))
            if matches(terms, name, desc.device_type, index)]


def visible_devices() -> list[DeviceDescription]:
    """The devices of all backends that the filter lets through, in platform order."""
    return [desc for name in visible_backends() for desc in visible_devices_of(name)]
