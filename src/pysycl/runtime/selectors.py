"""Device selectors (SYCL 2020 4.6.1.1): callables ``device -> int``, negative = never.

The default prefers a GPU, then the built-in native CPU, then other CPUs: native_cpu is
"the default where no GPU is present" because it needs no driver and
has the cheapest launches. Ties go to the first device in platform order.

The built-in selectors score a device by its backend and type alone, so each also
answers ``upper_bound(backend, device_type)``: the score any such device would get.
``select_device`` uses it to discover only the backends that could beat the best device
found so far (the default selector on a machine whose only OpenCL driver is a CPU
runtime never loads OpenCL: its CPUs score below the native CPU). The choice is the one
scoring every device would make. A user's selector has no bound, and every backend is
discovered for it.

>>> import pysycl as sycl
>>> sycl.device(sycl.aspect_selector(sycl.aspect.fp64)).has(sycl.aspect.fp64)
True
"""
from __future__ import annotations

from types import SimpleNamespace

from ..properties.aspects import to_aspect


class _Kind:
    """Any device of one backend and type, for selectors that read nothing else."""

    __slots__ = ("_desc",)

    def __init__(self, backend: str, device_type: str):
        self._desc = SimpleNamespace(backend=backend, device_type=device_type)


def _scores_by_kind(selector):
    """Give a selector that reads only the backend and the device type its
    ``upper_bound(backend, device_type)``."""
    selector.upper_bound = lambda backend, device_type: selector(_Kind(backend, device_type))
    return selector


@_scores_by_kind
def default_selector_v(dev) -> int:
    """``sycl::default_selector_v``: a GPU (CUDA first), then the native CPU, then other
    CPUs and accelerators; negative scores are never chosen.

    >>> import pysycl as sycl
    >>> default_selector_v(sycl.device(sycl.cpu_selector_v)) > 0
    True
    """
    d = dev._desc
    if d.device_type == "gpu":
        return 1000 + (10 if d.backend == "cuda" else 0)
    if d.device_type == "cpu":
        return 500 if d.backend == "native_cpu" else 300
    if d.device_type == "accelerator":
        return 100
    return 0


@_scores_by_kind
def cpu_selector_v(dev) -> int:
    """``sycl::cpu_selector_v``: CPUs only, the native CPU before OpenCL CPUs.

    >>> import pysycl as sycl
    >>> sycl.device(cpu_selector_v).device_type.name
    'cpu'
    """
    d = dev._desc
    if d.device_type != "cpu":
        return -1
    return 1000 if d.backend == "native_cpu" else 900


@_scores_by_kind
def gpu_selector_v(dev) -> int:
    """``sycl::gpu_selector_v``: GPUs only, ranked as :func:`default_selector_v` ranks them.

    >>> import pysycl as sycl
    >>> gpu_selector_v(sycl.device(sycl.cpu_selector_v))
    -1
    """
    return default_selector_v(dev) if dev._desc.device_type == "gpu" else -1


@_scores_by_kind
def accelerator_selector_v(dev) -> int:
    """``sycl::accelerator_selector_v``: accelerators only.

    >>> import pysycl as sycl
    >>> accelerator_selector_v(sycl.device(sycl.cpu_selector_v))
    -1
    """
    return 1000 if dev._desc.device_type == "accelerator" else -1


def aspect_selector(*aspects, deny_list=()):
    """A selector for devices with every aspect in ``aspects`` and none in ``deny_list``;
    among those, the default selector's choice.

    >>> aspect_selector("gpu")  # doctest: +ELLIPSIS
    <function aspect_selector.<locals>.select at ...>
    """
    if aspects and isinstance(aspects[0], (list, tuple)):
        # C++'s aspect_selector(aspect_list, deny_list = {}): two lists, not aspects.
        if len(aspects) > 2 or (len(aspects) == 2 and deny_list):
            raise TypeError("aspect_selector takes (aspect_list, deny_list) or aspects")
        if len(aspects) == 2:
            deny_list = aspects[1]
        aspects = tuple(aspects[0])
    need = [to_aspect(a) for a in aspects]
    deny = [to_aspect(a) for a in deny_list]

    def select(dev) -> int:
        if all(dev.has(a) for a in need) and not any(dev.has(a) for a in deny):
            return max(default_selector_v(dev), 0)
        return -1

    select.aspects = tuple(need)
    # Aspects are only known once a device is discovered: bounded by the default's score.
    select.upper_bound = lambda backend, device_type: max(
        default_selector_v.upper_bound(backend, device_type), 0)
    return select


# SYCL 1.2.1-style names some programs still use.
default_selector = default_selector_v
cpu_selector = cpu_selector_v
gpu_selector = gpu_selector_v
accelerator_selector = accelerator_selector_v
