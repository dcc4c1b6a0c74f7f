"""``sycl.autotune``: a kernel that picks the fastest of several specialization-constant
configurations (and work-group sizes) by measuring them, as ``triton.autotune`` does.

``tuned = sycl.autotune(kernel, configs=[{unroll_id: 2, "work_group": (64,)}, ...],
key=["n"])`` is launched wherever ``kernel`` is (``q.parallel_for(rng, tuned, *args)``,
``cgh.parallel_for``, ``single_task``). The first launch for a *key* (the device, the
launch range, the shapes/dtypes/values of the ``key`` arguments, the command group's
other specialization-constant values and the launch properties) measures each config:

* a config is a build of the same kernel with its specialization-constant values
  (SYCL 2020 4.9.5: no new source compile; a literal or native build of the values,
  cached like any other); ``"work_group"`` makes the launch an ``nd_range`` of the given
  range and that local size;
* each runs ``warmup`` times (the first builds), then ``reps`` timed launches on a
  queue of its own on the same device and context; the median decides;
* arguments the kernel may write (pointer arguments, writable accessors) are saved
  first and restored before each config and at the end (``restore=``), so a kernel
  that updates its data in place (``a[i] += 1``) leaves it as one launch would;
* a config that fails to build or launch (a work-group too large for the device...) is
  skipped with a ``RuntimeWarning`` naming it; if every config fails,
  ``sycl.exception`` lists why.

The choice is kept in memory and in the kernel cache (``cache.tuning_cache``: private,
each entry authenticated), keyed by the kernel's source fingerprint, the configs, the
key and the device, so later launches and later processes launch the chosen config at
once. ``PYSYCL_AUTOTUNE`` (``config.autotune``): ``0`` launches the first config without
measuring; ``retune`` measures again and replaces stored choices.

Measurement lives in ``runtime/tuning.py``; this module holds the configs, the key and
the launch glue that ``queue`` and ``handler`` call (``_sycl_tuned_launch`` /
``_sycl_tuned_command``: they never import this module).
"""
from __future__ import annotations

import logging
from typing import Mapping, Sequence

import numpy as np

from .. import config
from ..bundle.kernel_bundle import kernel_object
from ..bundle.kernel_id import get_kernel_id
from ..detail.memo import Memo
from ..errors import errc, exception, type_error
from ..host_objects import specialization_id
from ..spec_values import spec_uid, spec_value_bytes
from .buffer import accessor
from .event import as_events
from .launch_plan import LaunchPlan
from .ranges import SINGLE_TASK, launch_range, nd_range
from .ranges import range as range_cls
from .usm import usm_array
from . import tuning

log = logging.getLogger("pysycl.autotune")

WORK_GROUP = "work_group"
# Ranges given as these are the same range whenever they are equal: their launch
# ranges are remembered (an nd_range can be changed in place, a callable computes).
_IMMUTABLE_SPACES = frozenset({int, tuple, range_cls})
_IMPLICIT = ("index", "kernel_handler")


