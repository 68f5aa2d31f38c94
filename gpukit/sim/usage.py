"""How a kernel's code may use each of its array parameters: read it, write it, or both.

Read from the kernel's source before any launch, conservatively: element reads and writes
count, and so does anything that hands the array on (to a call, or to a name), since the callee
or the alias may read and write. An element handed on is a copy, not the array: `x = a[i]` and
`f(a[i])` read `a`. Whether `a[i]` is an element or a view depends on the argument, so the
usage keeps the number of indices of each subscript handed on, and `Usage.of` decides per
argument: a view (fewer indices than the array has axes) or a record (Numba passes records by
reference) may be written through. The indices must be integers to give an element: a slice
object in a variable gives a view with as many indices as axes, so an index counts only where
it is proven an integer (`integer_names`: built from literals, the thread's coordinates,
metadata, `len`, range loops and integer arithmetic, in every assignment of the variable).
An atomic (`cuda.atomic.add(a, i, v)`) writes its array and reads no element for the race
check's records: it is checked against plain reads and writes, and keeps a writer record.

What it decides: which arguments carry race records, and reader records too
(`gpukit.sim.launch`), whether a launch's blocks may run on several host threads (none may
write global memory another touches), and which arrays a launch may write for the check of
races between streams (`gpukit.backends._cpu_launch`).
"""

from __future__ import annotations

import ast
import types as pytypes
from dataclasses import dataclass
from typing import Any

from . import names
from .thread_indexed import Scope

# operators that give an integer from integers
_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift,
            ast.BitAnd, ast.BitOr, ast.BitXor)
_INT_METADATA = frozenset({"size", "ndim", "itemsize", "nbytes"})
_GRID_CALLS = ("grid", "gridsize")  # integers, or tuples of them


@dataclass(frozen=True)
class Usage:
    """How a kernel's code may use one parameter: `reads` and `writes` whatever the argument;
    `handed_on`, the number of indices of each subscript of it handed on with integer indices,
    which read it where they give an element and may write it where they give a view."""

    reads: bool
    writes: bool
    handed_on: frozenset[int] = frozenset()

    def of(self, shape: tuple | None = None, structured: bool = False) -> tuple[bool, bool]:
        """(may read, may write) for an array argument of this `shape` (None: an array in a
        tuple, which `t[0]` hands on whole) whose dtype is `structured` or not."""
        views = bool(self.handed_on) and (shape is None or structured
                                          or min(self.handed_on) < len(shape))
        return self.reads, self.writes or views


ANY = Usage(True, True)  # what a parameter not followed may do


def param_usage(func: pytypes.FunctionType, tree: ast.Module,
                params: tuple[str, ...]) -> dict[str, Usage]:
    """For each parameter of kernel `func` (source `tree`, its definition alone): its Usage."""
    scope = Scope(func, tree)
    ints = integer_names(scope, set(params))
    reads = dict.fromkeys(params, False)
    writes = dict.fromkeys(params, False)
    handed: dict[str, set[int]] = {p: set() for p in params}

    def hand_on(node: ast.expr) -> None:
        """`node` goes to a callee or a name: an element of a parameter is a copy."""
        root = _root(node)
        if root not in reads or _metadata(node):
            return
        count = _element_indices(scope, node, ints)
        reads[root] = True
        if count is None:
            writes[root] = True
        else:
            handed[root].add(count)

    for node in scope.nodes:
        if isinstance(node, ast.Subscript):
            root = _root(node)
            if root in reads and not _metadata(node):
                if isinstance(node.ctx, ast.Load):
                    reads[root] = True
                else:
                    writes[root] = True
        elif isinstance(node, ast.AugAssign) and _root(node.target) in reads:
            reads[_root(node.target)] = writes[_root(node.target)] = True
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "len":
                continue
            args = list(node.args) + [k.value for k in node.keywords]
            spec = names.intrinsic(scope.resolve(node.func))
            if spec is not None and spec.category == "atomic" and node.args \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in writes:
                writes[node.args[0].id] = True  # the array an atomic updates
                args = args[1:]
            for arg in args:
                hand_on(arg)
        elif isinstance(node, (ast.Assign, ast.For)):
            value = node.value if isinstance(node, ast.Assign) else node.iter
            # stored into elements or fields (`s[t] = a[i]`), a value is copied, never aliased
            copied = isinstance(node, ast.Assign) and all(
                isinstance(t, (ast.Subscript, ast.Attribute)) for t in node.targets)
            for sub in ast.walk(value):
                if isinstance(sub, ast.Name) and sub.id in reads:
                    reads[sub.id] = True
            if copied:
                continue
            for part in _aliased(value, reads):
                if isinstance(node, ast.For):  # iterating gives elements or views: either
                    root = _root(part)
                    reads[root] = writes[root] = True
                else:
                    hand_on(part)
    return {p: Usage(reads[p], writes[p], frozenset(handed[p])) for p in params}


