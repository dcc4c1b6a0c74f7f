"""Measuring the configs of an autotuned kernel (``runtime/autotune.py``), and the
choice kept in the kernel cache.

Measuring runs on a queue of its own (in order, same device and context), after what
the launch would wait for (its events, the user's queue's commands so far); accessors
are re-made for each measuring command group, so buffer dependencies order it with
every other command. Each config runs ``warmup`` times, then ``reps`` timed launches
(submit to completion, host clock); its time is their median. The arguments the kernel
may write are saved first (:class:`saved_arguments`) and restored before each config
but the first and at the end: the launch that follows sees the data as it was.

A choice is stored as a JSON entry of ``cache.tuning_cache()`` (``*.tune`` files beside
the kernel binaries: private folders, an HMAC under the user's secret, so an entry
another user wrote or changed is ignored), keyed by the kernel's source fingerprint,
the configs' canonical text, the key, the device and pysycl's version; an entry that
does not name one of the configs as they are now is ignored with a warning.

>>> _median([3.0, 1.0, 2.0])
2.0
"""
from __future__ import annotations

import hashlib
import inspect
import json
import logging
import statistics
import time
import warnings

import numpy as np

from .. import config
from ..bundle import toolchain, warm_index
from ..bundle.cache import CacheKey, tuning_cache
from ..bundle.kernel_id import get_kernel_id
from ..bundle.linker import default_linked_kernel
from ..detail.callers import user_stacklevel
from ..errors import errc, exception
from ..types import access_mode
from .buffer import accessor
from .queue import queue as queue_cls
from .ranges import SINGLE_TASK
from .usm import usm_array

log = logging.getLogger("pysycl.autotune")

STORE_FORMAT = 1


# Measuring ---------------------------------------------------------------------------------
def measure(tuned, queue, space, args, cgh, deps, properties) -> list:
    """Seconds (median) of each of ``tuned.configs`` launched as ``space`` with ``args``
    (``None`` for one that failed, with a warning naming it); ``sycl.exception`` when
    every config failed. ``cgh``: the command group of a handler launch (its other
    specialization-constant values apply)."""
    _wait_for_inputs(queue, deps)
    mq = queue_cls(queue.get_device(), queue.get_context(), in_order=True)
    group_spec = dict(cgh._spec) if cgh is not None and cgh._spec else {}
    bundle = (cgh._bundle, cgh._image_selector) if cgh is not None and cgh._bundle else None
    saved = saved_arguments(mq, tuned, args)
    seconds, failures = [], []
    try:
        for n, cfg in enumerate(tuned.configs):
            if n:
                saved.restore()
            try:
                seconds.append(_time_config(tuned, mq, cfg, space, args, group_spec,
                                            bundle, properties))
            except Exception as e:  # noqa: BLE001 - a config that cannot run is skipped
                seconds.append(None)
                failures.append((cfg, e))
                warnings.warn(f"autotune of kernel {tuned.name}: config {cfg.index} "
                              f"{cfg.label} skipped: {_first_line(e)}", RuntimeWarning,
                              stacklevel=user_stacklevel())
    finally:
        saved.restore()
    tuned.stats["tunings"] += 1
    if not any(s is not None for s in seconds):
        raise _all_failed(tuned, failures)
    return seconds


def _time_config(tuned, mq, cfg, space, args, group_spec, bundle, properties) -> float:
    """The median time of ``tuned.reps`` launches of ``cfg`` after ``tuned.warmup``
    (with the command group's other constants, or its kernel bundle)."""
    kernel = tuned.kernel
    launch_space = cfg.space(space)

    def cgf(h):
        if bundle is not None:
            h.use_kernel_bundle(*bundle)
        for sid, raw in group_spec.items():
            h.set_specialization_constant(sid, raw)
        for sid, raw in cfg.spec.items():
            h.set_specialization_constant(sid, raw)
        own = [_accessor_for(a, h) if isinstance(a, accessor) else a for a in args]
        if launch_space is SINGLE_TASK:
            h.single_task(kernel, *own, properties=properties)
        else:
            h.parallel_for(launch_space, kernel, *own, properties=properties)

    for _ in range(tuned.warmup):   # the first one builds
        tuned.stats["measured_launches"] += 1
        mq.submit(cgf).wait()
    times = []
    for _ in range(tuned.reps):
        tuned.stats["measured_launches"] += 1
        start = time.perf_counter()
        mq.submit(cgf).wait()
        times.append(time.perf_counter() - start)
    return _median(times)


def _median(times: list) -> float:
    return float(statistics.median(times))


def _wait_for_inputs(queue, deps) -> None:
    """Wait (without raising their errors: those are the launch's to report) for the
    commands whose results the launch may read: its events and what was submitted to
    its queue so far."""
    pending = list(deps or ())
    if queue._in_order:
        if queue._last is not None:
            pending.append(queue._last)
    else:
        pending.extend(queue._outstanding)
    for ev in pending:
        if not ev._done:
            ev._wait_done()


def _all_failed(tuned, failures) -> exception:
    codes = {e.code() for _, e in failures if isinstance(e, exception)}
    code = codes.pop() if len(codes) == 1 and len(failures) == len(
        [e for _, e in failures if isinstance(e, exception)]) else errc.runtime
    why = "; ".join(f"config {cfg.index} {cfg.label}: {_first_line(e)}" for cfg, e in failures)
    err = exception(code, f"autotune of kernel {tuned.name}: no config could run: {why}")
    err.__cause__ = failures[0][1]
    return err