class tuning_config:
    """One validated config: its values as the kernel will see them (``spec``: spec_id ->
    value bytes, as a command group holds them), its work-group size, a label for
    messages and a canonical text for the cache key."""

    __slots__ = ("index", "given", "spec", "work_group", "label", "text", "_spaces")

    def __init__(self, index: int, given: Mapping, kernel_name: str, dims: int | None):
        self.index = index
        self.given = dict(given)
        self.spec: dict = {}
        self.work_group = None
        where = f"autotune config {index} of kernel {kernel_name}"
        labels, texts = [], []
        for k, v in given.items():
            if isinstance(k, str):
                if k != WORK_GROUP:
                    raise exception(errc.invalid, f"{where}: unknown key {k!r} (keys are "
                                    "sycl.specialization_id objects and 'work_group')")
                self.work_group = _work_group(v, dims, where)
                continue
            if not isinstance(k, specialization_id):
                raise type_error(errc.invalid, f"{where}: key {k!r} is not a "
                                 "sycl.specialization_id (or 'work_group')")
            self.spec[k] = _spec_bytes(k, v, where)
            labels.append(f"{spec_uid(k).rsplit('.', 1)[-1]}={_short(v)}")
            texts.append(f"{spec_uid(k)}={self.spec[k].hex()}")
        if self.work_group is not None:
            labels.append(f"work_group={self.work_group}")
            texts.append(f"work_group={self.work_group}")
        self.label = "{" + ", ".join(labels) + "}"
        self.text = ";".join(sorted(texts))
        self._spaces: dict = {}   # what the launch was given -> the range launched

    def space(self, given):
        """The index space to launch for ``given`` (what ``parallel_for`` was given, or a
        callable taking the config dict, as Triton's grid): with a work-group size, an
        ``nd_range`` of its global range (and offset) and that local size."""
        remember = given.__class__ in _IMMUTABLE_SPACES
        if remember:
            space = self._spaces.get(given)
            if space is not None:
                return space
        space = given
        if callable(space) and not isinstance(space, (range_cls, nd_range)):
            # (Called each launch: what it computes may depend on more than the config.)
            space = space(dict(self.given))
        if self.work_group is not None:
            if space is SINGLE_TASK:
                raise exception(errc.invalid, f"autotune config {self.label} sets a "
                                "work_group, but single_task launches one work-item")
            global_size, _, offset = launch_range(space)
            space = nd_range(range_cls(*global_size), range_cls(*self.work_group), offset)
        if remember and len(self._spaces) < 64:
            self._spaces[given] = space
        return space

    def __repr__(self):
        return f"<autotune config {self.index} {self.label}>"


def _short(value) -> str:
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    return text if len(text) <= 40 else text[:37] + "..."


def _spec_bytes(spec_id, value, where: str) -> bytes:
    """The value's bytes in the constant's dtype; a value NumPy would change (None, a
    fraction for an integer constant) or cannot convert is ``errc.invalid``."""
    uid = spec_uid(spec_id)
    dt = spec_id.dtype
    if value is None:
        raise type_error(errc.invalid, f"{where}: {uid} has no value (None)")
    if dt.kind in "iub" and isinstance(value, (float, np.floating)) and \
            not float(value).is_integer():
        raise type_error(errc.invalid, f"{where}: {uid} is {dt}, not {value!r}")
    try:
        return spec_value_bytes(spec_id, value)
    except exception as e:
        raise type_error(errc.invalid, f"{where}: value {value!r} for {uid} ({dt}): "
                         f"{e.what() if hasattr(e, 'what') else e}") from None


def _work_group(value, dims: int | None, where: str) -> tuple[int, ...]:
    sizes = (value,) if isinstance(value, (int, np.integer)) else value
    try:
        sizes = tuple(sizes)
    except TypeError:
        raise type_error(errc.invalid, f"{where}: work_group {value!r} is not an int or a "
                         "tuple of ints") from None
    if not sizes or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                            and s > 0 for s in sizes):
        raise type_error(errc.invalid, f"{where}: work_group {value!r} must be positive ints")
    if dims is None:
        raise exception(errc.invalid, f"{where}: work_group given for a kernel without an "
                        "index (single_task)")
    if len(sizes) != dims:
        raise exception(errc.invalid, f"{where}: work_group {value!r} has {len(sizes)} "
                        f"dimension(s), the kernel {dims}")
    return tuple(int(s) for s in sizes)


