"""The differential tester's judges: numba-cuda's typing, and Numba's CPU compiler as the oracle.

- `cuda_typing(func, argtypes)` types a Python function exactly as numba-cuda types a kernel for
  a GPU (its own typing pipeline, stopped after type inference: no GPU, no NVVM), written here
  independently of gpukit's own typing check, which is under test.
- The oracle compiles the same per-thread code with `numba.njit`. Numba's CPU typing agrees with
  numba-cuda's for every operator and builtin the generator uses, but not for some `math`
  functions (`floor`, `ceil`, `trunc` return floats on CUDA and ints on the CPU; `pow`, `ldexp`,
  `frexp` and `nextafter` of small integers compute in float32 on CUDA; `fmod`, `modf` and
  `remainder` have no CPU implementation at all). So the oracle calls every `math.f` through
  `ORACLE_MATH["f"]`: an `@overload`-ed stand-in whose signature is numba-cuda's (its argument
  and result types are asked of numba-cuda's typing context) and whose value is the CPU's.
  These functions are exact in IEEE arithmetic except the transcendental ones, whose last bit is
  the C library's on the CPU (and libdevice's on a GPU, which is out of scope here).
- Float `%`, `//` and `divmod`, `min`/`max` of two floats, and `-x` and `abs(x)` of an int16
  compute otherwise on a GPU (NVVM's `frem`, libdevice's fmin/fmax, NVVM widening an int16
  before it negates: gpukit/sim/arith.py): the oracle's source calls them through ORACLE_BINARY
  (`oracle_operators`).
- `round(x, ndigits)` of a float is `ORACLE_ROUND`: numba-cuda lowers it with CPython's
  fallback `double_round` (scale by 10**ndigits in double precision, round half to even, scale
  back); Numba's CPU target scales in x's own type, so float32 values can differ.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import ctypes.util
import math
import operator
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

MATH_UNARY = ("sqrt", "exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan",
              "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
              "floor", "ceil", "trunc", "fabs", "erf", "erfc", "gamma", "lgamma", "degrees",
              "radians", "isnan", "isinf", "isfinite", "frexp", "modf")
MATH_BINARY = ("atan2", "hypot", "copysign", "pow", "fmod", "ldexp", "remainder", "nextafter")


# -- numba-cuda's typing ----------------------------------------------------------------------
_PIPELINE: Any = None


def _typing_pipeline() -> Any:
    """numba-cuda's compiler with a pipeline that ends after nopython type inference."""
    global _PIPELINE
    if _PIPELINE is None:
        from numba.cuda.compiler import CUDACompiler, CUDATranslateBytecode, DefaultPassBuilder
        from numba.cuda.core.compiler_machinery import FunctionPass, PassManager, register_pass
        from numba.cuda.core.typed_passes import NopythonTypeInference
        from numba.cuda.core.untyped_passes import TranslateByteCode

        @register_pass(mutates_CFG=False, analysis_only=True)
        class DifferentialTypingDone(FunctionPass):
            _name = "differential_typing_done"

            def __init__(self) -> None:
                FunctionPass.__init__(self)

            def run_pass(self, state: Any) -> bool:
                state.cr = (dict(state.typemap), state.return_type)
                return False

        class TypingOnly(CUDACompiler):
            def define_pipelines(self) -> list:
                pm = PassManager("differential-typing")
                for impl, what in DefaultPassBuilder.define_untyped_pipeline(self.state).passes:
                    pm.add_pass(CUDATranslateBytecode if impl is TranslateByteCode else impl, what)
                pm.add_pass(NopythonTypeInference, "nopython frontend")
                pm.add_pass(DifferentialTypingDone, "done")
                pm.finalize()
                return [pm]

        _PIPELINE = TypingOnly
    return _PIPELINE


class _Device:
    compute_capability = (7, 5)


@contextlib.contextmanager
def _any_device() -> Iterator[None]:
    """numba-cuda types a call of a device function by compiling it for the current device; with
    no GPU there is none, so a CC 7.5 stand-in answers (typing is the same for every CC)."""
    from numba.cuda import dispatcher
    real = dispatcher.get_current_device
    try:
        real()
    except Exception:  # noqa: BLE001 - any failure means no current device
        dispatcher.get_current_device = lambda: _Device
        try:
            yield
        finally:
            dispatcher.get_current_device = real
    else:
        yield


class CudaTypingError(Exception):
    """numba-cuda's typing rejected the function (its message is the exception's)."""


