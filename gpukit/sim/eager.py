"""Device functions declared with signatures (`cuda.jit("i8(i8, i8)", device=True)`): numba-cuda
compiles them for those signatures only, so a call converts its arguments to the signature that
numba-cuda's overload resolution picks (unsafe conversions included: 1.5 passed as int64 is 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba.core.errors import TypingError

from .lowlevel import overload

_CONVERTERS: dict[int, tuple[Any, Callable]] = {}


def c_convert(value: Any, dtype: np.dtype) -> Any:
    """A scalar converted to `dtype` as C converts (as numba-cuda converts an argument to an
    eager signature's type): integers wrap (0xFFFFFFFF as int32 is -1), floats truncate."""
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)[()]


def declared_signatures(obj: Any) -> list | None:
    """The argument types a device function was compiled for eagerly, or None (lazy)."""
    if getattr(obj, "_can_compile", True):
        return None
    return list(getattr(obj, "signatures", None) or []) or None


def converter(obj: Any, signatures: list) -> Callable:
    """A function kernels call with a call's arguments; it returns them converted (a tuple)."""
    found = _CONVERTERS.get(id(obj))
    if found is not None and found[0] is obj:
        return found[1]
    name = getattr(getattr(obj, "py_func", None), "__name__", "device_function")

    def convert(*args):
        """The arguments of a call converted to the declared signature (in kernels only)."""
        raise NotImplementedError("called in kernels only")

    @overload(convert)
    def _ol_convert(*args):
        from numba.cuda import types
        from numba.cuda.descriptor import cuda_target
        from numba.cuda.typing import signature
        cases = [signature(types.none, *argtypes) for argtypes in signatures]
        best = cuda_target.typing_context.resolve_overload(name, cases, list(args), {})
        if best is None:
            raise TypingError(f"{name}() was declared for {signatures}; no signature takes "
                              f"({', '.join(map(str, args))})")
        ns: dict = {}
        parts = []
        for k, ty in enumerate(best.args):
            if isinstance(ty, (types.Number, types.Boolean)):
                ns[f"t{k}"] = ty
                parts.append(f"t{k}(args[{k}])")
            else:
                parts.append(f"args[{k}]")
        exec(f"def impl(*args):\n    return ({''.join(p + ', ' for p in parts)})", ns)  # noqa: S102
        return ns["impl"]

    _CONVERTERS[id(obj)] = (obj, convert)
    return convert
