"""One device per process of a distributed job (MPI ranks, Dask workers).

``device_for_rank`` gives each node-local rank its own GPU where the node has them, so
ranks never share a GPU by accident. On a CPU-only node each rank gets its own cores:
those the launcher bound the rank to (``mpiexec --bind-to core``, Slurm's
``--cpu-bind``), or, when the launcher bound nothing, a sub-device of an equal share of
the node's cores, so ranks do not oversubscribe the node. The node-local rank comes
from an mpi4py communicator when one is given
(``comm.Split_type(COMM_TYPE_SHARED)``), else from the launcher's environment (Open MPI,
MPICH, PMIx, Slurm); no MPI library is imported here.

>>> import pysycl as sycl
>>> sycl.device_for_rank(local_rank=(0, 1)).is_cpu() or sycl.device_for_rank(local_rank=(0, 1)).is_gpu()
True
"""
from __future__ import annotations

import os
import sys

from .. import config
from ..errors import errc, exception
from .device import device
from .info import device_type, partition_property


def node_local_rank(comm=None) -> tuple[int, int]:
    """(rank among the processes of this node, their number).

    ``comm``: an mpi4py communicator (its ranks on this node are counted with a
    shared-memory split); without one, the launcher's environment; (0, 1) when the
    process was not started by a launcher.
    """
    if comm is not None:
        node = comm.Split_type(_shared_split_type(comm))
        try:
            return node.Get_rank(), node.Get_size()
        finally:
            node.Free()
    return config.launcher_local_rank() or (0, 1)


def _shared_split_type(comm) -> int:
    # A communicator exists, so its MPI module is loaded: no import of MPI here.
    mpi = sys.modules.get(type(comm).__module__)
    split = getattr(mpi, "COMM_TYPE_SHARED", None)
    if split is None:
        raise exception(errc.invalid, f"{type(comm).__name__} is not an mpi4py communicator")
    return split


def device_for_rank(comm=None, *, prefer=device_type.gpu, local_rank=None) -> device:
    """The device of this rank: GPU ``local_rank % GPUs`` when the node has GPUs (and
    ``prefer`` is ``gpu``), else the CPU device: its threads follow the process's CPU
    affinity where the launcher bound the rank, else this rank's sub-device of
    ``cores // ranks`` cores.

    ``local_rank``: ``(rank, count)`` to use instead of asking ``comm`` or the launcher.
    """
    rank, count = local_rank if local_rank is not None else node_local_rank(comm)
    if not 0 <= rank < count:
        raise exception(errc.invalid, f"local rank {rank} is not in [0, {count})")
    if prefer == device_type.gpu:
        gpus = device.get_devices(device_type.gpu)
        if gpus:
            return gpus[rank % len(gpus)]
    return _cpu_share(rank, count)


def _cpu_share(rank: int, count: int) -> device:
    cpus = [d for d in device.get_devices(device_type.cpu) if d.backend.name == "native_cpu"]
    if not cpus:
        cpus = device.get_devices(device_type.cpu)
    if not cpus:
        raise exception(errc.runtime, "this node has neither a GPU nor a CPU device")
    cpu = cpus[0]
    cores = cpu.description.extra.get("cores", ())
    unbound = len(cores) >= (os.cpu_count() or 0)
    if count == 1 or not unbound or len(cores) < count or \
            partition_property.partition_equally not in cpu.partition_properties:
        return cpu
    return cpu.create_sub_devices(partition_property.partition_equally,
                                  len(cores) // count)[rank]