def cuda_typing(func: Callable, argtypes: tuple) -> tuple[dict[str, Any], Any]:
    """The typemap and return type numba-cuda gives `func` for `argtypes`."""
    from numba.core.errors import NumbaError
    from numba.cuda import utils
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.flags import CUDAFlags

    flags = CUDAFlags()
    flags.no_compile = True
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    flags.error_model = "numpy"  # numba-cuda's default without debug=True
    try:
        with utils.numba_target_override(), _any_device():
            return _typing_pipeline()(cuda_target.typing_context, cuda_target.target_context,
                                      None, argtypes, None, flags, {}).compile_extra(func)
    except NumbaError as exc:
        raise CudaTypingError(str(exc)) from None


def cuda_signature(func: Callable, argtypes: tuple) -> Any:
    """numba-cuda's signature of the library function `func` for `argtypes`, or None."""
    from numba.cuda.descriptor import cuda_target
    ctx = cuda_target.typing_context
    ctx.refresh()
    return ctx.resolve_function_type(ctx.resolve_value_type(func), argtypes, {})


# -- the oracle's math functions ----------------------------------------------------------------
_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))


def _libm(name: str, ctype: Any) -> Any:
    fn = getattr(_LIBM, name)
    fn.restype, fn.argtypes = ctype, [ctype, ctype]
    return fn


_REMAINDER = _libm("remainder", ctypes.c_double)
_REMAINDERF = _libm("remainderf", ctypes.c_float)


@numba.njit(error_model="numpy")
def _modf(x: Any) -> Any:
    whole = np.trunc(x)
    frac = math.copysign(0.0, x) if math.isinf(x) else math.copysign(x - whole, x)
    return frac, whole


def _cpu_impl(name: str, params: tuple) -> Callable:
    """How the CPU computes `math.<name>` for numba-cuda's parameter types `params`."""
    f32 = params[0] == types.float32
    special = {
        "floor": lambda x: np.floor(x), "ceil": lambda x: np.ceil(x),
        "trunc": lambda x: np.trunc(x), "fmod": lambda x, y: np.fmod(x, y), "modf": _modf,
        "remainder": (lambda x, y: _REMAINDERF(x, y)) if f32 else (lambda x, y: _REMAINDER(x, y)),
    }
    if name in special:
        return special[name]
    if name == "pow" and isinstance(params[1], types.Integer):
        # numba-cuda calls libdevice's powi/powif (no exceptions, inf for 0.0 ** -1); the CPU's
        # math.pow(x, int) is numba's repeated squaring, which raises ZeroDivisionError there,
        # so the oracle uses C's pow with the exponent converted exactly to a double
        return lambda x, y: math.pow(x, types.float64(y))
    fn = getattr(math, name)
    return (lambda x: fn(x)) if len(params) == 1 else (lambda x, y: fn(x, y))


def _stand_in(name: str) -> Callable:
    """`math.<name>` with numba-cuda's types: arguments converted to its parameter types, the
    value computed by the CPU, converted to its result type."""

    def typer(*argtys: Any) -> Callable | None:
        sig = cuda_signature(getattr(math, name), argtys)
        if sig is None:
            return None
        impl = _cpu_impl(name, sig.args)
        if not isinstance(impl, numba.core.dispatcher.Dispatcher):
            impl = numba.njit(impl)
        ret, p0 = sig.return_type, sig.args[0]
        if isinstance(ret, types.BaseTuple):  # frexp, modf: convert each element
            r0, r1 = ret.types

            def pair(x):  # no annotations: numba compares them with the stub
                t = impl(p0(x))
                return r0(t[0]), r1(t[1])
            return pair
        if len(sig.args) == 1:
            return lambda x: ret(impl(p0(x)))
        p1 = sig.args[1]
        return lambda x, y: ret(impl(p0(x), p1(y)))

    if name in MATH_UNARY:
        def stub(x: Any) -> Any:
            raise NotImplementedError("runs only in compiled code")
        overload(stub)(lambda x: typer(x))
    else:
        def stub(x: Any, y: Any) -> Any:  # type: ignore[misc]
            raise NotImplementedError("runs only in compiled code")
        overload(stub)(lambda x, y: typer(x, y))
    stub.__name__ = stub.__qualname__ = f"cu_{name}"
    return stub


ORACLE_MATH: dict[str, Callable] = {name: _stand_in(name) for name in MATH_UNARY + MATH_BINARY}


def _int64(y: float) -> int:
    return 2 ** 63 - 1 if y >= 2.0 ** 63 else -2 ** 63 if y <= -2.0 ** 63 else round(y)


