"""``frontend.source`` reads a function's definition without ``inspect``'s tokenizer: the
AST it parses is the one ``inspect.getsourcelines`` gives, positions included, and
anything it cannot cut safely goes back to ``inspect``."""
from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import textwrap

import pytest

from pysycl.frontend import source as S

MODULE = '''
import functools


def deco(f):
    return f


def deco_args(**kw):
    return lambda f: f


@deco
def plain(x):
    return x
# a comment at column 0 after the body


@deco_args(p=1,
           q=2)
def multiline_signature(x,
y):
    """doc
a docstring line at column 0
    """
    return (x +
            y)
    # a trailing comment in the body


def one_liner(x): return x


def outer():
    @deco
    def nested(x):
        if x:
            return 1
        else:
            pass
        # comment
    return nested


class Holder:
    @staticmethod
    def method(x):
        s = """
x"""
        return s


def global_only(x):
    global Q


def bracket_at_column_0(x):
    return [i for i in range(x)
]


def wrapped_target(x):
    return x


@functools.wraps(wrapped_target)
def wrapper(x):
    return wrapped_target(x)


NESTED = outer()
METHOD = Holder.method
'''

CASES = ["plain", "multiline_signature", "one_liner", "NESTED", "METHOD", "global_only",
         "bracket_at_column_0", "wrapper"]


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "reader_cases.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("reader_cases", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["reader_cases"] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules["reader_cases"]


def _dump(text):
    try:
        return ast.dump(ast.parse(textwrap.dedent(text)), include_attributes=True)
    except SyntaxError as e:
        return f"SyntaxError: {e.msg}"


@pytest.mark.parametrize("name", CASES)
def test_same_ast_as_inspect_or_falls_back(mod, name):
    fn = getattr(mod, name)
    lines, start = inspect.getsourcelines(fn)
    found = S._source_lines(fn)
    if found is not None:
        text, fast_start = found
        if _dump(text) == _dump("".join(lines)):
            assert fast_start == start
        else:   # only text that does not parse to one def may differ: _parse falls back
            tree = None
            try:
                tree = ast.parse(textwrap.dedent(text))
            except SyntaxError:
                pass
            assert tree is None or not (len(tree.body) == 1
                                        and isinstance(tree.body[0], ast.FunctionDef))


@pytest.mark.parametrize("name", ["plain", "multiline_signature", "one_liner", "NESTED",
                                  "global_only", "bracket_at_column_0"])
def test_parse_function_positions(mod, name):
    fn = getattr(mod, name)
    lines, start = inspect.getsourcelines(fn)
    expected = ast.parse(textwrap.dedent("".join(lines))).body[0]
    got = S._parse(fn).node
    assert got.name == expected.name
    assert got.lineno == expected.lineno + start - 1
    assert got.end_lineno == expected.end_lineno + start - 1
    indent = len(lines[0]) - len(lines[0].lstrip())
    assert got.col_offset == expected.col_offset + indent


def test_the_common_case_needs_no_tokenizer(mod, monkeypatch):
    def refuse(fn):
        raise AssertionError("inspect.getsourcelines called")
    monkeypatch.setattr(S.inspect, "getsourcelines", refuse)
    for name in ("plain", "multiline_signature", "one_liner", "NESTED", "global_only"):
        assert S._parse(getattr(mod, name)).node.name == getattr(mod, name).__name__
