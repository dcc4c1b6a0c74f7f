"""SYCL 2020 exceptions (spec 4.13.2) shared by every layer."""
from __future__ import annotations

import enum
import linecache


class errc(enum.Enum):
    """The SYCL 2020 error codes (table "Values of the SYCL errc enum")."""

    success = 0
    runtime = 1
    kernel = 2
    accessor = 3
    nd_range = 4
    event = 5
    kernel_argument = 6
    build = 7
    invalid = 8
    memory_allocation = 9
    platform = 10
    profiling = 11
    feature_not_supported = 12
    kernel_not_supported = 13
    backend_mismatch = 14


class error_category:
    """SYCL's error category (``sycl::sycl_category()``): the category of every ``errc``."""

    __slots__ = ()

    def name(self) -> str:
        return "sycl"

    def __repr__(self) -> str:
        return "sycl_category()"


_SYCL_CATEGORY = error_category()


def sycl_category() -> error_category:
    """``sycl::sycl_category()``: the one category object of SYCL's error codes."""
    return _SYCL_CATEGORY


def make_error_code(code: errc) -> errc:
    """``sycl::make_error_code(e)``: the error code of an ``errc`` (here the ``errc``
    itself, which ``exception.code()`` also returns)."""
    if not isinstance(code, errc):
        raise exception(errc.invalid, f"{code!r} is not a sycl.errc")
    return code


class exception(Exception):
    """Every runtime error of pysycl; ``e.code()`` gives the ``errc``.

    >>> raise exception(errc.invalid, "empty device list")
    """

    _context = None   # the sycl.context of the error, when one was given

    def __new__(cls, code: errc = errc.runtime, *args, **kwargs):
        # An allocation failure is also a MemoryError, whichever layer reports it.
        if cls is exception and (code is errc.memory_allocation or not isinstance(
                code, (errc, str)) and args and args[0] is errc.memory_allocation):
            cls = memory_error
        return Exception.__new__(cls, code, *args, **kwargs)

    def __init__(self, code: errc = errc.runtime, message: str = "", *rest):
        context = None
        if not isinstance(code, (errc, str)):   # exception(context, code, message)
            context, code, message = code, message, (rest[0] if rest else "")
            if not isinstance(code, errc):
                code = errc.runtime
        if isinstance(code, str) and not message:  # exception("msg") form
            code, message = errc.runtime, code
        super().__init__(message)
        self._code = code
        if context is not None:
            self._context = context

    def code(self) -> errc:
        return self._code

    def what(self) -> str:
        return str(self)

    def category(self) -> error_category:
        """SYCL 2020 ``exception::category()``: ``sycl_category()``."""
        return _SYCL_CATEGORY

    def has_context(self) -> bool:
        """SYCL 2020 ``exception::has_context()``: whether a context was given."""
        return self._context is not None

    def get_context(self):
        """The context the error was made with; ``errc.invalid`` when it has none (SYCL
        2020 4.13.2)."""
        if self._context is None:
            raise exception(errc.invalid, "this sycl.exception has no context")
        return self._context


class overflow_error(exception, OverflowError):
    """A size, index or scalar too large for where it must go (a device limit, a kernel
    parameter's type); also an ``OverflowError``.

    >>> isinstance(overflow_error(errc.nd_range, "too big"), OverflowError)
    True
    """


class memory_error(exception, MemoryError):
    """An allocation the device cannot satisfy; also a ``MemoryError``. Every
    ``exception(errc.memory_allocation, ...)`` is made one.

    >>> type(exception(errc.memory_allocation, "out of memory")).__name__
    'memory_error'
    """


class type_error(exception, TypeError):
    """A value of the wrong kind (an object dtype, a float where an integer must be);
    also a ``TypeError``."""


class value_error(exception, ValueError):
    """A value of the right kind that the target cannot take (a default a struct field
    cannot hold); also a ``ValueError``."""


class compile_error(exception, SyntaxError):
    """An error in kernel source; also a ``SyntaxError`` (Python's traceback shows the
    file, the line and a caret under the culprit).

    ``filename``, ``lineno`` (1-based) and ``col`` (0-based) point into the
    user's file (``offset`` is ``col + 1``, as a ``SyntaxError`` counts); ``str()``
    shows the line with a caret under the culprit and the hint.

    >>> e = compile_error("float64 is not allowed here", "k.py", 3, 4)
    >>> isinstance(e, SyntaxError), e.code(), (e.lineno, e.offset)
    (True, <errc.build: 7>, (3, 5))
    """

    def __init__(self, message: str, filename: str = "<unknown>", lineno: int = 0,
                 col: int = 0, hint: str | None = None):
        self.col = col
        self.hint = hint
        line = linecache.getline(filename, lineno) if lineno else ""
        super().__init__(errc.build, self._render(message, filename, lineno, col, hint, line))
        # SyntaxError's fields, which Python's traceback display reads.
        self.msg = message
        self.filename = filename
        self.lineno = lineno
        self.offset = col + 1
        self.text = line or None
        if hint and hasattr(self, "add_note"):       # Python 3.11+: shown after the message
            self.add_note(f"hint: {hint}")

    def __str__(self) -> str:
        return self.args[0] if self.args else self.msg

    @staticmethod
    def _render(message, filename, lineno, col, hint, line) -> str:
        parts = [f'File "{filename}", line {lineno}, column {col + 1}: {message}']
        if line:
            stripped = line.rstrip("\n")
            indent = len(stripped) - len(stripped.lstrip())
            parts.append("    " + stripped.lstrip())
            parts.append("    " + " " * max(col - indent, 0) + "^")
        if hint:
            parts.append(f"hint: {hint}")
        return "\n".join(parts)

    # Compiler-internal frames never show: the traceback is cut where the
    # error enters user code (see hide_compiler_frames).
    def __reduce__(self):
        return (compile_error, (self.msg, self.filename, self.lineno, self.col, self.hint))


def hide_compiler_frames(fn):
    """Make ``fn`` (a public entry point of the compiler, e.g. ``kernel.ir_module``) raise a
    ``compile_error`` with the compiler's frames cut: the error is raised again at the API
    boundary with a fresh traceback, so the one frame left under the caller's is this
    module's re-raise and no compiler layer (frontend, ir, passes, codegen) appears.

    >>> @hide_compiler_frames
    ... def ir_module(): raise compile_error("bad", "k.py", 3, 0)
    >>> try: ir_module()
    ... except compile_error as e: [f.filename for f in __import__("traceback").extract_tb(e.__traceback__)][-1].endswith("errors.py")
    True
    """
    import functools

    @functools.wraps(fn)
    def api_boundary(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except compile_error as err:
            err.__context__ = None
            raise err.with_traceback(None) from None
    return api_boundary
