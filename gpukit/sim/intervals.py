"""Reads of shared arrays that nothing can race with, found in a region-run kernel's code.

A block's threads race on shared memory only within one barrier interval: a barrier orders
every access before it with every access after it. In a kernel run region by region
(gpukit.sim.regions), a region with a barrier right before it (or the block's start) and right
after it (or the block's end) is a whole barrier interval by itself. When no thread of such a
region writes a shared array, the region's reads of that array can race with nothing: they keep
no race records (`access.unraced` makes their descriptor once per block). Their bounds are
checked as always; their initialisation too, unless the block has written every element of the
array, and then the block runs a copy of the region whose reads check bounds only
(`access.ld_bare`, chosen by `access.bounds_only`). That is the classic tiled loop (load a tile,
barrier, compute from it, barrier), where most of the simulator's time went to race records no
write could ever meet.

An array qualifies only where the analysis sees every access to it: it is declared with a
static shape (never reassigned, never passed to a function, never aliased or viewed), and every
use of its name is the array of an element load, store or atomic with a full index.
"""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Iterator

from . import nodes as N
from .transform import CTX, P

_LOAD, _STORE = P + "ld", P + "st"
_SIZE_ATTRS = frozenset({"shape", "size", "ndim", "dtype", "itemsize"})


def mark_unraced(block: list[ast.stmt], body: list[ast.stmt]) -> None:
    """Give each read that needs no race records, in the region loops of `block` (the
    block-level code regions.split builds from `body`), a descriptor `unraced(...)` that the
    block makes once, before the region's loop over its threads."""
    arrays = _tracked_arrays(body)
    if arrays:
        _visit(block, True, arrays, itertools.count())


def _tracked_arrays(body: list[ast.stmt]) -> dict[str, int]:
    """Static shared arrays (name -> ndim) whose every access the analysis sees."""
    module = ast.Module(body=body, type_ignores=[])
    ndims: dict[str, int] = {}
    excluded: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Name) \
                and node.value.func.id == P + "shared_array":
            target, shape = node.targets[0], node.value.args[3]
            if len(node.targets) != 1 or not isinstance(target, ast.Name) \
                    or not isinstance(shape, ast.Constant):
                continue
            ndim = len(shape.value) if isinstance(shape.value, tuple) else 1
            if ndims.setdefault(target.id, ndim) != ndim:
                excluded.add(target.id)
    slices = _slice_names(module)
    allowed: set[int] = set()  # the ids of the Name nodes in a seen position
    for node in ast.walk(module):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in ndims \
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
                and node.value.func.id == P + "shared_array":
            allowed.add(id(node.targets[0]))
        elif isinstance(node, ast.Call) and _array_arg(node) in ndims:
            name = node.args[1].id
            if not _is_access(node) or (node.func.id == _LOAD
                                         and not _full(node.args[2], ndims[name], slices)):
                excluded.add(name)
            else:
                allowed.add(id(node.args[1]))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.attr in _SIZE_ATTRS:
            allowed.add(id(node.value))
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and node.id in ndims and id(node) not in allowed:
            excluded.add(node.id)  # reassigned, aliased, passed on, viewed
    return {name: ndim for name, ndim in ndims.items() if name not in excluded}


def _array_arg(call: ast.Call) -> str | None:
    if len(call.args) > 1 and isinstance(call.args[1], ast.Name):
        return call.args[1].id
    return None


def _is_access(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and (
        call.func.id in (_LOAD, _STORE) or call.func.id.startswith(P + "atomic_"))


def _full(index: ast.expr, ndim: int, slices: set[str]) -> bool:
    """Whether `index` surely names one element of an `ndim`-d array (not a view). `slices`:
    the names that may hold a slice."""
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    return len(items) == ndim and not any(
        isinstance(i, (ast.Slice, ast.Tuple)) or (isinstance(i, ast.Name) and i.id in slices)
        for i in items)


def _slice_names(module: ast.Module) -> set[str]:
    """Names assigned anything made from a `slice(...)` call or from such a name."""
    assigns = [n for n in ast.walk(module) if isinstance(n, ast.Assign)]
    found: set[str] = set()
    while True:
        more = {t.id for a in assigns for t in a.targets if isinstance(t, ast.Name)
                for n in ast.walk(a.value)
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and n.func.id == "slice") or (isinstance(n, ast.Name) and n.id in found)}
        if more <= found:
            return found
        found |= more