def integer_names(scope: Scope, params: set[str]) -> set[str]:
    """The kernel's variables that can only hold integers: every assignment of each gives an
    integer (a literal, a thread coordinate, `len`, an array's shape, integer arithmetic on
    these and on such variables), or it is a `range` loop's variable, or unpacks
    `cuda.grid(n)`. Parameters are not among them (their types are the launch's)."""
    if not scope.followed:
        return set()
    sources: dict[str, list[ast.expr | None]] = {}  # per variable: what each assignment gives
    for node in scope.nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            sources.setdefault(node.id, []).append(_source(scope, node))
    ints = {name for name, given in sources.items()
            if name not in params and all(g is not None for g in given)}
    changed = True
    while changed:  # the largest set consistent with itself: `i = i + 1` keeps `i`
        changed = False
        for name in list(ints):
            if not all(_integer(scope, g, ints) for g in sources[name]):
                ints.discard(name)
                changed = True
    return ints


_INTEGER = ast.Constant(0)  # stands for an assignment known to give an integer


def _source(scope: Scope, name: ast.Name) -> ast.expr | None:
    """What an assignment to `name` gives: an expression, _INTEGER, or None (not followed)."""
    parent = scope.parents.get(name)
    if isinstance(parent, ast.Assign) and name in parent.targets:
        return parent.value
    if isinstance(parent, ast.AugAssign) and parent.target is name:
        if isinstance(parent.op, _INT_OPS):
            return ast.BinOp(ast.Name(name.id, ast.Load()), parent.op, parent.value)
        return None
    if isinstance(parent, ast.For) and parent.target is name:
        call = parent.iter
        if isinstance(call, ast.Call) and scope.resolve(call.func) is range:
            return _INTEGER
        return None
    if isinstance(parent, ast.Tuple):  # `col, row = cuda.grid(2)`
        assign = scope.parents.get(parent)
        if isinstance(assign, ast.Assign) and parent in assign.targets \
                and scope.grid_call(assign.value, _GRID_CALLS) == len(parent.elts):
            return _INTEGER
    return None


def _integer(scope: Scope, node: ast.expr, ints: set[str]) -> bool:
    """Whether `node` can only be an integer, its variables among `ints`."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id in ints
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _INT_OPS) and _integer(scope, node.left, ints) \
            and _integer(scope, node.right, ints)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)) \
            and _integer(scope, node.operand, ints)
    if isinstance(node, ast.IfExp):
        return _integer(scope, node.body, ints) and _integer(scope, node.orelse, ints)
    if isinstance(node, ast.Attribute):
        if node.attr in _INT_METADATA and _root(node) is not None:
            return True
        spec = names.intrinsic(scope.resolve(node.value))
        if spec is not None and spec.category == "coord":  # cuda.threadIdx.x and the like
            return node.attr in ("x", "y", "z")
        spec = names.intrinsic(scope.resolve(node))
        return spec is not None and spec.name in ("laneid", "warpsize")
    if isinstance(node, ast.Subscript):  # a.shape[k], a.strides[k]
        return isinstance(node.value, ast.Attribute) and node.value.attr in ("shape", "strides") \
            and _integer(scope, node.slice, ints)
    if isinstance(node, ast.Call) and not node.keywords:
        if scope.grid_call(node, _GRID_CALLS) == 1:
            return True
        func = scope.resolve(node.func)
        if func is len and len(node.args) == 1:
            return True
        if func is int and len(node.args) == 1:
            return True
        if func in (min, max, abs) and node.args:
            return all(_integer(scope, arg, ints) for arg in node.args)
    return False


def _element_indices(scope: Scope, node: ast.expr, ints: set[str]) -> int | None:
    """The number of indices of `p[...]` on a parameter's name, each an integer; None for
    anything else handed on (the array itself, a slice, an index not proven an integer)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
        return None
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return len(items) if all(_integer(scope, item, ints) for item in items) else None


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _metadata(node: ast.expr) -> bool:
    """Whether `node` (an attribute or subscript chain on a name) reads an array's metadata,
    such as `a.shape[1]` or `a.size`, rather than the array or a view of it (`a`, `a[i]`, `a.T`)."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        if isinstance(node, ast.Attribute) and node.attr in names.ARRAY_METADATA:
            return True
        node = node.value
    return False


def _aliased(value: ast.expr, params: dict[str, Any]) -> list[ast.expr]:
    """The parts of `value` that may hand a parameter on when assigned to a variable: the value
    itself or an element or part of a tuple, list or conditional expression that is the name, a
    subscript or an attribute of it, unless it reads metadata (`a.shape[1]`). Uses in
    arithmetic, comparisons and calls' results are values."""
    found: list[ast.expr] = []
    todo = [value]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Tuple, ast.List)):
            todo += node.elts
        elif isinstance(node, ast.IfExp):
            todo += [node.body, node.orelse]
        elif isinstance(node, (ast.Starred, ast.NamedExpr)):
            todo.append(node.value)
        elif isinstance(node, (ast.Name, ast.Subscript, ast.Attribute)) \
                and _root(node) in params and not _metadata(node):
            found.append(node)
    return found
