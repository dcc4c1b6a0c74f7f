"""``@sycl.kernel``, ``@sycl.device``, ``@sycl.external``.

Decoration only records the function: source is parsed on first use (``ir_module()``,
``signature()``), so importing a module full of kernels costs nothing and errors surface
where the kernel is first used, never at import.

>>> @kernel
... def noop():
...     pass
>>> noop.name.endswith("noop")
True
"""
from __future__ import annotations

import ast
import functools
import pickle
import sys
import textwrap

from ..detail import references
from ..detail.memo import Memo
from ..errors import compile_error, errc, exception, hide_compiler_frames, type_error
from ..ir.core import Module
from ..properties import properties_for
from . import registry
from .source import ParsedFunction, parse_function, register_source


class _FrontendFunction:
    """What the three decorators share: the Python function, its names, lazy AST."""

    _pysycl_function_kind = ""

    def __init__(self, fn, name: str | None = None, properties=None):
        if not callable(fn) or not hasattr(fn, "__code__"):
            raise TypeError(f"@sycl.{self._pysycl_function_kind} needs a Python function, not {fn!r}")
        functools.update_wrapper(self, fn)
        self.py_function = fn
        self.module_name: str = fn.__module__
        self.qualname: str = fn.__qualname__
        self.name: str = name or self._default_name()
        # Kernel properties only (SYCL 2020 4.5.4): device_image_scope on a kernel, or an
        # argument property, would otherwise be dropped without a word.
        self.properties = properties_for(properties, "kernel",
                                         f"@sycl.{self._pysycl_function_kind} {self.name}")
        self._cache = Memo()   # its IR, signature and the like, made once each

    def _default_name(self) -> str:
        return f"{self.module_name}.{self.qualname}"

    def parsed(self) -> ParsedFunction:
        return parse_function(self.py_function)

    def _cached(self, key: str, make):
        return self._cache.get_or_make(key, make)

    def __repr__(self):
        return f"<sycl.{self._pysycl_function_kind} {self.name}>"

    def __reduce__(self):
        """Pickled by reference, as Python pickles functions: the module and qualified
        name, looked up again where it is unpickled (an MPI rank, a worker process), so
        the receiver compiles (or finds in its cache) the same source."""
        problem = _reference_problem(self)
        if problem:
            raise pickle.PicklingError(
                f"@sycl.{self._pysycl_function_kind} {self.module_name}.{self.qualname} "
                f"cannot be pickled: it is sent by reference (module and name) and {problem}; "
                "define it at the top level of a module the receiving process can import")
        return (_by_reference, (self.module_name, self.qualname, self._pysycl_function_kind))


def _reference_problem(fn: _FrontendFunction) -> str | None:
    """Why ``fn`` cannot be found again by module and qualified name, or None."""
    if "<locals>" in fn.qualname:
        return "it is defined inside a function"
    try:
        found = references.lookup(fn.module_name, fn.qualname)
    except (ImportError, AttributeError):
        return f"{fn.qualname} is not a name in module {fn.module_name}"
    return None if found is fn else f"{fn.module_name}.{fn.qualname} is another object"


def _by_reference(module_name: str, qualname: str, kind: str):
    """Unpickle a kernel or device function: look it up in this process."""
    try:
        found = references.lookup(module_name, qualname)
    except (ImportError, AttributeError) as e:
        raise exception(errc.invalid, f"@sycl.{kind} {module_name}.{qualname} is not "
                        f"importable in this process ({type(e).__name__}: {e}); the receiving "
                        "process must be able to import the module that defines it") from None
    if not isinstance(found, _FrontendFunction):
        raise exception(errc.invalid, f"{module_name}.{qualname} is {type(found).__name__}, "
                        f"not a @sycl.{kind} function, in this process")
    return found


class KernelFunction(_FrontendFunction):
    """A ``@sycl.kernel``: its ID name, properties, signature and input image."""

    _pysycl_function_kind = "kernel"

    @hide_compiler_frames
    def ir_module(self) -> Module:
        """The input image (cached; treat it as immutable).

        >>> # noop.ir_module().kernels[0].kind == "kernel"
        """
        from .compiler import build_kernel_image
        return self._cached("ir", lambda: build_kernel_image(self))

    @hide_compiler_frames
    def signature(self):
        """Per-parameter info for argument packing (no body compilation)."""
        from .signature import kernel_signature
        return self._cached("signature", lambda: kernel_signature(self.parsed()))

    @property
    def index_kind(self) -> str | None:
        return self.signature().index_kind

    @property
    def unbound_reducers(self) -> tuple[str, ...]:
        """Reducer parameters whose operator the kernel leaves to the launch's
        ``sycl.reduction`` (it only calls ``combine``, the annotation names none)."""
        return self._cached("unbound_reducers", lambda: tuple(
            p.name for p in self.signature().params if p.kind == "reducer" and p.op is None))

    def with_reducer_operators(self, ops: dict[str, str]) -> "KernelFunction":
        """This kernel compiled with ``ops`` (reducer name -> operator IR name) for its
        unbound reducers, as C++ instantiates the kernel for the reduction's operator:
        a kernel of its own (name ``k[r:minimum]``), made once per operator set."""
        key = tuple(sorted(ops.items()))
        variants = self._cached("reducer_variants", Memo)
        return variants.get_or_make(key, lambda: _ReducerVariant(self, key))

    @property
    def dims(self) -> int | None:
        return self.signature().dims

    def __call__(self, *args, **kwargs):
        raise exception(errc.invalid, f"kernel {self.name} cannot be called from Python: kernels "
                        "are compiled, never run by the interpreter; launch it with "
                        "q.parallel_for(range, kernel, *args) or q.single_task(kernel, *args)")


