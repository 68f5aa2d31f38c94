"""Arrays a kernel indexes only by the running thread's coordinates in the grid.

In `out[i] = a[i] + b[i]` with `i = cuda.grid(1)`, each thread of a one-dimensional launch
touches its own element of `out` and no other thread's, so no two threads can race on `out`:
the race check need keep no records for it (8 bytes per element, and a record read and written
at every access). `thread_indexed` finds such array parameters from the kernel's source, before
any launch; `gpukit.sim.launch` keeps records all the same unless the launch's shape and
arguments make the proof hold (the grid's other dimensions of extent 1, the array the only
argument on its allocation, a view whose elements do not overlap).

A coordinate is a variable assigned once, to `cuda.grid(n)` (unpacked for n > 1), or to
`cuda.threadIdx.d + cuda.blockIdx.d * cuda.blockDim.d` in any order of the terms, or the
variable of a grid-stride loop (`for i in range(start, n, stride)` with a coordinate as `start`
and `cuda.gridsize(1)` or `cuda.gridDim.d * cuda.blockDim.d` as `stride`: each thread's values
are its own). A parameter qualifies when every use of it is an element access whose index is the
same distinct coordinates in the same order (`out[i]`, `C[row, col]`), or reads its metadata
(`out.shape[0]`, `len(out)`); anything else (another index, a view, a call that takes the array,
an atomic, a second name for it) leaves it to the records.
"""

from __future__ import annotations

import ast
import types as pytypes
from typing import Any

from . import names

_AXES = {"x": 0, "y": 1, "z": 2}