class autotuned:
    """What :func:`autotune` returns: launch it as the kernel it tunes. ``best_config``,
    ``cache``, ``timings`` and ``stats`` say what it chose and what that cost."""

    def __init__(self, kernel, configs: Sequence[Mapping], key=(), *, warmup: int = 1,
                 reps: int = 5, restore=None):
        self.kernel = kernel
        self.name = name = _kernel_name(kernel)
        sig = kernel.signature()
        self._params = tuple(p for p in sig.params if p.kind not in _IMPLICIT)
        names = [p.name for p in self._params]
        if any(p.kind == "reducer" for p in self._params):
            raise exception(errc.feature_not_supported, f"autotune of kernel {name}: kernels "
                            "with sycl.reducer parameters cannot be tuned (measuring would "
                            "combine into the reduction's result each time)")
        if isinstance(configs, Mapping) or not isinstance(configs, (list, tuple)):
            raise type_error(errc.invalid, f"autotune of kernel {name}: configs is a list of "
                             f"dicts, not {type(configs).__name__}")
        if not configs:
            raise exception(errc.invalid, f"autotune of kernel {name}: no configs")
        for i, given in enumerate(configs):
            if not isinstance(given, Mapping):
                raise type_error(errc.invalid, f"autotune config {i} of kernel {name}: "
                                 f"expected a dict, got {type(given).__name__}")
        self.configs = [tuning_config(i, c, name, sig.dims) for i, c in enumerate(configs)]
        self._names = names
        self._ranges: dict = {}   # an immutable range -> its part of the key
        self.key = _positions(key, names, name, "key")
        self.restore = None if restore is None else set(
            names[i] for i in _positions(restore, names, name, "restore"))
        for p in self._params:
            if self.restore and p.name in self.restore and p.kind not in ("global_ptr",
                                                                          "accessor"):
                raise exception(errc.invalid, f"autotune of kernel {name}: restore names "
                                f"{p.name!r}, a {p.kind} argument: only memory (pointers, "
                                "accessors) is restored")
        if not isinstance(warmup, int) or warmup < 1 or not isinstance(reps, int) or reps < 1:
            raise exception(errc.invalid, f"autotune of kernel {name}: warmup and reps are "
                            f"positive ints (got {warmup!r}, {reps!r})")
        self.warmup, self.reps = warmup, reps
        self._choices = Memo()    # (device, key) -> tuning_config
        self._labels: dict = {}   # (device, key) -> (device name, key) for ``cache``
        # ("backend:device name", key) -> [(config dict, seconds or None)] as measured
        self.timings: dict = {}
        self.stats = {"tunings": 0, "measured_launches": 0, "stored_choices_used": 0}
        self._checked_spec_ids = False

    def __repr__(self):
        return f"<sycl.autotune of kernel {self.name}: {len(self.configs)} configs>"

    # What was chosen ---------------------------------------------------------------------
    def best_config(self, queue, range_or_nd_range, *args) -> dict:
        """The config (a copy of the dict given) that ``queue.parallel_for(range, self,
        *args)`` launches (range ``None``: ``queue.single_task(self, *args)``),
        measured now if it was not known."""
        space = SINGLE_TASK if range_or_nd_range is None else range_or_nd_range
        return dict(self._choose(queue, space, args, None, None, None).given)

    @property
    def cache(self) -> dict:
        """``{("backend:device name", key): config dict}`` of the choices this process
        knows (measured, stored or, with ``PYSYCL_AUTOTUNE=0``, the first)."""
        return {self._labels[k]: dict(cfg.given) for k, cfg in list(self._choices.entries.items())}

    # The launch glue (queue.parallel_for / single_task, handler.parallel_for / single_task)
    def _sycl_tuned_launch(self, queue, space, args, depends_on, properties):
        """``queue.parallel_for(space, self, *args)`` (``space`` ``SINGLE_TASK``: a
        single_task): the chosen config's launch, after choosing it if needed."""
        deps = None if depends_on is None else as_events(depends_on)
        cfg = self._choose(queue, space, args, None, deps, properties)
        if properties is None:
            # The config's plan, kept by the queue as a kernel's is (bound to its
            # stream: a group's plan with spec-constant values would not be).
            plan = queue._plans.get_or_make((self, cfg.index), lambda: LaunchPlan(
                queue, queue._launcher(self.kernel, None, None, cfg.spec or None, None)))
        else:
            plan = queue._plan(self.kernel, spec=cfg.spec or None, properties=properties)
        return plan.enqueue(cfg.space(space), args, deps)

    def _sycl_tuned_command(self, cgh, space, args, properties) -> None:
        """``cgh.parallel_for(space, self, *args)`` in a command group: the chosen
        config's values are set on the group and the kernel launched with its range."""
        if cgh._bundle is not None and any(cfg.spec for cfg in self.configs):
            raise exception(errc.invalid, f"autotuned kernel {self.name} sets specialization "
                            "constants, so it cannot run from a kernel bundle bound with "
                            "use_kernel_bundle")
        tuned_ids = {sid for cfg in self.configs for sid in cfg.spec}
        for sid in cgh._spec or ():
            if sid in tuned_ids:
                raise exception(errc.invalid, f"autotuned kernel {self.name} chooses "
                                f"{spec_uid(sid)}; do not set it in the command group")
        cfg = self._choose(cgh._queue, space, args, cgh, cgh._deps, properties)
        for sid, raw in cfg.spec.items():
            cgh.set_specialization_constant(sid, raw)
        launch_space = cfg.space(space)
        if launch_space is SINGLE_TASK:
            cgh.single_task(self.kernel, *args, properties=properties)
        else:
            cgh.parallel_for(launch_space, self.kernel, *args, properties=properties)

    # Choosing ----------------------------------------------------------------------------
    def _choose(self, queue, space, args, cgh, deps, properties) -> tuning_config:
        key = self._key(space, args, cgh, properties)
        dev = queue.get_device()
        memo_key = (dev, key)
        cfg = self._choices.entries.get(memo_key)
        if cfg is not None:
            return cfg
        return self._choices.get_or_make(memo_key, lambda: self._decide(
            queue, dev, key, space, args, cgh, deps, properties))

    def _decide(self, queue, dev, key, space, args, cgh, deps, properties) -> tuning_config:
        """The config for a key not chosen in this process: the first one when
        ``PYSYCL_AUTOTUNE=0``, else the stored choice, else measured (and stored)."""
        where = f"{getattr(dev.backend, 'name', dev.backend)}:{dev.name}"
        self._labels[(dev, key)] = (where, key)
        mode = config.autotune()
        if mode == "off" or len(self.configs) == 1:
            return self.configs[0]
        disk_key = tuning.stored_key(self, dev, key)
        if mode != "retune":
            index = tuning.read_choice(disk_key, self.configs)
            if index is not None:
                self.stats["stored_choices_used"] += 1
                log.info("autotune %s on %s: stored choice %s", self.name, where,
                         self.configs[index].label)
                return self.configs[index]
        self._check_spec_ids()
        seconds = tuning.measure(self, queue, space, args, cgh, deps, properties)
        self.timings[(where, key)] = [(dict(c.given), s) for c, s in zip(self.configs,
                                                                            seconds)]
        best = min((i for i, s in enumerate(seconds) if s is not None),
                   key=lambda i: seconds[i])
        log.info("autotune %s on %s: chose %s (%s)", self.name, where,
                 self.configs[best].label, ", ".join(
                     f"{c.label}: {'failed' if s is None else f'{s * 1e3:.3f} ms'}"
                     for c, s in zip(self.configs, seconds)))
        tuning.write_choice(disk_key, self.configs[best], seconds)
        return self.configs[best]

    def _check_spec_ids(self) -> None:
        """Every config's constants must be read by the kernel (or a function it calls):
        ``errc.invalid`` naming the one that is not (checked on the linked kernel, once,
        before the first measurement)."""
        if self._checked_spec_ids:
            return
        used = set(tuning.spec_constants_read(self.kernel))
        for cfg in self.configs:
            for sid in cfg.spec:
                if spec_uid(sid) not in used:
                    raise exception(errc.invalid, f"autotune config {cfg.index} of kernel "
                                    f"{self.name}: the kernel does not read specialization "
                                    f"constant {spec_uid(sid)}")
        self._checked_spec_ids = True

    def _key(self, space, args, cgh, properties) -> tuple:
        """What the choice depends on besides the device: the range (unless computed
        per config), the ``key`` arguments, the group's other constants, properties."""
        where = self._ranges.get(space) if space.__class__ in _IMMUTABLE_SPACES else None
        if where is None:
            if space is SINGLE_TASK:
                where = ("single_task",)
            elif callable(space) and not isinstance(space, (range_cls, nd_range)):
                where = ("range per config",)
            else:
                where = tuple(map(tuple, (p for p in launch_range(space) if p is not None)))
            if space.__class__ in _IMMUTABLE_SPACES and len(self._ranges) < 64:
                self._ranges[space] = where
        parts = [where]
        names = self._names
        for i in self.key:
            if i >= len(args):
                raise type_error(errc.kernel_argument, f"kernel {self.name} takes "
                                 f"{len(names)} argument(s) ({', '.join(names)}), "
                                 f"{len(args)} given")
            parts.append((names[i], *_key_part(args[i], names[i], self.name)))
        if cgh is not None and cgh._spec:
            parts.append(tuple(sorted((spec_uid(s), raw.hex()) for s, raw in cgh._spec.items())))
        if properties is not None:
            parts.append(("properties", repr(properties)))
        return tuple(parts)