class _ReducerVariant(KernelFunction):
    """A kernel whose unbound reducers have their operators (KernelFunction.
    with_reducer_operators); pickled as its kernel and the operators."""

    def __init__(self, base: KernelFunction, ops: tuple):
        super().__init__(base.py_function, f"{base.name}[{','.join(f'{n}:{o}' for n, o in ops)}]",
                         base.properties)
        self.base = base
        self.reducer_ops = dict(ops)

    @hide_compiler_frames
    def signature(self):
        from .signature import kernel_signature
        return self._cached("signature", lambda: kernel_signature(self.parsed(),
                                                                  self.reducer_ops))

    def __reduce__(self):
        return (_reducer_variant, (self.base, tuple(sorted(self.reducer_ops.items()))))


def _reducer_variant(base: KernelFunction, ops: tuple) -> KernelFunction:
    return base.with_reducer_operators(dict(ops))


class DeviceFunction(_FrontendFunction):
    """A ``@sycl.device`` helper. Calling it from Python runs the Python function (so
    helpers can be tested on the host); kernels compile it."""

    _pysycl_function_kind = "device"

    def __call__(self, *args, **kwargs):
        return self.py_function(*args, **kwargs)


class ExternalFunction(_FrontendFunction):
    """A ``@sycl.external`` (``SYCL_EXTERNAL``): exported by the image that defines it,
    imported (a ``declare``) by every image that calls it. The symbol is the bare
    ``__name__`` unless ``name=`` is given, so separately compiled modules agree on it."""

    _pysycl_function_kind = "external"

    def _default_name(self) -> str:
        return self.py_function.__name__

    @property
    def is_declaration(self) -> bool:
        """True when the body is only ``...`` (optionally after a docstring)."""
        return self._cached("is_declaration", lambda: _is_ellipsis_body(self.parsed().node))

    @hide_compiler_frames
    def ir_module(self) -> Module:
        """The library image of a definition."""
        if self.is_declaration:
            raise exception(errc.invalid, f"@sycl.external {self.name} is a declaration (its body "
                            "is '...'): the image that defines it provides the code")
        from .compiler import build_library_image
        return self._cached("ir", lambda: build_library_image(self))

    def __call__(self, *args, **kwargs):
        if self.is_declaration:
            raise exception(errc.invalid, f"@sycl.external {self.name} is only declared here; "
                            "it can only be called from kernel code")
        return self.py_function(*args, **kwargs)


def _is_ellipsis_body(fdef: ast.FunctionDef) -> bool:
    body = list(fdef.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return len(body) == 1 and isinstance(body[0], ast.Expr) and \
        isinstance(body[0].value, ast.Constant) and body[0].value.value is Ellipsis


def _decorator(cls, register, fn, source=None, namespace=None, **options):
    def wrap(f):
        obj = cls(f, **options)
        if register is not None:
            register(obj)
        return obj
    if source is not None:
        if fn is not None:
            raise exception(errc.invalid, "give either a function or source=, not both")
        return wrap(_function_from_source(source, namespace, _user_frame()))
    return wrap(fn) if fn is not None else wrap


def _user_frame():
    """The innermost frame outside pysycl: the code that asked for ``source=``."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__") or "").partition(".")[0] \
            == "pysycl":
        frame = frame.f_back
    return frame


def _function_from_source(text, namespace, caller):
    """The one function that ``text`` defines, run in ``namespace`` (default: a copy of
    the calling module's globals), with its text registered so it compiles like a file."""
    if not isinstance(text, str):
        raise type_error(errc.invalid, f"source= takes the function's text, not "
                         f"{type(text).__name__}")
    text = textwrap.dedent(text)
    filename = register_source(text)
    try:
        code = compile(text, filename, "exec")
    except SyntaxError as e:
        raise compile_error(f"the source does not parse: {e.msg}", filename,
                            e.lineno or 1, (e.offset or 1) - 1) from None
    env = (dict(caller.f_globals) if caller is not None else {}) if namespace is None \
        else namespace
    before = dict(env)
    exec(code, env)
    made = [v for k, v in env.items() if callable(v) and getattr(v, "__code__", None) is not None
            and v.__code__.co_filename == filename and before.get(k) is not v]
    if len(made) != 1:
        raise exception(errc.invalid, f"source= must define exactly one function (def), "
                        f"found {len(made)}")
    return made[0]


def kernel(fn=None, *, properties=None, name: str | None = None, source: str | None = None,
           namespace: dict | None = None):
    """``@sycl.kernel`` or ``@sycl.kernel(properties=..., name=...)``; or
    ``sycl.kernel(source=text)``: the kernel that ``text`` defines (its names resolve in
    ``namespace``, by default a copy of the caller's globals), for kernels generated at
    run time or read from elsewhere.

    >>> @kernel(name="demo.k")
    ... def k():
    ...     pass
    >>> k.name
    'demo.k'
    """
    return _decorator(KernelFunction, registry.register_kernel, fn, source, namespace,
                      properties=properties, name=name)


def device(fn=None, *, name: str | None = None, source: str | None = None,
           namespace: dict | None = None):
    """``@sycl.device``: a helper callable from kernels, internal to its image
    (``source=`` as for :func:`kernel`)."""
    return _decorator(DeviceFunction, None, fn, source, namespace, name=name)


def external(fn=None, *, name: str | None = None, source: str | None = None,
             namespace: dict | None = None):
    """``@sycl.external`` or ``@sycl.external(name="symbol")``; a body of only ``...``
    declares a function defined in another image (resolved at link time). ``source=``
    as for :func:`kernel`."""
    return _decorator(ExternalFunction, registry.register_external, fn, source, namespace,
                      name=name)