def _double_round(x: float, ndigits: int) -> float:
    """CPython's fallback double_round (Objects/floatobject.c), in double precision."""
    if math.isinf(x) or math.isnan(x):
        return x
    if ndigits >= 0:
        pow1, pow2 = (10.0 ** (ndigits - 22), 1e22) if ndigits > 22 else (10.0 ** ndigits, 1.0)
        y = (x * pow1) * pow2
        if math.isinf(y):
            return x
    else:
        pow1, pow2 = 10.0 ** -ndigits, 1.0
        y = x / pow1
    z = float(_int64(y))  # round(y) is an int64 in the lowering; a GPU's conversion saturates
    if math.fabs(y - z) == 0.5:
        z = 2.0 * _int64(y / 2.0)
    return (z / pow2) / pow1 if ndigits >= 0 else z * pow1


_int64 = numba.njit(_int64)
_double_round_jit = numba.njit(_double_round)


def oracle_round(x: Any, ndigits: Any = None) -> Any:
    raise NotImplementedError("runs only in compiled code")


@overload(oracle_round)
def _ol_oracle_round(x, ndigits=None):
    if isinstance(x, types.Float) and isinstance(ndigits, types.Integer):
        result = x
        return lambda x, ndigits=None: result(_double_round_jit(types.float64(x), ndigits))
    if ndigits is None or isinstance(ndigits, (types.NoneType, types.Omitted)):
        return lambda x, ndigits=None: round(x)
    return lambda x, ndigits=None: round(x, ndigits)


ORACLE_ROUND = oracle_round


# -- the oracle's float division and min/max -----------------------------------------------------
def _gpu_binary(name: str, pick: Callable) -> Callable:
    """`name(a, b)` with the GPU's result where it differs from the CPU's: float `%`, `//` and
    `divmod` (NVVM's frem) and `min`/`max` of two floats (libdevice's fmin/fmax). The values come
    from gpukit.sim.arith, which tests/test_sim_semantics.py checks against an H200's results."""
    def stub(a: Any, b: Any) -> Any:
        raise NotImplementedError("runs only in compiled code")

    def ol(a, b):
        f = pick(a, b)
        return lambda a, b: f(a, b)
    overload(stub)(ol)
    stub.__name__ = stub.__qualname__ = name
    return stub


def _oracle_binaries() -> dict[str, Callable]:
    from gpukit.sim import arith
    ops = {"cu_floordiv": operator.floordiv, "cu_mod": operator.mod, "cu_divmod": divmod}
    out = {name: _gpu_binary(name, lambda a, b, op=op: arith.gpu_division(op, a, b))
           for name, op in ops.items()}
    for name, builtin in (("cu_min", min), ("cu_max", max)):
        out[name] = _gpu_binary(name, lambda a, b, f=builtin: arith.gpu_min_max(f, a, b))
    out["cu_neg"], out["cu_abs"] = arith.neg, arith.abs_  # one operand: the simulator's own
    return out


ORACLE_BINARY: dict[str, Callable] = _oracle_binaries()


class OracleOperators(ast.NodeTransformer):
    """Rewrites `a // b`, `a % b` (also augmented), `divmod(a, b)`, `min(a, b)`, `max(a, b)`,
    `-x` and `abs(x)` in the oracle's source as calls of ORACLE_BINARY's stand-ins."""

    _OPS: ClassVar[dict] = {ast.FloorDiv: "cu_floordiv", ast.Mod: "cu_mod"}
    _CALLS: ClassVar[dict] = {"divmod": "cu_divmod", "min": "cu_min", "max": "cu_max"}

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, ast.USub) or isinstance(node.operand, ast.Constant):
            return node
        return ast.Call(func=ast.Name(id="cu_neg", ctx=ast.Load()), args=[node.operand],
                        keywords=[])

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        name = self._OPS.get(type(node.op))
        if name is None:
            return node
        return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[node.left, node.right],
                        keywords=[])

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        if type(node.op) not in self._OPS:
            return node
        read = ast.parse(ast.unparse(node.target), mode="eval").body  # the target, as a load
        value = self.visit_BinOp(ast.BinOp(left=read, op=node.op, right=node.value))
        return ast.Assign(targets=[node.target], value=value)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if (isinstance(node.func, ast.Name) and node.func.id in self._CALLS
                and len(node.args) == 2 and not node.keywords):
            node.func = ast.Name(id=self._CALLS[node.func.id], ctx=ast.Load())
        if (isinstance(node.func, ast.Name) and node.func.id == "abs" and len(node.args) == 1
                and not node.keywords):
            node.func = ast.Name(id="cu_abs", ctx=ast.Load())
        return node


def oracle_operators(source: str) -> str:
    """`source` with OracleOperators applied."""
    tree = OracleOperators().visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