def _key_part(value, name: str, kernel: str) -> tuple:
    """How a key argument is told apart: an array by shape and dtype, a scalar by type
    and value. (Per launch: the dtype object, not its slow ``str``.)"""
    if value.__class__ is usm_array:
        return ("array", value.shape, value.dtype)
    if isinstance(value, accessor):
        return ("accessor", tuple(value._range), value.dtype)
    if isinstance(value, (bool, int, float, complex, str, np.generic)):
        return ("value", type(value).__name__, repr(value))
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return ("array", tuple(int(s) for s in shape), dtype)
    raise type_error(errc.invalid, f"autotune of kernel {kernel}: key argument {name!r} is a "
                     f"{type(value).__name__}: key on arrays (shape, dtype) and scalars")


def _positions(names, params: list[str], kernel: str, what: str) -> tuple[int, ...]:
    """Argument positions (among the arguments the caller passes) of ``names`` (parameter
    names or positions); ``errc.invalid`` naming one the kernel does not have."""
    if isinstance(names, (str, int)):
        names = (names,)
    out = []
    for n in names:
        if isinstance(n, str) and n in params:
            out.append(params.index(n))
        elif isinstance(n, int) and not isinstance(n, bool) and 0 <= n < len(params):
            out.append(n)
        else:
            raise exception(errc.invalid, f"autotune of kernel {kernel}: {what} names "
                            f"{n!r}, which is not one of its arguments ({', '.join(params)})")
    return tuple(out)