def _first_line(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if not isinstance(e, exception) else text


def _accessor_for(acc: accessor, cgh, mode=None) -> accessor:
    """``acc`` (made for the user's command group, or a placeholder) again for ``cgh``,
    optionally with another access mode."""
    own = accessor.__new__(accessor)
    for name in accessor.__slots__:
        setattr(own, name, getattr(acc, name))
    if mode is not None:
        own.mode, own.no_init, own._discard = mode, False, False
    own._cgh = cgh
    cgh._add_accessor(own)
    return own


# Saving what measuring would overwrite ------------------------------------------------------
class saved_arguments:
    """Copies of the arguments a kernel may write (``global_ptr`` arguments, writable
    accessors without ``no_init``), or of those named by ``restore=``; ``restore()``
    puts them back."""

    def __init__(self, mq, tuned, args):
        self._undo = []
        for p, value in zip(tuned._params, args):
            if tuned.restore is not None and p.name not in tuned.restore:
                continue
            if p.kind == "global_ptr":
                self._undo.append(_save_pointer(mq, value, p.name, tuned.name))
            elif p.kind == "accessor" and isinstance(value, accessor) and value.write \
                    and not value.no_init:
                self._undo.append(_save_accessor(mq, value))

    def restore(self) -> None:
        for undo in self._undo:
            undo()


def _save_pointer(mq, value, name: str, kernel: str):
    """Save the memory of a pointer argument; returns what restores it."""
    if isinstance(value, np.ndarray):   # host memory the launch copies in and out
        kept = value.copy()
        return lambda: np.copyto(value, kept)
    nbytes = value.nbytes if isinstance(value, usm_array) else getattr(value, "nbytes", None)
    try:
        kept = np.empty(int(nbytes), np.uint8)
        mq.memcpy(kept, value, kept.nbytes).wait()
    except Exception as e:  # noqa: BLE001 - said in the user's terms
        raise exception(errc.invalid, f"autotune of kernel {kernel}: cannot save argument "
                        f"{name!r} ({type(value).__name__}) to restore it after measuring "
                        f"({_first_line(e)}); leave it out of restore=[...] if the kernel "
                        "does not write it") from None
    return lambda: mq.memcpy(value, kept, kept.nbytes).wait()


def _save_accessor(mq, acc: accessor):
    """Save what a writable accessor sees (through a copy command of its own, which
    waits for the buffer's earlier writers); returns what restores it."""
    kept = np.empty(tuple(acc._range), acc.dtype)
    mq.submit(lambda h: h.copy(_accessor_for(acc, h, access_mode.read_only), kept)).wait()

    def undo():
        mq.submit(lambda h: h.copy(kept, _accessor_for(acc, h, access_mode.write))).wait()
    return undo


# The stored choice ---------------------------------------------------------------------------
def stored_key(tuned, dev, key: tuple) -> CacheKey:
    """The cache key of ``tuned``'s choice for ``key`` on ``dev``."""
    return CacheKey({
        "kind": f"pysycl-autotune/{STORE_FORMAT}",
        "kernel": tuned.name,
        "source": _source_digest(tuned.kernel),
        "configs": "\n".join(cfg.text for cfg in tuned.configs),
        "key": json.dumps(key, default=repr),
        "device": _device_identity(dev),
        "pysycl": toolchain.pysycl_version(),
        "compiler": toolchain.compiler_digest(),
        "debug": ",".join(sorted(config.debug_checks())),
    })


def read_choice(key: CacheKey, configs) -> int | None:
    """The index of the stored choice, or None (none, or one that does not name one of
    ``configs`` as they are now: ignored with a warning)."""
    raw = tuning_cache().get(key)
    if raw is None:
        return None
    try:
        entry = json.loads(raw.decode("utf-8"))
        index, text = entry["config"], entry["text"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        log.warning("ignoring an unreadable autotune entry %s", key.hexdigest[:16])
        return None
    if not isinstance(index, int) or not 0 <= index < len(configs) or \
            configs[index].text != text:
        log.warning("ignoring autotune entry %s: it names no config of the list",
                    key.hexdigest[:16])
        return None
    return index


def write_choice(key: CacheKey, cfg, seconds: list) -> None:
    entry = {"format": STORE_FORMAT, "config": cfg.index, "text": cfg.text,
             "label": cfg.label, "seconds": seconds}
    tuning_cache().put(key, json.dumps(entry, sort_keys=True).encode("utf-8"))


def _device_identity(dev) -> str:
    """What makes timings on ``dev`` comparable: its backend, name, vendor, driver and
    compute units, and for a CPU the host CPU's name and features."""
    parts = [str(dev.backend), dev.name, str(dev.vendor), str(dev.driver_version),
             str(dev.max_compute_units)]
    if dev.is_cpu():
        parts.append(toolchain.host_cpu())
    return "|".join(parts)


def _source_digest(kernel) -> str:
    """The kernel's source fingerprint (``warm_index``), else the digest of its source
    text (a kernel whose fingerprint cannot be taken, e.g. one calling externals)."""
    fp = warm_index.fingerprint(kernel)
    if fp:
        return fp
    try:
        text = inspect.getsource(kernel.py_function)
    except (OSError, TypeError):
        text = repr(kernel.py_function.__code__.co_code)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def spec_constants_read(kernel) -> list[str]:
    """Symbolic IDs of the specialization constants the linked kernel reads."""
    return list(default_linked_kernel(get_kernel_id(kernel)).spec_ids.offsets)


__all__ = ["measure", "saved_arguments", "stored_key", "read_choice", "write_choice",
           "spec_constants_read"]