def thread_indexed(func: pytypes.FunctionType, tree: ast.Module,
                   params: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """For each parameter of kernel `func` (source `tree`, the function's definition alone)
    indexed only by coordinates: the grid dimension (0 x, 1 y, 2 z) of each index position,
    as `C[row, col]` with `col, row = cuda.grid(2)` gives (1, 0)."""
    scope = Scope(func, tree)
    if not scope.followed:
        return {}
    coords = scope.coordinates(set(params))
    found = {}
    for param in params:
        form = () if scope.stores.get(param) else scope.form(param, coords)
        if form:
            found[param] = form
    return found


# what puts names in another scope or binds them other than by assignment: not followed
_UNFOLLOWED = (ast.Lambda, ast.ClassDef, ast.comprehension, ast.AsyncFunctionDef, ast.Global,
               ast.Nonlocal, ast.Import, ast.ImportFrom, ast.ExceptHandler, ast.Match)


class Scope:
    """The kernel's names: how often each is assigned, the value of those assigned once by a
    plain assignment, and each node's parent."""

    def __init__(self, func: pytypes.FunctionType, tree: ast.Module):
        self.func = func
        self.stores: dict[str, int] = {}
        self.values: dict[str, ast.expr] = {}
        self.parents: dict[ast.AST, ast.AST] = {}
        self.followed = True
        self.nodes = list(ast.walk(tree))
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                self.stores[node.id] = self.stores.get(node.id, 0) + 1
            elif isinstance(node, _UNFOLLOWED) or (isinstance(node, ast.FunctionDef)
                                                   and node is not tree.body[0]):
                self.followed = False
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                self.values[node.targets[0].id] = node.value

    def value(self, name: str) -> ast.expr | None:
        """The value of a variable assigned once, by a plain assignment."""
        return self.values.get(name) if self.stores.get(name) == 1 else None

    def coordinates(self, params: set[str]) -> dict[str, int]:
        """Variable -> the grid dimension it is the running thread's coordinate in."""
        coords = {}
        for node in self.nodes:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target, value = node.targets[0], node.value
            dims = self.grid_call(value)
            if isinstance(target, ast.Name):
                axis = self._coordinate_value(value)
                if axis is not None:
                    coords[target.id] = axis
            elif isinstance(target, ast.Tuple) and dims is not None and dims > 1 \
                    and len(target.elts) == dims:
                for axis, elt in enumerate(target.elts):
                    if isinstance(elt, ast.Name):
                        coords[elt.id] = axis
        for node in self.nodes:  # a grid-stride loop's variable: start + k * gridsize
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                axis = self._grid_stride(node.iter, coords)
                if axis is not None:
                    coords[node.target.id] = axis
        return {name: axis for name, axis in coords.items()
                if self.stores.get(name) == 1 and name not in params}

    def _coordinate_value(self, node: ast.AST) -> int | None:
        """The axis d of `cuda.grid(1)` (d = 0) or `threadIdx.d + blockIdx.d * blockDim.d`."""
        return 0 if self.grid_call(node) == 1 else self._sum_of_coordinate(node)

    def _grid_stride(self, node: ast.AST, coords: dict[str, int]) -> int | None:
        """The axis d of `range(start, stop, step)` whose start is the thread's coordinate in
        dimension d and whose step is the number of threads in it, else None."""
        if not (isinstance(node, ast.Call) and len(node.args) == 3 and not node.keywords
                and self.resolve(node.func) is range):
            return None
        start, _, step = node.args
        axis = self._coordinate_value(start)
        if isinstance(start, ast.Name) and self.stores.get(start.id) == 1:
            axis = coords.get(start.id)
        return axis if axis is not None and self._threads_in(step) == axis else None

    def _threads_in(self, node: ast.AST) -> int | None:
        """The axis d of `cuda.gridsize(1)` (d = 0) or `gridDim.d * blockDim.d`, else None."""
        if isinstance(node, ast.Name):
            value = self.value(node.id)
            return self._threads_in(value) if value is not None else None
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == 1 \
                and self._intrinsic(node.func) == "gridsize":
            return 0
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            parts = {self._coordinate_part(node.left), self._coordinate_part(node.right)}
            for axis in range(3):
                if parts == {("gridDim", axis), ("blockDim", axis)}:
                    return axis
        return None

    def resolve(self, node: ast.AST) -> Any:
        """The object a name or attribute chain the kernel does not assign refers to, or None."""
        if isinstance(node, ast.Attribute):
            owner = self.resolve(node.value)
            return None if owner is None else getattr(owner, node.attr, None)
        if isinstance(node, ast.Name) and not self.stores.get(node.id):
            obj = names.lookup(self.func, node.id)
            return None if names.missing(obj) else obj
        return None

    def _intrinsic(self, node: ast.AST) -> str | None:
        spec = names.intrinsic(self.resolve(node))
        return spec.name if spec is not None else None

    def grid_call(self, node: ast.AST, intrinsics: tuple[str, ...] = ("grid",)) -> int | None:
        """n for `cuda.grid(n)` (n a literal 1, 2 or 3; or for another of `intrinsics` taking
        n, such as `cuda.gridsize`), else None."""
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in (1, 2, 3) \
                and self._intrinsic(node.func) in intrinsics:
            return node.args[0].value
        return None

    def _coordinate_part(self, node: ast.AST) -> tuple[str, int] | None:
        """('threadIdx', axis) for `cuda.threadIdx.x` and the like (or a variable assigned
        once to one), else None."""
        if isinstance(node, ast.Name):
            value = self.value(node.id)
            return self._coordinate_part(value) if value is not None else None
        if isinstance(node, ast.Attribute) and node.attr in _AXES:
            name = self._intrinsic(node.value)
            if name in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
                return name, _AXES[node.attr]
        return None

    def _sum_of_coordinate(self, node: ast.AST) -> int | None:
        """The axis d of `threadIdx.d + blockIdx.d * blockDim.d` (terms and factors in any
        order), else None."""
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
            return None
        for single, product in ((node.left, node.right), (node.right, node.left)):
            thread = self._coordinate_part(single)
            if thread is None or thread[0] != "threadIdx" or not (
                    isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult)):
                continue
            factors = {self._coordinate_part(product.left),
                       self._coordinate_part(product.right)}
            if factors == {("blockIdx", thread[1]), ("blockDim", thread[1])}:
                return thread[1]
        return None

    def form(self, param: str, coords: dict[str, int]) -> tuple[int, ...]:
        """The one index form every use of `param` has (see `thread_indexed`); () if none."""
        forms = set()
        for node in self.nodes:
            if not (isinstance(node, ast.Name) and node.id == param):
                continue
            parent = self.parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.attr in names.ARRAY_METADATA:
                continue
            if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
                    and parent.func.id == "len" and parent.args == [node]:
                continue
            if not (isinstance(parent, ast.Subscript) and parent.value is node):
                return ()
            index = parent.slice.elts if isinstance(parent.slice, ast.Tuple) else [parent.slice]
            axes = tuple(coords.get(i.id) if isinstance(i, ast.Name) else None for i in index)
            if None in axes or len(set(axes)) != len(axes):
                return ()
            forms.add(axes)
        return forms.pop() if len(forms) == 1 else ()


__all__ = ["thread_indexed"]
