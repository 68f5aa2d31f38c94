"""`math` functions in kernels, typed as numba-cuda types them.

The simulator compiles kernels with Numba's CPU compiler, whose `math` differs from the CUDA
target's: `math.floor(2.5)` is an int on the CPU and a float on a GPU, `math.ldexp(True, n)` is
float64 on the CPU and float32 on a GPU, `math.fmod`, `math.modf`, `math.remainder` and
`math.nextafter` do not compile for the CPU at all, and `math.pow(0.0, -1)` raises there where
libdevice returns inf. So each `math.f(...)` numba-cuda types (its `numba.cuda.cudamath`
templates) becomes `math_f(...)` here: the case numba-cuda's typing picks for the argument types
decides the types the arguments are converted to and the type of the result, and the value is
computed by a CPU function with the GPU's meaning (numpy's float functions, or the few written
below; float16 is computed in float32 and rounded to half). Results match libdevice wherever it
is correctly rounded; `pow` with an integer exponent is computed as a float power, which may
differ from libdevice's `powi` in the last bit. `typed_stub` makes such a typed function for any
CPU function and typing (gpukit.sim.libdevice makes numba-cuda's libdevice functions with it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import types
from numba.core.errors import TypingError

from . import engine_cache
from .lowlevel import overload, register_jitable


@register_jitable
def remainder(x, y):
    """IEEE remainder, exact: x - n*y with n the integer nearest x/y (ties to even). Reduced
    modulo 2|y| first, then |y| taken away once or twice; comparing 2|r| with |y| (not |r| with
    |y|/2, which rounds for the smallest subnormal |y|) keeps every step exact."""
    if np.isnan(x) or np.isnan(y) or np.isinf(x) or y == 0:
        return np.nan
    if np.isinf(y):
        return x
    ay = abs(y)
    r = np.fmod(x, ay + ay) if np.isfinite(ay + ay) else x  # |r| < 2|y|, the sign of x
    ar = abs(r)
    if ar + ar > ay:  # an overflow to inf compares right too
        ar -= ay
        if ar + ar >= ay:
            ar -= ay
    return -ar if np.signbit(x) else ar


@register_jitable
def modf(x):
    whole = np.trunc(x)
    frac = np.copysign(0.0, x) if np.isinf(x) else np.copysign(x - whole, x)
    return frac, whole


@register_jitable
def power(x, y):
    return np.power(x, np.float64(y))  # a float power, as libdevice's pow and powi: 0 ** -1 is inf


# The CPU functions with the GPU's meaning, where Numba's CPU `math` has another (or none).
_SPECIAL = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "fmod": np.fmod,
            "remainder": remainder, "modf": modf, "nextafter": np.nextafter, "pow": power}


@functools.cache
def templates() -> dict[str, Any]:
    """numba-cuda's typing templates of `math` functions, by name (read on first use: it
    imports numba-cuda)."""
    from numba.cuda import cudamath
    out = {}
    for func, typ in cudamath.registry.globals:
        if getattr(func, "__module__", None) == "math" or getattr(math, func.__name__, None) \
                is func:
            out[func.__name__] = (func, typ.templates[0])
    return out


def cuda_case(name: str, args: tuple) -> Any:
    """The signature numba-cuda's typing gives `math.<name>` for argument types `args`."""
    from numba.core.registry import cpu_target
    from numba.cuda.types.ext_types import Bfloat16
    if any(isinstance(a, Bfloat16) for a in args):
        return None  # numba-cuda's cuda.bf16 overloads (gpukit.sim.bfloat16)
    func, template = templates()[name]
    cases = list(template.cases)
    try:
        return cpu_target.typing_context.resolve_overload(func, cases, args, {})
    except TypingError:
        return None


def converter(t: types.Type) -> str:
    """The conversion of a value to type `t`, as the stubs' generated code spells it."""
    if isinstance(t, types.Boolean):
        return "bool"
    return f"np.{t}"


def _computed_as(t: types.Type) -> str:
    """The argument's conversion for the CPU function: float16 is computed in float32 (Numba's
    CPU `math` has no half functions) and the result rounded to half."""
    return "np.float32" if t == types.float16 else converter(t)


def _stub(name: str):
    """`math_<name>(a0, ...)`: an overloaded function with numba-cuda's types for math.<name>."""
    return typed_stub(f"math_{name}", _SPECIAL.get(name, getattr(math, name)),
                      len(templates()[name][1].cases[0].args),
                      functools.partial(cuda_case, name), f"math.{name}", _computed_as)


def typed_stub(stub_name: str, func: Any, arity: int, case: Callable[[tuple], Any], tag: str,
               computed_as: Callable[[types.Type], str]) -> Any:
    """`stub_name(a0, ...)`: an overloaded function whose types are `case(argument types)` (a
    signature, or None where it does not apply), computed by `func` on the arguments converted
    to the signature's types (`computed_as` names each conversion), its result converted to the
    signature's return type. `tag` names it in the disk cache."""
    params = ", ".join(f"a{k}" for k in range(arity))
    namespace: dict[str, Any] = {}
    exec(f"def {stub_name}({params}):\n    pass", namespace)  # noqa: S102 - its arity
    stub = namespace[stub_name]

    def typer(*args):
        sig = case(tuple(args))
        if sig is None:
            return None
        call = f"f({', '.join(f'{computed_as(t)}(a{k})' for k, t in enumerate(sig.args))})"
        ret = sig.return_type
        if isinstance(ret, types.BaseTuple):
            body = [f"    r = {call}",
                    "    return (" + "".join(f"{converter(t)}(r[{k}]), "
                                         for k, t in enumerate(ret.types)) + ")"]
        else:
            body = [f"    return {converter(ret)}({call})"]
        code: dict[str, Any] = {"__name__": __name__, "np": np, "f": func}
        exec(f"def impl({params}):\n" + "\n".join(body), code)  # noqa: S102 - conversions
        # its globals are the function's and its text the conversions: the tag names them for
        # the cache on disk (the text is in the tag's code digest)
        engine_cache.enroll(code["impl"], tag)
        return code["impl"]

    scope: dict[str, Any] = {"typer": typer}
    exec(f"def ol({params}):\n    return typer({params})", scope)  # noqa: S102 - its arity
    overload(stub, jit_options={"forceinline": True}, cached=True)(scope["ol"])
    return stub


@functools.cache
def stubs() -> dict[str, Any]:
    """`math_<name>` for every math function numba-cuda types, by name (made on first use)."""
    return {name: _stub(name) for name in templates()}
