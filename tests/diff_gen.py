"""Hypothesis strategies that write random Numba CUDA kernels for the differential tester.

A generated `Program` is one kernel's per-thread code: it loads one element of each input array
(`x0 = a0[i]` with `i = cuda.grid(1)`), runs random statements (assignments, if/elif/else,
`for` over ranges, bounded `while` loops, break/continue, local arrays, tuples, calls of
generated device functions) and computes several independent result expressions `r0, r1, ...`
over mixed dtypes. `diff_run` renders it as a kernel, as numba-cuda typing input and as the CPU
oracle. What it does not do: shared memory, barriers, atomics, warp intrinsics (the tester checks
values, not schedules).

The generator tracks each value's kind, 'b' (bool), 'i' (an integer type), 'f' (a float type)
or 'n' (integer or float: numba unifies int64 and uint64 to float64), so that it writes mostly
well-typed code and never undefined behaviour: integer `//` and `%` never divide by 0 or -1
(INT64_MIN // -1 traps on x86), shift counts stay in [0, 63] (numba shifts in 64 bits), integer
exponents of `**` stay small (numba's CPU code raises for some: ZeroDivisionError for
`0.0 ** -1`, OverflowError for an INT64_MIN exponent; a GPU does not raise), integer `**` has
a base in [0, 15] and an exponent below 16 (numba multiplies signed integers with LLVM's `nsw`
flag, so a signed overflow is undefined: LLVM folds `np.int64(x ** 44) < 0` to False where the
function is inlined, as the simulator inlines device functions, and computes it where it is
not, as the oracle's device functions are not: the soak found that), and a
float converted to an integer (`int()`, `np.int32()`, `round()`, a store into an integer local
array) is first checked to be in range, since LLVM makes out-of-range and NaN conversions poison.
A float `if`-expression converts its other side to float (Numba prunes the branch a constant
condition never takes, so `(f if False else 0)` is an int there), and a literal base of a float
`**` is written `np.float64(...)` (Python's compiler folds `(-2.5) ** 0.5` into a complex constant).
Signed `+`, `-` and `*` may still overflow (undefined for the same `nsw` reason, though LLVM
rarely has a way to exploit it here): a mismatch must be read with that in mind.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field

from diff_features import enabled
from diff_oracle import MATH_BINARY, MATH_UNARY
from hypothesis import strategies as st

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DTYPES = (*INT_DTYPES, "float32", "float64", "bool")
INT_LITERALS = (0, 1, 2, 3, -1, 7, 100, 127, 128, 255, 256, -128, 32767, 65535, 2147483647,
                2147483648, -2147483648, 4294967295, 4294967296, 9223372036854775807,
                -9223372036854775807, 18446744073709551615)
FLOAT_LITERALS = ("0.0", "1.0", "-1.0", "0.5", "-0.0", "2.5", "3.0", "1e-300", "1e+300",
                  "3.4e+38", "1e-45", "1e-07", "0.1", "math.inf", "-math.inf", "math.nan",
                  "math.pi", "math.e")
_INT_RANGE = {f"{s}int{w}": ((0, 2 ** w) if s else (-2 ** (w - 1), 2 ** (w - 1)))
              for s in ("", "u") for w in (8, 16, 32, 64)}
CMP = ("<", "<=", ">", ">=", "==", "!=")


def kind_of_dtype(dtype: str) -> str:
    return "b" if dtype == "bool" else "f" if dtype.startswith("float") else "i"


def _is_literal(text: str) -> bool:
    """Whether a generated expression is a number literal (which Python's compiler folds)."""
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    return True


@dataclass
class Device:
    """A generated `@cuda.jit(device=True)` function."""

    name: str
    params: list[str]  # the kinds of its parameters
    returns: list[str]  # the kinds it returns: one, or two for a tuple
    lines: list[str]  # its body


@dataclass
class Program:
    """One generated kernel: inputs, device functions, body and results."""

    dtypes: list[str]  # of the input arrays a0, a1, ...
    devices: list[Device]
    body: list[str]  # the per-thread code after `i = cuda.grid(1)`
    results: list[tuple[str, str]]  # (variable, kind) written to the outputs o0, o1, ...
    features: set[str] = field(default_factory=set)


@dataclass
class Scope:
    """What generated code can use at one point: variables by kind, arrays, tuples."""

    vars: dict[str, str]
    arrays: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    tuples: dict[str, tuple[str, ...]] = field(default_factory=dict)
    accumulators: dict[str, str] = field(default_factory=dict)  # updatable: name -> 'i' | 'f'
    loops: int = 0  # enclosing loops (break/continue allowed when > 0)

    def child(self, loop: bool = False) -> Scope:
        return Scope(dict(self.vars), dict(self.arrays), dict(self.tuples),
                     dict(self.accumulators), self.loops + loop)


class Gen:
    """One program's generator: the hypothesis `draw`, fresh names and the features used."""

    def __init__(self, draw: st.DrawFn, devices: list[Device]):
        self.draw = draw
        self.devices = devices
        self.ids = itertools.count()
        self.features: set[str] = set()
        self.pending: list[str] = []  # hoisted values, for the statement being generated

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids)}"

    def pick(self, options: list) -> object:
        return self.draw(st.sampled_from(options))

    def use(self, feature: str) -> bool:
        """Whether to use `feature` now (if enabled), recording that it was."""
        if not enabled(feature) or not self.draw(st.booleans()):
            return False
        self.features.add(feature)
        return True

    # -- expressions ------------------------------------------------------------------------
    def expr(self, scope: Scope, kind: str, depth: int) -> str:
        """An expression of `kind` ('b', 'i', 'f', or 'n' for any number)."""
        if kind == "n":
            kind = self.pick(["i", "f", "b"])
        if depth <= 0 or self.draw(st.integers(0, 3)) == 0:
            return self.atom(scope, kind)
        maker = {"b": self.bool_expr, "i": self.int_expr, "f": self.float_expr}[kind]
        return maker(scope, depth - 1)

    def any_expr(self, scope: Scope, depth: int) -> tuple[str, str]:
        kind = self.pick(["i", "f", "b"])
        return self.expr(scope, kind, depth), kind

    def atom(self, scope: Scope, kind: str) -> str:
        names = [v for v, k in scope.vars.items() if k == kind]
        reads = [f"{a}[{', '.join('0' for _ in shape)}]" for a, (k, shape) in scope.arrays.items()
                 if k == kind and enabled("local_arrays")]
        options = names * 3 + reads + ["literal"]
        choice = self.pick(options)
        if choice != "literal":
            return choice
        if kind == "b":
            return self.pick(["True", "False"])
        if kind == "i":
            value = self.draw(st.sampled_from(INT_LITERALS) | st.integers(-1000, 1000))
            return f"({value})" if value < 0 else str(value)
        text = self.draw(st.sampled_from(FLOAT_LITERALS) | st.floats(-1e6, 1e6).map(repr))
        return f"({text})" if text.startswith("-") else text

    def int_of(self, scope: Scope, depth: int) -> str:
        """An expression of a sure integer type."""
        return self.expr(scope, "i", depth)

    def hoist(self, text: str) -> str:
        """A variable holding `text`, assigned just before the statement being generated (so
        that guards that name a value twice do not copy its expression)."""
        if text.isidentifier():
            return text
        name = self.fresh("t")
        self.pending.append(f"{name} = {text}")
        return name

    def in_range(self, text: str, dtype: str) -> str:
        """`text` (any number) made safe to convert to `dtype`: NaN and out of range become 0."""
        lo, hi = _INT_RANGE[dtype]
        self.features.add("float_to_int")
        text = self.hoist(text)
        return f"({text} if {float(lo - 1)!r} < {text} < {float(hi)!r} else 0)"

    def to_int(self, scope: Scope, depth: int, dtype: str) -> str:
        """An expression of any kind, ready to convert to the integer `dtype`."""
        text, kind = self.any_expr(scope, depth)
        return self.in_range(text, dtype) if kind == "f" else text

    def int_expr(self, scope: Scope, depth: int) -> str:
        options = ["arith", "bitwise", "unary", "constructor", "int", "bools"]
        for feature in ("shift", "pow", "divmod", "round", "int_ifexp", "math.frexp", "device_call",
                        "tuple_item", "local_array"):
            if enabled(feature):
                options.append(feature)
        what = self.pick(options)
        sub = lambda: self.int_of(scope, depth)
        anyint = lambda: self.expr(scope, self.pick(["i", "b"]), depth)
        if what == "arith":
            a, b = sub(), anyint()
            a, b = (a, b) if self.draw(st.booleans()) else (b, a)
            return f"({a} {self.pick(['+', '-', '*'])} {b})"
        if what == "bitwise":
            return f"({sub()} {self.pick(['&', '|', '^'])} {anyint()})"
        if what == "shift":
            self.features.add("shift")
            count = (str(self.draw(st.integers(0, 63))) if self.draw(st.booleans())
                     else f"({anyint()} & 63)")
            return f"({sub()} {self.pick(['<<', '>>'])} {count})"
        if what == "unary":
            op = self.pick(["-", "~", "abs"])
            return f"abs({sub()})" if op == "abs" else f"({op}{anyint()})"
        if what == "constructor":
            dtype = self.pick(list(INT_DTYPES))
            ns = self.pick(["np", "numba"])
            self.features.add("constructor")
            return f"{ns}.{dtype}({self.to_int(scope, depth, dtype)})"
        if what == "int":
            return f"int({self.to_int(scope, depth, 'int64')})"
        if what == "bools":
            return f"({self.expr(scope, 'b', depth)} + {self.expr(scope, 'b', depth)})"
        if what == "pow":  # bases in [0, 15], exponents in [-6, 15]: no signed overflow, which
            self.features.add("pow")  # numba's `nsw` multiplications make undefined (below)
            return f"(({sub()} % 16) ** (np.int64({anyint()}) % 22 - 6))"
        if what == "divmod":  # see the module docstring: never by 0 or -1
            self.features.add("divmod")
            a, b = self.hoist(anyint()), self.hoist(anyint())
            op = self.pick(["//", "%"])
            dtype = self.pick(["int64", "uint64", "int32"])
            safe = f"(0 < {b} < 4611686018427387904 or -4611686018427387904 < {b} < -1)"
            quotient = self.hoist(f"({a} {op} {b} if {safe} else {a})")
            return f"np.{dtype}({self.in_range(quotient, dtype)})"
        if what == "round":
            self.features.add("round")
            return f"round({self.in_range(self.expr(scope, 'f', depth), 'int64')})"
        if what == "int_ifexp":  # both sides converted alike: the type stays an integer
            ns, dtype = self.pick([("np", "int64"), ("np", "uint8"), ("numba", "int32")])
            a, b = self.to_int(scope, depth, dtype), sub()
            cond = self.expr(scope, "b", depth)
            return f"({ns}.{dtype}({a}) if {cond} else {ns}.{dtype}({b}))"
        if what == "math.frexp":
            self.features.add(what)
            return f"math.frexp({self.expr(scope, 'f', depth)})[1]"
        return self.shared_forms(scope, "i", depth, what) or sub()

    def float_expr(self, scope: Scope, depth: int) -> str:
        options = ["arith", "div", "unary", "constructor", "math", "minmax", "ifexp"]
        for feature in ("math2", "pow", "divmod", "round", "math.modf", "device_call", "tuple_item",
                        "local_array"):
            if enabled(feature):
                options.append(feature)
        what = self.pick(options)
        fsub = lambda: self.expr(scope, "f", depth)
        num = lambda: self.expr(scope, self.pick(["i", "f", "b"]), depth)
        if what == "arith":
            a, b = fsub(), num()
            a, b = (a, b) if self.draw(st.booleans()) else (b, a)
            return f"({a} {self.pick(['+', '-', '*'])} {b})"
        if what == "div":
            return f"({num()} / {num()})"
        if what == "divmod":  # a float operand: division by zero gives inf or nan, no trap
            self.features.add("float_divmod")
            a, b = fsub(), num()
            a, b = (a, b) if self.draw(st.booleans()) else (b, a)
            return f"({a} {self.pick(['//', '%'])} {b})"
        if what == "pow":  # numba raises ZeroDivisionError for x ** -n when x ** n is 0
            self.features.add("pow")
            exponent, kind = self.any_expr(scope, depth)
            if kind != "f":
                exponent = f"(np.int64({exponent}) % 64)"
            base = fsub()
            if _is_literal(base):  # Python folds `(-2.5) ** 0.5` into a complex constant
                base = f"np.float64({base})"
            return f"({base} ** {exponent})"
        if what == "unary":
            op = self.pick(["-", "+", "abs"])
            return f"abs({fsub()})" if op == "abs" else f"({op}{fsub()})"
        if what == "constructor":
            self.features.add("constructor")
            ctor = self.pick(["float", "np.float32", "np.float64", "numba.float32"])
            if ctor == "float":  # numba-cuda's float() takes numbers, not bools
                return f"float({self.expr(scope, self.pick(['i', 'f']), depth)})"
            return f"{ctor}({num()})"
        if what == "math":
            names = [n for n in MATH_UNARY if n not in ("isnan", "isinf", "isfinite", "frexp",
                                                        "modf") and enabled(f"math.{n}")]
            if not names:
                return fsub()
            name = self.pick(names)
            self.features.add(f"math.{name}")
            arg = num()
            if self.draw(st.booleans()):  # on its domain: an argument at or above 0 (or 1)
                arg = f"abs({arg}) + {self.pick(['0.0', '1.0'])}"
            return f"math.{name}({arg})"
        if what == "math2":
            names = [n for n in MATH_BINARY if enabled(f"math.{n}")]
            if not names:
                return fsub()
            name = self.pick(names)
            self.features.add(f"math.{name}")
            second = self.int_of(scope, depth) if name == "ldexp" else num()
            return f"math.{name}({num()}, {second})"
        if what == "minmax":
            self.features.add("minmax")
            other = self.expr(scope, self.pick(["i", "f"]), depth)  # not bool: numba-cuda
            return f"{self.pick(['min', 'max'])}({fsub()}, {other})"  # rejects min(x, True)
        if what == "ifexp":  # Numba prunes a constant condition's other branch, so each
            other, kind = self.any_expr(scope, depth)  # side must be a float by itself
            other = other if kind == "f" else f"float({other})"
            return f"({fsub()} if {self.expr(scope, 'b', depth)} else {other})"
        if what == "round":
            self.features.add("round")
            return f"round({fsub()}, {self.draw(st.integers(0, 3))})"
        if what == "math.modf":
            self.features.add(what)
            return f"math.modf({num()})[{self.draw(st.integers(0, 1))}]"
        return self.shared_forms(scope, "f", depth, what) or fsub()

    def bool_expr(self, scope: Scope, depth: int) -> str:
        options = ["cmp", "not", "andor", "bool", "isx", "bitwise", "ifexp"]
        for feature in ("chained_cmp", "device_call", "tuple_item", "local_array"):
            if enabled(feature):
                options.append(feature)
        what = self.pick(options)
        num = lambda: self.expr(scope, self.pick(["i", "f", "b"]), depth)
        bsub = lambda: self.expr(scope, "b", depth)
        if what == "cmp":
            return f"({num()} {self.pick(list(CMP))} {num()})"
        if what == "chained_cmp":
            return f"({num()} {self.pick(list(CMP))} {num()} {self.pick(list(CMP))} {num()})"
        if what == "not":
            return f"(not {num()})"
        if what == "andor":
            return f"({bsub()} {self.pick(['and', 'or'])} {bsub()})"
        if what == "bool":
            return f"bool({num()})"
        if what == "isx":
            name = self.pick(["isnan", "isinf", "isfinite"])
            return f"math.{name}({num()})"
        if what == "bitwise":
            return f"({bsub()} {self.pick(['&', '|', '^', '=='])} {bsub()})"
        if what == "ifexp":
            return f"({bsub()} if {bsub()} else {bsub()})"
        return self.shared_forms(scope, "b", depth, what) or bsub()

    def shared_forms(self, scope: Scope, kind: str, depth: int, what: str) -> str | None:
        """Forms every kind has: a device function's result, a tuple's item, a local array's
        element (None when there is none of that kind)."""
        if what == "device_call":
            fns = [d for d in self.devices if d.returns == [kind]]
            if fns:
                self.features.add("device_call")
                return self.call(scope, self.pick(fns), depth)
        if what == "tuple_item":
            items = [(t, k) for t, kinds in scope.tuples.items()
                     for k, item in enumerate(kinds) if item == kind]
            if items:
                self.features.add("tuple")
                t, k = self.pick(items)
                return f"{t}[{k}]"
        if what == "local_array":
            arrays = [(a, shape) for a, (k, shape) in scope.arrays.items() if k == kind]
            if arrays:
                a, shape = self.pick(arrays)
                return f"{a}[{', '.join(self.index(scope, n, depth) for n in shape)}]"
        return None

    def index(self, scope: Scope, size: int, depth: int) -> str:
        """An index into an axis of `size`: a constant (negative ones count from the end, as
        in numba) or an integer expression taken modulo the size."""
        options = ["const", "expr"] + (["negative"] if enabled("negative_index") else [])
        what = self.pick(options)
        if what == "const":
            return str(self.draw(st.integers(0, size - 1)))
        if what == "negative":
            self.features.add("negative_index")
            return f"({self.draw(st.integers(-size, -1))})"
        return f"np.int64({self.int_of(scope, depth - 1)}) % {size}"

    def call(self, scope: Scope, dev: Device, depth: int) -> str:
        args = ", ".join(self.expr(scope, k, depth) for k in dev.params)
        return f"{dev.name}({args})"
