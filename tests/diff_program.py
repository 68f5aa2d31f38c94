"""Statements, device functions and whole test cases for the differential tester (see diff_gen).

`cases()` is the hypothesis strategy the tests draw from: a `Case` is a generated `Program`, its
input arrays (edge values weighted: 0, -1, the extremes, NaN, infinities, -0.0) and a launch
shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from diff_features import enabled
from diff_gen import DTYPES, Device, Gen, Program, Scope, kind_of_dtype
from hypothesis import strategies as st

THREADS = 32
SHAPES = ((1, 32), (2, 16), (4, 8))  # (blocks, threads per block): always THREADS in all
_LOCAL_DTYPES = {"b": ("bool",), "i": ("int8", "uint16", "int32", "int64", "uint64"),
                 "f": ("float32", "float64")}
_ACC_OPS = {"i": ("+", "-", "*", "^", "|", "&"), "f": ("+", "-", "*", "/")}


@dataclass
class Case:
    """A generated kernel with its inputs and launch shape."""

    program: Program
    inputs: list[np.ndarray]
    grid: int
    block: int


def indent(lines: list[str], by: int = 1) -> list[str]:
    return ["    " * by + ln for ln in lines]


class StatementGen(Gen):
    """Statements and device functions (the expressions come from `Gen`)."""

    def flush(self) -> list[str]:
        lines, self.pending = self.pending, []
        return lines

    def cond(self, scope: Scope, depth: int) -> str:
        """A condition: mostly a bool, sometimes a number (numba tests its truth)."""
        kind = self.pick(["b", "b", "b", "i", "f"])
        return self.expr(scope, kind, depth)

    def block(self, scope: Scope, depth: int, most: int) -> list[str]:
        count = self.draw(st.integers(1 if most else 0, max(most, 0)))
        lines: list[str] = []
        for _ in range(count):
            lines += self.statement(scope, depth)
        return lines or ["pass"]

    def statement(self, scope: Scope, depth: int) -> list[str]:
        options = ["assign", "assign"]
        if scope.accumulators:
            options += ["update", "update"]
        if depth > 0:
            options += [f for f in ("if", "for", "while") if enabled(f)]
        if scope.loops and enabled("break_continue"):
            options.append("jump")
        options += [f for f in ("local_arrays", "tuples") if enabled(f)]
        if any(len(d.returns) == 2 for d in self.devices):
            options.append("tuple_call")
        what = self.pick(options)
        head = getattr(self, f"s_{what}")(scope, depth)
        return self.flush() + head if what in ("assign", "update", "jump") else head

    def s_assign(self, scope: Scope, depth: int) -> list[str]:
        text, kind = self.any_expr(scope, depth)
        name = self.fresh("v")
        scope.vars[name] = kind
        return [f"{name} = {text}"]

    def s_update(self, scope: Scope, depth: int) -> list[str]:
        acc = self.pick(sorted(scope.accumulators))
        kind = scope.accumulators[acc]
        # int accumulators are int64 and stay so (int64 op any integer is int64 in numba);
        # float ones take any number
        if kind == "f" and self.draw(st.booleans()):  # min/max of a bool: numba-cuda says no
            value = self.expr(scope, self.pick(["i", "f"]), depth)
            return [f"{acc} = {self.pick(['min', 'max'])}({acc}, {value})"]
        value = self.expr(scope, self.pick(["i", "b"] if kind == "i" else ["i", "f", "b"]),
                          depth)
        op = self.pick(list(_ACC_OPS[kind]))
        return [f"{acc} {op}= {value}" if self.draw(st.booleans())
                else f"{acc} = {acc} {op} {value}"]

    def s_jump(self, scope: Scope, depth: int) -> list[str]:
        self.features.add("break_continue")
        return [f"if {self.cond(scope, depth)}:", f"    {self.pick(['break', 'continue'])}"]

    def s_if(self, scope: Scope, depth: int) -> list[str]:
        self.features.add("if")
        conds = [self.cond(scope, depth) for _ in range(self.draw(st.integers(1, 3)))]
        head = self.flush()
        lines: list[str] = []
        for k, c in enumerate(conds):
            lines.append(f"{'if' if k == 0 else 'elif'} {c}:")
            lines += indent(self.block(scope.child(), depth - 1, 2))
        if self.draw(st.booleans()):
            lines.append("else:")
            lines += indent(self.block(scope.child(), depth - 1, 2))
        return head + lines

    def bound(self, scope: Scope, depth: int) -> str:
        """A small range bound: a literal or an integer expression modulo a few."""
        if self.draw(st.booleans()):
            return str(self.draw(st.integers(-3, 8)))
        sign = self.pick(["", "-"])
        return f"{sign}(np.int64({self.expr(scope, 'i', depth)}) % {self.draw(st.integers(1, 8))})"

    def s_for(self, scope: Scope, depth: int) -> list[str]:
        self.features.add("for")
        var = self.fresh("j")
        form = self.draw(st.integers(1, 3))
        bounds = [self.bound(scope, depth - 1) for _ in range(min(form, 2))]
        if form == 3:
            bounds.append(str(self.pick([1, 2, 3, -1, -2])))
        head = self.flush()
        inner = scope.child(loop=True)
        inner.vars[var] = "i"
        return head + [f"for {var} in range({', '.join(bounds)}):"] + indent(
            self.block(inner, depth - 1, 3))

    def s_while(self, scope: Scope, depth: int) -> list[str]:
        self.features.add("while")
        var = self.fresh("w")
        limit = self.draw(st.integers(0, 6))
        test = f"{var} < {limit}"
        if self.draw(st.booleans()):
            test += f" and {self.cond(scope, depth - 1)}"
        head = self.flush()
        inner = scope.child(loop=True)
        inner.vars[var] = "i"
        # the counter goes up first, so that `continue` cannot loop forever
        return head + [f"{var} = 0", f"while {test}:", f"    {var} += 1"] + indent(
            self.block(inner, depth - 1, 3))

    def s_local_arrays(self, scope: Scope, depth: int) -> list[str]:
        self.features.add("local_arrays")
        kind = self.pick(["i", "f", "b"])
        dtype = self.pick(list(_LOCAL_DTYPES[kind]))
        shape = tuple(self.draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
        name = self.fresh("la")
        idx = [self.fresh("j") for _ in shape]
        inner = scope.child()
        for j in idx:
            inner.vars[j] = "i"
        value = self.expr(inner, "b" if kind == "b" else self.pick([kind, "i", "b"]), depth - 1)
        fill = self.flush() + [f"{name}[{', '.join(idx)}] = {value}"]
        for j, n in zip(reversed(idx), reversed(shape)):
            fill = [f"for {j} in range({n}):"] + indent(fill)
        size = shape[0] if len(shape) == 1 else shape
        lines = [f"{name} = cuda.local.array({size}, np.{dtype})"] + fill
        scope.arrays[name] = (kind, shape)
        if self.draw(st.booleans()):  # and change one element
            at = ", ".join(self.index(scope, n, depth) for n in shape)
            op = "=" if kind == "b" else self.pick(["=", "+=", "*="])
            value = self.expr(scope, "b" if kind == "b" else self.pick([kind, "i"]), depth - 1)
            lines += self.flush() + [f"{name}[{at}] {op} {value}"]
        return lines

    def s_tuples(self, scope: Scope, depth: int) -> list[str]:
        self.features.add("tuples")
        items = [self.any_expr(scope, depth - 1) for _ in range(self.draw(st.integers(2, 3)))]
        name = self.fresh("tp")
        lines = self.flush() + [f"{name} = ({', '.join(t for t, _ in items)})"]
        scope.tuples[name] = tuple(k for _, k in items)
        if self.draw(st.booleans()):  # unpack it
            names = [self.fresh("u") for _ in items]
            lines.append(f"{', '.join(names)} = {name}")
            scope.vars.update({n: k for n, (_, k) in zip(names, items)})
        return lines

    def s_tuple_call(self, scope: Scope, depth: int) -> list[str]:
        dev = self.pick([d for d in self.devices if len(d.returns) == 2])
        self.features.add("device_call")
        names = [self.fresh("u") for _ in dev.returns]
        call = self.call(scope, dev, depth)
        lines = self.flush() + [f"{', '.join(names)} = {call}"]
        scope.vars.update(zip(names, dev.returns))
        return lines

    def device(self, name: str) -> Device:
        kinds = self.draw(st.lists(st.sampled_from(["i", "f", "b"]), min_size=1, max_size=3))
        scope = Scope({f"p{k}": kind for k, kind in enumerate(kinds)})
        lines = self.block(scope, 2, 3)
        returns = self.draw(st.lists(st.sampled_from(["i", "f", "b"]), min_size=1, max_size=2))

        def value() -> str:
            values = [self.expr(scope, k, 2) for k in returns]
            # numba unifies the returns: int64 with uint64 would give float64, so one type
            values = [f"np.int64({v})" if k == "i" else v for v, k in zip(values, returns)]
            return ", ".join(values)

        if self.draw(st.booleans()):  # an early return
            test = self.cond(scope, 2)
            early = value()
            lines += self.flush() + [f"if {test}:", f"    return {early}"]
        last = value()
        lines += self.flush() + [f"return {last}"]
        return Device(name, kinds, returns, lines)


def _edges(dtype: str) -> list:
    if dtype == "bool":
        return [False, True]
    if dtype.startswith("float"):
        info = np.finfo(dtype)
        return [0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, float(info.max),
                float(info.min), float(info.tiny), float(info.smallest_subnormal)]
    info = np.iinfo(dtype)
    return sorted({0, 1, -1 if info.min else 2, info.max, info.min, info.max - 1, 2, 7})


def values(dtype: str) -> st.SearchStrategy:
    """One input element of `dtype`: an edge value or any value of the dtype."""
    from hypothesis.extra.numpy import from_dtype
    return st.sampled_from(_edges(dtype)) | from_dtype(np.dtype(dtype))


@st.composite
def programs(draw: st.DrawFn, statements: int = 4, results: int = 12) -> Program:
    """A kernel: 1-4 inputs, up to two device functions, statements and result expressions."""
    dtypes = draw(st.lists(st.sampled_from(DTYPES), min_size=1, max_size=4))
    g = StatementGen(draw, [])
    if enabled("device_functions"):
        for k in range(draw(st.integers(0, 2))):
            g.devices.append(g.device(f"d{k}"))
            g.features.add("device_functions")
    scope = Scope({"i": "i"} | {f"x{k}": kind_of_dtype(d) for k, d in enumerate(dtypes)})
    body = [f"x{k} = a{k}[i]" for k in range(len(dtypes))]
    for _ in range(draw(st.integers(0, 2))):  # accumulators the statements may update
        kind = g.pick(["i", "f"])
        name = g.fresh("acc")
        body.append(f"{name} = {g.pick(['0', 'np.int64(7)'] if kind == 'i' else ['0.0', '1.5'])}")
        scope.accumulators[name] = kind
    for _ in range(draw(st.integers(0, statements))):
        body += g.statement(scope, 2)
    outs = [(name, kind) for name, kind in scope.accumulators.items()]
    for _ in range(draw(st.integers(1, results))):
        kind = g.pick(["i", "f", "b"])
        text = g.expr(scope, kind, 3)
        name = g.fresh("r")
        body += g.flush() + [f"{name} = {text}"]
        outs.append((name, kind))
    return Program(dtypes, g.devices, body, outs, g.features)


@st.composite
def cases(draw: st.DrawFn, statements: int = 4, results: int = 12) -> Case:
    program = draw(programs(statements, results))
    inputs = [np.array(draw(st.lists(values(d), min_size=THREADS, max_size=THREADS)), dtype=d)
              for d in program.dtypes]
    grid, block = draw(st.sampled_from(SHAPES))
    return Case(program, inputs, grid, block)