def _visit(stmts: list[ast.stmt], top: bool, arrays: dict[str, int], ids: Iterator[int]
           ) -> None:
    for stmt in list(stmts):
        if _is_region(stmt):
            k = stmts.index(stmt)
            if _fenced(stmts, k, top):
                stmts[k:k + 1] = _unrace(stmt, arrays, ids)
            continue
        for attr in ("body", "orelse"):
            inner = getattr(stmt, attr, None)
            if isinstance(inner, list):
                _visit(inner, False, arrays, ids)


def _is_region(stmt: ast.stmt) -> bool:
    """The threads' loop of a region (regions._Builder.region)."""
    return isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) \
        and stmt.target.id == P + "k"


def _is_barrier(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
        and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == P + "barrier"


def _between(stmt: ast.stmt) -> bool:
    """Block-level code that runs no thread: an assignment (the region's `alive` count, a
    value the block computes once), the kernel's last site counts (`runtime.count`) or the
    region's `if alive == 0: return`."""
    if isinstance(stmt, ast.Assign):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == P + "count":
        return True
    return isinstance(stmt, ast.If) and len(stmt.body) == 1 \
        and isinstance(stmt.body[0], ast.Return) and not stmt.orelse \
        and isinstance(stmt.test, ast.Compare) and isinstance(stmt.test.left, ast.Name) \
        and stmt.test.left.id == P + "alive"


def _fenced(stmts: list[ast.stmt], k: int, top: bool) -> bool:
    """Whether the region at `stmts[k]` is a barrier interval by itself: a barrier (or the
    block's start) before it and after it (or the block's end), with no other thread code
    between."""
    for step in (-1, 1):
        j = k + step
        while 0 <= j < len(stmts) and _between(stmts[j]):
            j += step
        if not 0 <= j < len(stmts):
            if not top:
                return False
        elif not _is_barrier(stmts[j]):
            return False
    return True


def _unrace(region: ast.For, arrays: dict[str, int], ids: Iterator[int]) -> list[ast.stmt]:
    """The region with its reads that need no race records given a descriptor `unraced(...)`
    that the block makes once, before its threads' loop. Where every such descriptor is bare
    (nothing but bounds to check: every element written, no trace), the block runs a copy of
    the region whose reads check nothing else (`ld_bare`), with no call that the compiler must
    assume changes memory; else the region reads through `ld_unraced`."""
    calls = [n for n in ast.walk(region) if isinstance(n, ast.Call)]
    written = {_array_arg(c) for c in calls if _is_access(c) and c.func.id != _LOAD}
    made: dict[str, str] = {}  # descriptor expression -> the name of its unraced copy
    out: list[ast.stmt] = []
    for call in calls:
        name = _array_arg(call)
        if name in arrays and name not in written and call.func.id == _LOAD \
                and isinstance(call.args[4], ast.Subscript):  # a static slot's descriptor
            call.func.id = P + "ld_unraced"
            key = ast.unparse(call.args[4])
            if key not in made:
                made[key] = f"{P}u{next(ids)}"
                out.append(N.assign(made[key], N.call(P + "unraced", N.name(CTX), call.args[4])))
            call.args[4] = N.name(made[key])
    if not made:
        return [region]
    bare = copy.deepcopy(region)
    for call in ast.walk(bare):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                and call.func.id == P + "ld_unraced":
            call.func.id = P + "ld_bare"
    tests = [N.call(P + "bounds_only", N.name(n)) for n in made.values()]
    test = ast.BoolOp(op=ast.And(), values=tests) if len(tests) > 1 else tests[0]
    return [*out, ast.If(test=test, body=[bare], orelse=[region])]
