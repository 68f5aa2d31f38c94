"""Rewrite a kernel's Python source into lock-step code over all threads of a group of blocks.

Every value a thread computes becomes a numpy vector with one lane per thread (or stays a plain
scalar while all threads agree). Control flow becomes masks: an `if` runs its body for the lanes
whose condition holds, loops run until no lane wants another iteration, and `return`, `break` and
`continue` retire lanes from the mask. Array reads and writes, calls, integer division and short
circuits go through the runtime (`gpukit.sim.runtime`), which applies the mask and the checks.

The generated functions keep the original file name and line numbers, so tracebacks and error
messages point at the learner's own lines. What Python constructs a kernel may not use is listed in
`gpukit.sim.expressions.UNSUPPORTED`; anything else is rejected at compile time with the line that uses it.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import UnsupportedKernelError
from .expressions import (
    _CHECKED_OPS,
    RV,
    UNSUPPORTED,
    Expr,
    M,
    P,
    R,
    _assign,
    _call,
    _name,
    _unsupported,
)


@dataclass
class Site:
    """A place in the kernel source that the runtime may report: its line and its text."""

    lineno: int
    text: str
    filename: str
    function: str
    label: str | None = None  # the variable an array declared here is assigned to


# Every site of every transformed function; the generated code refers to sites by index here.
SITES: list[Site] = []


@dataclass
class Transformed:
    """A kernel or device function rewritten for the simulator."""

    name: str
    filename: str
    firstlineno: int
    is_device: bool
    source: str  # the generated Python source, for debugging (`explain`)
    code: object  # compiled factory module code
    freevars: tuple[str, ...]
    sites: list[Site] = field(default_factory=list)
    written: frozenset[str] = frozenset()  # parameters the function may write through


_ATOMIC_NAMES = {"add", "sub", "max", "min", "nanmax", "nanmin", "exch", "cas",
                 "compare_and_swap", "and_", "or_", "xor", "inc", "dec"}
_PURE_BUILTINS = {"len", "min", "max", "abs", "int", "float", "bool", "round", "range", "print"}


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _written_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names the function may write array elements through (conservatively).

    Element stores, atomics, arguments of calls to plain-named functions (device functions may
    write), and aliases all count. The simulator skips race bookkeeping for arrays that no
    parameter writes, since a race needs a write.
    """
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            names.add(_root(node) or "")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _ATOMIC_NAMES and node.args \
                    and isinstance(func.value, ast.Attribute) and func.value.attr == "atomic":
                names.add(_root(node.args[0]) or "")
            elif isinstance(func, ast.Name) and func.id not in _PURE_BUILTINS:
                names.update(_root(a) or "" for a in node.args)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            names.add(node.value.id)
    return frozenset(names - {""})


def _retires(nodes: list[ast.stmt], depth: int = 0) -> bool:
    """Whether these statements can retire lanes of the enclosing block: a `return` anywhere, or a
    `break`/`continue` that is not inside a nested loop."""
    for node in nodes:
        if isinstance(node, ast.Return):
            return True
        if isinstance(node, (ast.Break, ast.Continue)) and depth == 0:
            return True
        if isinstance(node, (ast.For, ast.While)) and _retires(node.body, depth + 1):
            return True
        if isinstance(node, ast.If) and (_retires(node.body, depth)
                                         or _retires(node.orelse, depth)):
            return True
    return False


