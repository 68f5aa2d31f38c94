"""Bounds checked once, before a counted loop, instead of at every trip.

An innermost `for v in range(...)` loop whose element reads and writes index with the loop
variable (shifted or not) and with sums and products of constants and names the loop does not
change (a tile's `for j in range(TILE): acc += sA[ty, j] * sB[j, tx]`, a naive matmul's
`for k in range(n): acc += A[row, k] * B[k, col]`, a filter's `for j in range(-R, R + 1)`) gets
a second copy, run when a test before the loop finds every such index in bounds on every trip.
There those accesses skip their bounds test (`access.ld_inb`, `access.st_inb`, and `ld_free` for
the bare reads of gpukit.sim.intervals); their other checks run as before. When any index could
fall outside, the loop as written runs and reports (or, with `wraparound` off, wraps) the first
bad index where it is used. The test reads only values that cannot fail and that every trip
sees alike; `access.extent` makes it fail for anything but an array with that axis.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from . import nodes as N
from .transform import P

# an access -> the same access with its indices known to be in bounds
_IN_BOUNDS = {P + "ld": P + "ld_inb", P + "ld_bare": P + "ld_free", P + "st": P + "st_inb"}


def hoisted(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """A copy of `stmts` in which every loop `_in_bounds_test` can bound has its copy."""
    module = ast.Module(body=copy.deepcopy(stmts), type_ignores=[])
    for parent in ast.walk(module):  # (a loop put under a new `if` is not visited again)
        for attr in ("body", "orelse"):
            stmts = getattr(parent, attr, None)
            if not isinstance(stmts, list):
                continue
            for k, stmt in enumerate(stmts):
                found = _in_bounds_test(stmt) if isinstance(stmt, ast.For) else None
                if found is not None:
                    test, bounded = found
                    fast = copy.deepcopy(stmt)
                    for n, call in enumerate(_accesses(fast)):  # (the same walk order)
                        if n in bounded:
                            call.func.id = _IN_BOUNDS[call.func.id]
                    stmts[k] = ast.If(test=test, body=[fast], orelse=[stmt])
    return module.body


def _in_bounds_test(loop: ast.For) -> tuple[ast.expr, set[int]] | None:
    """For an innermost counted loop: the test that the accesses it can bound are in bounds
    on every trip, and their positions among `_accesses(loop)`; None where there are none.
    An index may be `v`, `v + e`, `e + v` or `v - e` (v the loop's variable) or `e`, where `e`
    is arithmetic (+, -, *) on integer constants and names the loop leaves alone: read before
    the loop, it cannot fail and has the value every trip sees."""
    bounds = _range_bounds(loop)
    if bounds is None or loop.orelse or any(
            isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda))
            for stmt in loop.body for n in ast.walk(stmt)):
        return None
    var, lo, hi = bounds
    changed = {n.id for stmt in loop.body for n in ast.walk(stmt)
               if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} | {var}
    tests: dict[str, ast.expr] = {}  # by ast.dump: a test several accesses share, once
    bounded: set[int] = set()
    for n, call in enumerate(_accesses(loop)):
        found = _access_tests(call, var, lo, hi, changed)
        if found:
            tests.update((ast.dump(t), t) for t in found)
            bounded.add(n)
    if not tests:
        return None
    empty = _compare(copy.deepcopy(lo), ast.GtE(), copy.deepcopy(hi))  # no trip accesses
    every = ast.BoolOp(op=ast.And(), values=list(tests.values()))
    return ast.BoolOp(op=ast.Or(), values=[empty, every]), bounded


def _access_tests(call: ast.Call, var: str, lo: ast.expr, hi: ast.expr, changed: set[str]
                  ) -> list[ast.expr] | None:
    """The tests that one access's indices are in bounds on every trip, or None."""
    array, index = call.args[1], call.args[2]
    if not isinstance(array, ast.Name) or array.id in changed:
        return None
    tests: list[ast.expr] = []
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    for axis, item in enumerate(items):
        extent = N.call(P + "extent", N.name(array.id), N.const(axis))
        if _pure(item, changed):
            tests.append(ast.Compare(left=N.const(0), ops=[ast.LtE(), ast.Lt()],
                                     comparators=[copy.deepcopy(item), extent]))
            continue
        shift = _shift(item, var, changed)  # lo + shift <= v + shift < hi + shift
        if shift is None:
            return None
        tests += [_compare(_shifted(lo, *shift), ast.GtE(), N.const(0)),
                  _compare(_shifted(hi, *shift), ast.LtE(), extent)]
    return tests


def _pure(node: ast.expr, changed: set[str]) -> bool:
    """Integer constants, names not in `changed` and their `.shape[k]`, under +, - (binary and
    unary) and *: nothing that can fail."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id not in changed
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "shape" and isinstance(node.slice, ast.Constant):
        return type(node.slice.value) is int and _pure(node.value.value, changed) \
            and isinstance(node.value.value, ast.Name)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == P + "neg" and len(node.args) == 1:  # -x (transform.visit_UnaryOp)
        return _pure(node.args[0], changed)
    return isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)) \
        and _pure(node.left, changed) and _pure(node.right, changed)


def _shift(item: ast.expr, var: str, changed: set[str]
           ) -> tuple[ast.operator | None, ast.expr | None] | None:
    """How an index is the loop variable shifted: (op, e) for `v + e`, `e + v` or `v - e`,
    (None, None) for `v` itself, None for anything else."""
    if isinstance(item, ast.Name) and item.id == var:
        return None, None
    if not isinstance(item, ast.BinOp) or not isinstance(item.op, (ast.Add, ast.Sub)):
        return None
    is_var = [isinstance(x, ast.Name) and x.id == var for x in (item.left, item.right)]
    if is_var[0] and _pure(item.right, changed):
        return item.op, item.right
    if is_var[1] and isinstance(item.op, ast.Add) and _pure(item.left, changed):
        return item.op, item.left
    return None


def _shifted(bound: ast.expr, op: ast.operator | None, by: ast.expr | None) -> ast.expr:
    if by is None:
        return copy.deepcopy(bound)
    return ast.BinOp(left=copy.deepcopy(bound), op=op, right=copy.deepcopy(by))


def _range_bounds(loop: ast.For) -> tuple[str, ast.expr, ast.expr] | None:
    """(v, lo, hi) of `for v in range(hi)` or `range(lo, hi)` with bounds `_pure` reads
    (read again before the loop: they cannot fail, and the loop's start changes nothing)."""
    it = loop.iter
    if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name) and it.func.id == "range"
            and 1 <= len(it.args) <= 2 and not it.keywords
            and all(_pure(a, set()) for a in it.args)):
        return None
    lo = it.args[0] if len(it.args) == 2 else N.const(0)
    return loop.target.id, lo, it.args[-1]


def _accesses(node: ast.AST) -> Iterator[ast.Call]:
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                and call.func.id in _IN_BOUNDS and len(call.args) > 2:
            yield call


def _compare(left: ast.expr, op: ast.cmpop, right: ast.expr) -> ast.Compare:
    return ast.Compare(left=left, ops=[op], comparators=[right])
