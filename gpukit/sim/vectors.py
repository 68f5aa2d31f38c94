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
from numba.extending import intrinsic

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

    vector = types.NamedUniTuple(base, n, cls)

    # an intrinsic: its code goes straight into the kernel. (An @overload compiled a function
    # of its own per pattern of arguments: a kernel building 40 vectors took 15 s to compile.)
    @intrinsic(prefer_literal=False)
    def build(typingctx, *args):
        count = 0
        for ty in args:
            if isinstance(ty, types.BaseNamedTuple) and ty.instance_class in _CLASSES:
                count += len(ty)
            elif isinstance(ty, (types.Number, types.Boolean)):
                count += 1
            else:
                raise TypingError(f"{vtype.name}() takes numbers and vectors, not {ty}")
        if count != n:
            raise TypingError(f"{vtype.name}() needs {n} elements in all; its arguments have "
                              f"{count}")

        def codegen(context, builder, sig, packed):  # the arguments come as one tuple
            elements = []
            for k, ty in enumerate(args):
                value = builder.extract_value(packed[0], k)
                if isinstance(ty, types.BaseNamedTuple):  # each converted as base(x) does
                    elements += [context.cast(builder, builder.extract_value(value, j), ty[j],
                                              base) for j in range(len(ty))]
                else:
                    elements.append(context.cast(builder, value, ty, base))
            return context.make_tuple(builder, vector, elements)

        return vector(types.StarArgTuple.from_types(args)), codegen

    _BUILDERS[vtype.name] = build
    return build
