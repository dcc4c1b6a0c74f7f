"""A stand-in for ``import pysycl as sycl`` built from the layers these tests cover (the
public facade is assembled elsewhere); names are the API.md spellings."""
from types import SimpleNamespace

from pysycl import host_objects, types as T
from pysycl import frontend as F
from pysycl.properties import properties, restrict, work_group_size


class _acc:
    def __class_getitem__(cls, params):
        return T.accessor_annotation(params)


class _id:
    def __class_getitem__(cls, dims):
        return T.index_annotation("id", dims)


sycl = SimpleNamespace(
    kernel=F.kernel, device=F.device, external=F.external,
    accessor=_acc, local_accessor=T.local_accessor_type, global_ptr=T.global_ptr,
    annotated_ptr=T.annotated_ptr, id=_id, item=T.item, nd_item=T.nd_item,
    kernel_handler=T.kernel_handler, spec_constant=T.spec_constant,
    read_only=T.read_only, write_only=T.write_only, read_write=T.read_write,
    vec=T.vec, struct=T.struct, memory_order=T.memory_order, memory_scope=T.memory_scope,
    specialization_id=host_objects.specialization_id, device_global=host_objects.device_global,
    static_range=F.static_range, private_array=F.private_array, atomic_ref=F.atomic_ref,
    group_barrier=F.group_barrier, reduce_over_group=F.reduce_over_group,
    plus=F.plus, minimum=F.minimum, maximum=F.maximum, math=F.math,
    properties=properties, restrict=restrict, work_group_size=work_group_size,
)


def locate(fn, needle: str, nth: int = 0) -> tuple[int, int]:
    """(line, col) of the ``nth`` occurrence of ``needle`` in ``fn``'s source: the
    position an error about that text must point at."""
    import inspect
    fn = getattr(fn, "py_function", fn)
    lines, start = inspect.getsourcelines(fn)
    seen = 0
    for i, line in enumerate(lines):
        col = line.find(needle)
        while col >= 0:
            if seen == nth:
                return start + i, col
            seen += 1
            col = line.find(needle, col + 1)
    raise AssertionError(f"{needle!r} not in {fn.__qualname__}")


def ir_text(module) -> str:
    from pysycl.ir.printer import print_module
    from pysycl.ir.verifier import verify_module
    verify_module(module)
    return print_module(module, locs=False)


def body_text(kfn, name=None) -> str:
    """The printed body of one function of a kernel's image, without locations."""
    from pysycl.ir.printer import print_function
    from pysycl.ir.verifier import verify_module
    m = kfn.ir_module()
    verify_module(m)
    return print_function(m.function(name or kfn.name), locs=False)
