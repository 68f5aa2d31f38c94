"""CUDA's vector types in kernels (`cuda.float32x4`, `cuda.short2`, ...), as numba-cuda has them.

A vector is a named tuple with the fields x, y, z, w (as many as it has elements), so `v.x`
reads a field and vectors pass to device functions and sit in tuples. Its constructor takes
numbers and smaller vectors whose elements add up to its own (`float32x4(f2, 1.0, f1)`, numba-
cuda's "fancy" construction), each converted to the vector's element type.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

_FIELDS = "xyzw"
_BUILDERS: dict[str, Callable] = {}
_CLASSES: set[type] = set()


def vector_type(obj: Any) -> Any:
    """numba-cuda's vector type whose constructor `obj` is (`cuda.float32x4`), or None."""
    try:
        from numba.cuda.vector_types import vector_types
    except ImportError:
        return None
    for vtype in vector_types.values():
        if vtype.user_facing_object is obj:
            return vtype
    return None


def builder(vtype: Any) -> Callable:
    """The function kernels call to build a vector of `vtype` (one per vector type)."""
    found = _BUILDERS.get(vtype.name)
    if found is not None:
        return found
    n, base = vtype.num_elements, vtype.base_type
    cls = namedtuple(vtype.name, list(_FIELDS[:n]))
    _CLASSES.add(cls)

    def build(*args):
        """A vector built from numbers and vectors (in kernels only)."""
        raise NotImplementedError(f"{vtype.name} is built in kernels only")

    build.__name__ = build.__qualname__ = vtype.name

    @overload(build)
    def _ol_build(*args):
        parts: list[str] = []
        for k, ty in enumerate(args):
            if isinstance(ty, types.BaseNamedTuple) and ty.instance_class in _CLASSES:
                parts += [f"args[{k}][{j}]" for j in range(len(ty))]
            elif isinstance(ty, (types.Number, types.Boolean)):
                parts.append(f"args[{k}]")
            else:
                raise TypingError(f"{vtype.name}() takes numbers and vectors, not {ty}")
        if len(parts) != n:
            raise TypingError(f"{vtype.name}() needs {n} elements in all; its arguments have "
                              f"{len(parts)}")
        ns = {"cls": cls, "base": base}
        exec("def impl(*args):\n"  # noqa: S102 - one constructor per pattern of arguments
             f"    return cls({', '.join(f'base({p})' for p in parts)})", ns)
        return ns["impl"]

    _BUILDERS[vtype.name] = build
    return build
