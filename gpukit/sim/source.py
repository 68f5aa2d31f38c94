"""A kernel's own source: its syntax tree with the file's line numbers, and its source sites.

A site is a place in the learner's code that the simulator may report: an array access, a call,
a loop header. Sites are numbered per kernel (the compiled code passes the number; the host keeps
the table), so nothing is kept process-wide.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import UnsupportedKernelError
from . import exec_sources


@dataclass(frozen=True)
class Site:
    """A place in kernel source: its file, line, text and function; `label` names the array
    an access goes through (the variable, as the learner wrote it)."""

    lineno: int
    text: str
    filename: str
    function: str
    kind: str = "expr"  # "read", "write", "atomic", "call", "loop", "sync", "expr"
    label: str | None = None
    raises: tuple | None = None  # a raise statement's (exception class, constant arguments)


@dataclass
class Sites:
    """The sites of one kernel (and the device functions compiled with it)."""

    items: list[Site] = field(default_factory=list)

    def add(self, site: Site) -> int:
        self.items.append(site)
        return len(self.items) - 1

    def __getitem__(self, index: int) -> Site:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class FunctionSource:
    tree: ast.FunctionDef
    text: str  # the file's text up to and including the function (for source segments)
    filename: str
    firstlineno: int

    def segment(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.text, node) or ast.unparse(node)
        return " ".join(text.split())


def read_function(func: Callable) -> FunctionSource:
    """The definition of `func` with its own line numbers (decorators dropped)."""
    name = getattr(func, "__name__", repr(func))
    try:
        lines, firstlineno = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        found = exec_sources.function_lines(func)
        if found is None:
            raise UnsupportedKernelError(
                f"cannot read the source of {name!r} ({exc}); the simulator needs kernels "
                "defined with def in a file or a notebook cell, or built with exec() after "
                "gpukit was imported", kernel=name) from None
        lines, firstlineno = found
    if name == "<lambda>":
        found = _read_lambda(func)
        if found is not None:
            return found
    source = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = None
    fn = tree.body[0] if tree is not None and tree.body else None
    if not isinstance(fn, ast.FunctionDef):
        what = "a lambda" if name == "<lambda>" else "not defined with a plain def statement"
        raise UnsupportedKernelError(
            f"kernel {name!r} is {what} whose source the simulator cannot single out; write "
            "kernels and device functions with def", kernel=name)
    ast.increment_lineno(fn, firstlineno - 1)
    fn.decorator_list = []
    padded = "\n" * (firstlineno - 1) + source  # positions of `fn` refer to the file's lines
    return FunctionSource(fn, padded, func.__code__.co_filename, firstlineno)


def _read_lambda(func: Callable) -> FunctionSource | None:
    """A lambda as the function `def <lambda>(args): return body`, found in its file's syntax
    tree by its line, its parameters and (when a line holds several) its body's position; None
    when the file does not parse or the lambda cannot be singled out."""
    code = func.__code__
    filename = code.co_filename
    text = "".join(linecache.getlines(filename, getattr(func, "__globals__", None)))
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    params = list(code.co_varnames[:code.co_argcount])
    found = [node for node in ast.walk(module)
             if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno
             and [a.arg for a in node.args.args] == params]
    if len(found) > 1:
        starts = {(p[0], p[2]) for p in code.co_positions() if p[0] is not None}
        found = [node for node in found
                 if (node.body.lineno, node.body.col_offset) in starts]
    if len(found) != 1:
        return None
    node = found[0]
    body = ast.Return(value=node.body)
    ast.copy_location(body, node.body)
    fn = ast.FunctionDef(name="<lambda>", args=node.args, body=[body], decorator_list=[],
                         returns=None, type_comment=None, type_params=[])
    ast.copy_location(fn, node)
    return FunctionSource(fn, text, filename, code.co_firstlineno)