class _Compiler:
    """Compiles one function body into masked statements."""

    def __init__(self, fn: ast.FunctionDef, filename: str, source: str, is_device: bool):
        self.fn = fn
        self.filename = filename
        self.source = source
        self.is_device = is_device
        self.sites: list[Site] = []
        self.counter = 0
        self.loops: list[tuple[str, str]] = []  # (broken lanes var, continued lanes var)
        self.expr = Expr(self)

    # -- helpers ---------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{P}{base}{self.counter}"

    def error(self, node: ast.AST, what: str) -> UnsupportedKernelError:
        return _unsupported(node, what, self.fn.name, self.filename)

    def segment(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.source, node) or ast.unparse(node)
        return " ".join(text.split())

    def site(self, node: ast.AST) -> int:
        if isinstance(node, ast.While):  # a loop is named by its header, not its whole body
            text = f"while {self.segment(node.test)}:"
        elif isinstance(node, ast.For):
            text = f"for {self.segment(node.target)} in {self.segment(node.iter)}:"
        else:
            text = self.segment(node)
        SITES.append(Site(node.lineno, text, self.filename, self.fn.name))
        self.sites.append(SITES[-1])
        return len(SITES) - 1

    def e(self, node: ast.expr) -> ast.expr:
        return self.expr.visit(node)

    def tick(self, node: ast.AST) -> ast.stmt:
        return ast.Expr(_call(P + "tick", ast.Constant(self.site(node))))

    # -- blocks ----------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """Compile a list of statements; after one that can retire lanes, guard the rest."""
        out: list[ast.stmt] = []
        for i, stmt in enumerate(stmts):
            compiled = self.stmt(stmt)
            for node in compiled:
                ast.copy_location(node, stmt)
            out.extend(compiled)
            rest = stmts[i + 1:]
            if rest and _retires([stmt]):
                guarded = self.block(rest)
                test = _call(P + "any", _name(M))
                out.append(ast.copy_location(ast.If(test=test, body=guarded or [ast.Pass()],
                                                    orelse=[]), rest[0]))
                return out
        return out

    def restore(self, saved: str) -> ast.stmt:
        """`_g_m = saved & ~returned & ~broken & ~continued` for the innermost loop."""
        args: list[ast.expr] = [_name(saved), _name(R)]
        if self.loops:
            args += [_name(self.loops[-1][0]), _name(self.loops[-1][1])]
        return _assign(M, _call(P + "restore", *args))

    # -- statements ------------------------------------------------------------------------
    def stmt(self, node: ast.stmt) -> list[ast.stmt]:
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, UNSUPPORTED.get(type(node), f"the {type(node).__name__} "
                                                               "statement"))
        return method(node)

    def s_Pass(self, node: ast.Pass) -> list[ast.stmt]:
        return []

    def s_Expr(self, node: ast.Expr) -> list[ast.stmt]:
        if isinstance(node.value, ast.Constant):  # a docstring or a bare constant
            return []
        return [ast.Expr(self.e(node.value))]

    def s_Assign(self, node: ast.Assign) -> list[ast.stmt]:
        value = self.e(node.value)
        if isinstance(node.value, ast.Call) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            SITES[value.args[2].value].label = node.targets[0].id  # name arrays in messages
        if len(node.targets) == 1:
            return self.store(node.targets[0], value)
        tmp = self.fresh("v")
        out: list[ast.stmt] = [_assign(tmp, value)]
        for target in node.targets:
            out += self.store(target, _name(tmp))
        return out

    def s_AnnAssign(self, node: ast.AnnAssign) -> list[ast.stmt]:
        if node.value is None:
            return []
        return self.store(node.target, self.e(node.value))

    def store(self, target: ast.expr, value: ast.expr) -> list[ast.stmt]:
        if isinstance(target, ast.Name):
            return [_assign(target.id, _call(P + "merge", _name(M), value, _name(target.id)))]
        if isinstance(target, ast.Subscript):
            if isinstance(target.slice, ast.Slice):
                raise self.error(target, "assigning to a slice inside a kernel")
            site = self.site(target)
            return [ast.Expr(_call(P + "st", self.e(target.value), self.e(target.slice),
                                   value, _name(M), ast.Constant(site)))]
        if isinstance(target, (ast.Tuple, ast.List)):
            tmp = self.fresh("t")
            out: list[ast.stmt] = [_assign(tmp, _call(P + "unpack", value,
                                                      ast.Constant(len(target.elts))))]
            for i, elt in enumerate(target.elts):
                item = ast.Subscript(value=_name(tmp), slice=ast.Constant(i), ctx=ast.Load())
                out += self.store(elt, item)
            return out
        raise self.error(target, f"assigning to {type(target).__name__.lower()} targets")

    def s_AugAssign(self, node: ast.AugAssign) -> list[ast.stmt]:
        target = node.target
        if isinstance(target, ast.Name):
            expr = ast.BinOp(left=_name(target.id), op=node.op, right=node.value)
            ast.copy_location(expr, node)
            return self.store(target, self.e(expr))
        if isinstance(target, ast.Subscript):
            arr, idx = self.fresh("a"), self.fresh("i")
            site = self.site(target)
            load = _call(P + "ld", _name(arr), _name(idx), _name(M), ast.Constant(site))
            helper = _CHECKED_OPS.get(type(node.op))
            if helper:
                value = _call(P + helper, load, self.e(node.value), _name(M),
                              ast.Constant(self.site(node)))
            else:
                value = ast.BinOp(left=load, op=node.op, right=self.e(node.value))
            return [_assign(arr, self.e(target.value)), _assign(idx, self.e(target.slice)),
                    ast.Expr(_call(P + "st", _name(arr), _name(idx), value, _name(M),
                                   ast.Constant(site)))]
        raise self.error(target, f"augmented assignment to {type(target).__name__.lower()}")

    def s_If(self, node: ast.If) -> list[ast.stmt]:
        cond, saved = self.fresh("c"), self.fresh("s")
        out: list[ast.stmt] = [
            _assign(cond, _call(P + "cond", self.e(node.test), _name(M),
                                ast.Constant(self.site(node.test)))),
            _assign(saved, _name(M)),
            _assign(M, _call(P + "and", _name(saved), _name(cond))),
            ast.If(test=_call(P + "any", _name(M)), body=self.block(node.body) or [ast.Pass()],
                   orelse=[]),
        ]
        if node.orelse:
            out += [_assign(M, _call(P + "andnot", _name(saved), _name(cond))),
                    ast.If(test=_call(P + "any", _name(M)),
                           body=self.block(node.orelse) or [ast.Pass()], orelse=[])]
        out.append(self.restore(saved))
        return out

    def s_Return(self, node: ast.Return) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        if node.value is not None:
            if not self.is_device:
                raise self.error(node, "returning a value from a kernel (kernels return None)")
            out.append(_assign(RV, _call(P + "merge", _name(M), self.e(node.value), _name(RV))))
        helper = P + ("retire" if self.is_device else "exit")
        out += [_assign(R, _call(helper, _name(R), _name(M))), _assign(M, ast.Constant(False))]
        return out

    def s_Break(self, node: ast.Break) -> list[ast.stmt]:
        broken = self.loops[-1][0]
        return [_assign(broken, _call(P + "retire", _name(broken), _name(M))),
                _assign(M, ast.Constant(False))]

    def s_Continue(self, node: ast.Continue) -> list[ast.stmt]:
        cont = self.loops[-1][1]
        return [_assign(cont, _call(P + "retire", _name(cont), _name(M))),
                _assign(M, ast.Constant(False))]

    def s_Assert(self, node: ast.Assert) -> list[ast.stmt]:
        msg = self.e(node.msg) if node.msg is not None else ast.Constant(None)
        return [ast.Expr(_call(P + "assert", _name(M), self.e(node.test), msg,
                               ast.Constant(self.site(node))))]

    def loop(self, node: ast.stmt, setup: list[ast.stmt], test: ast.expr | None,
             head: list[ast.stmt], step: list[ast.stmt]) -> list[ast.stmt]:
        """The masked loop skeleton shared by `while` and `for ... in range(...)`.

        Each iteration the mask is the entry mask minus retired lanes (returned, broken, or out of
        iterations); lanes whose test fails retire for good. `continue` lanes come back next turn.
        """
        if node.orelse:
            raise self.error(node, "an else clause on a loop")
        saved, broken, cont, before = (self.fresh("s"), self.fresh("b"), self.fresh("k"),
                                       self.fresh("w"))
        self.loops.append((broken, cont))
        body = self.block(node.body)
        self.loops.pop()
        iteration: list[ast.stmt] = [
            _assign(M, _call(P + "restore", _name(saved), _name(R), _name(broken))),
            ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_call(P + "any", _name(M))),
                   body=[ast.Break()], orelse=[]),
        ]
        if test is not None:
            cond = self.fresh("c")
            iteration += [
                _assign(before, _name(M)),
                _assign(cond, _call(P + "cond", test, _name(M), ast.Constant(self.site(node)))),
                _assign(M, _call(P + "and", _name(before), _name(cond))),
                _assign(broken, _call(P + "retire", _name(broken),
                                      _call(P + "andnot", _name(before), _name(cond)))),
                ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_call(P + "any", _name(M))),
                       body=[ast.Break()], orelse=[]),
            ]
        iteration += [_assign(cont, ast.Constant(False)), *head, *body, *step,
                      self.tick(node)]
        return [_assign(saved, _name(M)), _assign(broken, ast.Constant(False)), *setup,
                ast.While(test=ast.Constant(True), body=iteration, orelse=[]),
                _assign(M, _call(P + "restore", _name(saved), _name(R)))]

    def s_While(self, node: ast.While) -> list[ast.stmt]:
        return self.loop(node, [], self.e(node.test), [], [])

    def s_For(self, node: ast.For) -> list[ast.stmt]:
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3):
            raise self.error(node, "for loops over anything but range(...)")
        args = [self.e(a) for a in it.args]
        if len(args) == 1:
            args = [ast.Constant(0), *args]
        if len(args) == 2:
            args.append(ast.Constant(1))
        counter, stop, stride = self.fresh("n"), self.fresh("e"), self.fresh("d")
        site = ast.Constant(self.site(it))
        setup = [_assign(counter, args[0]), _assign(stop, args[1]),
                 _assign(stride, _call(P + "step", args[2], _name(M), site))]
        test = _call(P + "in_range", _name(counter), _name(stop), _name(stride))
        head = self.store(node.target, _name(counter))
        # retired lanes may step too: the hidden counter is read only by active lanes
        step = [_assign(counter, ast.BinOp(left=_name(counter), op=ast.Add(),
                                           right=_name(stride)))]
        return self.loop(node, setup, test, head, step)


