"""The expression half of the transform, and the AST builders both halves use.

`Expr` rewrites one expression for lock-step execution: array loads become masked, checked loads,
calls go through `gpukit.sim.calls`, `and`/`or`/`if-else` evaluate their right side only for the
lanes that need it, and integer division goes through a checked helper. `UNSUPPORTED` lists the
Python constructs kernels may not use.
"""

from __future__ import annotations

import ast
from typing import Any

from ..errors import UnsupportedKernelError

P = "_g_"  # prefix of every name the transform introduces
M = P + "m"  # the current mask
R = P + "r"  # lanes that returned from this function
RV = P + "rv"  # return value of a device function

UNSUPPORTED = {
    ast.Try: "try/except", ast.With: "with", ast.Raise: "raise", ast.Global: "global",
    ast.Nonlocal: "nonlocal", ast.Delete: "del", ast.ClassDef: "class definitions",
    ast.FunctionDef: "nested function definitions", ast.AsyncFunctionDef: "async functions",
    ast.Import: "import", ast.ImportFrom: "import", ast.Lambda: "lambda",
    ast.ListComp: "list comprehensions", ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions", ast.GeneratorExp: "generator expressions",
    ast.Yield: "yield", ast.YieldFrom: "yield", ast.Await: "await", ast.NamedExpr: ":=",
    ast.Starred: "*args unpacking", ast.JoinedStr: "f-strings",
}


# Binary operators that go through the runtime: integer division by zero is checked, and float
# division by zero gives inf/nan as on a GPU instead of Python's ZeroDivisionError.
_CHECKED_OPS = {ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Div: "truediv", ast.Pow: "pow"}


def _unsupported(node: ast.AST, what: str, fn: str, filename: str) -> UnsupportedKernelError:
    return UnsupportedKernelError(
        f"{what} is not supported inside a kernel by gpukit's simulator (nor by numba-cuda in "
        "most cases); rewrite it with plain arithmetic, if/for/while and array indexing",
        kernel=fn, lineno=getattr(node, "lineno", None), filename=filename)


def _name(id_: str, ctx: type = ast.Load) -> ast.Name:
    return ast.Name(id=id_, ctx=ctx())


def _call(func: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_name(func), args=list(args), keywords=[])


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(target, ast.Store)], value=value)


def _masked_lambda(body: ast.expr) -> ast.Lambda:
    """`lambda _g_m: body`: evaluates `body` later under a narrower mask."""
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=M)], kwonlyargs=[], kw_defaults=[],
                         defaults=[])
    return ast.Lambda(args=args, body=body)


class Expr(ast.NodeTransformer):
    """Rewrites an expression: masked loads, calls, short circuits, checked division."""

    def __init__(self, comp: Any):  # the statement compiler: gives error() and site()
        self.comp = comp

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for kind, what in UNSUPPORTED.items():
            if isinstance(node, kind):
                raise self.comp.error(node, what)
        return super().generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if not isinstance(node.ctx, ast.Load):
            raise self.comp.error(node, "this subscript target")
        value = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(node.slice, ast.Slice) or (
                isinstance(node.slice, ast.Tuple)
                and any(isinstance(e, ast.Slice) for e in node.slice.elts)):
            raise self.comp.error(node, "slicing an array inside a kernel (a[i, :])")
        site = self.comp.site(node)
        return _call(P + "ld", value, index, _name(M), ast.Constant(site))

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id == "range":
            raise self.comp.error(node, "range() outside a for loop header")
        func = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        keywords = [ast.keyword(arg=k.arg, value=self.visit(k.value)) for k in node.keywords]
        if any(k.arg is None for k in node.keywords):
            raise self.comp.error(node, "**kwargs unpacking")
        site = self.comp.site(node)
        return ast.Call(func=_name(P + "call"),
                        args=[func, _name(M), ast.Constant(site), *args], keywords=keywords)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        helper = P + ("land" if isinstance(node.op, ast.And) else "lor")
        values = [self.visit(v) for v in node.values]
        result = values[-1]
        for value in reversed(values[:-1]):
            result = _call(helper, _name(M), value, _masked_lambda(result))
        return result

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return _call(P + "not", operand)
        return ast.UnaryOp(op=node.op, operand=operand)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        return _call(P + "ifexp", _name(M), self.visit(node.test),
                     _masked_lambda(self.visit(node.body)), _masked_lambda(self.visit(node.orelse)))

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        for op in node.ops:
            if isinstance(op, (ast.In, ast.NotIn, ast.Is, ast.IsNot)):
                raise self.comp.error(node, f"the '{type(op).__name__}' comparison")
        left = self.visit(node.left)
        comparators = [self.visit(c) for c in node.comparators]
        if len(node.ops) == 1:
            return ast.Compare(left=left, ops=node.ops, comparators=comparators)
        pairs, prev = [], left
        for op, right in zip(node.ops, comparators):
            pairs.append(ast.Compare(left=prev, ops=[op], comparators=[right]))
            prev = right
        result = pairs[-1]
        for pair in reversed(pairs[:-1]):
            result = _call(P + "land", _name(M), pair, _masked_lambda(result))
        return result

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        left, right = self.visit(node.left), self.visit(node.right)
        helper = _CHECKED_OPS.get(type(node.op))
        if helper is None:
            return ast.BinOp(left=left, op=node.op, right=right)
        return _call(P + helper, left, right, _name(M), ast.Constant(self.comp.site(node)))