def _kernel_name(kernel) -> str:
    """The name of a ``@sycl.kernel`` function; ``errc.invalid`` for anything else (a
    ``sycl.kernel`` object runs with its bundle's values: nothing to choose)."""
    kid = None
    if not isinstance(kernel, kernel_object) and callable(getattr(kernel, "signature", None)):
        try:
            kid = get_kernel_id(kernel)
        except exception:
            kid = None
    if kid is None or kid.kernel is not kernel:
        raise type_error(errc.invalid, f"sycl.autotune tunes a @sycl.kernel function, not "
                         f"{kernel!r} (a kernel of an executable bundle has its "
                         "specialization constants fixed)")
    return kernel.name


def autotune(kernel=None, *, configs, key=(), warmup: int = 1, reps: int = 5,
             restore=None):
    """A kernel-like object that launches ``kernel`` with the fastest of ``configs``,
    chosen by measuring them on the first launch of each key (Triton's ``autotune``
    for specialization constants and work-group sizes); also a decorator above
    ``@sycl.kernel``.

    ``configs``: dicts ``{spec_id: value, ..., "work_group": (local sizes)}``;
    ``key``: names (or positions) of the arguments whose shapes, dtypes or values the
    choice depends on; ``warmup``/``reps``: launches per config before / while timing;
    ``restore``: the arguments to save and restore around measuring (default: every
    argument the kernel may write; ``()`` for none).

    >>> tuned = sycl.autotune(fir, configs=[{unroll_id: 1}, {unroll_id: 4}],
    ...                       key=["x"])                                # doctest: +SKIP
    >>> q.parallel_for(n, tuned, x, y).wait()                          # doctest: +SKIP
    """
    if kernel is None:
        return lambda k: autotuned(k, configs, key, warmup=warmup, reps=reps,
                                   restore=restore)
    return autotuned(kernel, configs, key, warmup=warmup, reps=reps, restore=restore)


__all__ = ["autotune", "autotuned", "tuning_config"]