def _local_names(fn: ast.FunctionDef) -> list[str]:
    params = {a.arg for a in fn.args.args}
    names: dict[str, None] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) \
                and node.id not in params:
            names[node.id] = None
    return list(names)


def function_source(func: Callable) -> tuple[ast.FunctionDef, str, str, int]:
    """The FunctionDef of `func`, its dedented source, file name and first line."""
    try:
        lines, firstlineno = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise UnsupportedKernelError(
            f"cannot read the source of {getattr(func, '__name__', func)!r} ({exc}); the simulator "
            "needs kernels defined in a file or a notebook cell, not built with exec()",
            kernel=getattr(func, "__name__", None)) from exc
    source = textwrap.dedent("".join(lines))
    tree = ast.parse(source)
    ast.increment_lineno(tree, firstlineno - 1)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise UnsupportedKernelError(f"{func!r} is not defined with def", kernel=str(func))
    # get_source_segment needs positions relative to `source`: keep a padded copy
    padded = "\n" * (firstlineno - 1) + source
    return fn, padded, func.__code__.co_filename, firstlineno


def transform(func: Callable, is_device: bool = False) -> Transformed:
    """Rewrite `func` (a plain Python function written against numba.cuda) for the simulator."""
    fn, source, filename, firstlineno = function_source(func)
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        raise _unsupported(fn, "*args, **kwargs and keyword-only parameters", fn.name, filename)
    comp = _Compiler(fn, filename, source, is_device)
    prologue: list[ast.stmt] = [_assign(R, ast.Constant(False))]
    if not is_device:
        prologue.insert(0, _assign(M, _call(P + "entry_mask")))
    else:
        prologue.append(_assign(RV, _name(P + "U")))
    prologue += [_assign(n, _name(P + "U")) for n in _local_names(fn)]
    body = comp.block(fn.body)
    params = ([ast.arg(arg=M)] if is_device else []) + [ast.arg(arg=x.arg) for x in a.args]
    epilogue: list[ast.stmt] = [ast.Return(value=_name(RV))] if is_device else []
    new_fn = ast.FunctionDef(
        name=fn.name,
        args=ast.arguments(posonlyargs=[], args=params, kwonlyargs=[], kw_defaults=[],
                           defaults=[]),
        body=prologue + body + epilogue, decorator_list=[], returns=None, type_params=[])
    ast.copy_location(new_fn, fn)
    for node in prologue + epilogue:
        ast.copy_location(node, fn)
    freevars = tuple(func.__code__.co_freevars)
    factory = ast.FunctionDef(
        name=P + "factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=v) for v in freevars],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[new_fn, ast.Return(value=_name(fn.name))], decorator_list=[], returns=None,
        type_params=[])
    ast.copy_location(factory, fn)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec")
    return Transformed(fn.name, filename, firstlineno, is_device, ast.unparse(module), code,
                       freevars, comp.sites, _written_names(fn))
