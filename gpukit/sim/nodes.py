"""The few AST nodes the simulator's rewrites build (`transform`, `compiler`, `regions`,
`intervals`, `hoist`): names, calls of the runtime's functions, constants and assignments, each made as
Python's own parser would make it."""

from __future__ import annotations

import ast
from typing import Any


def name(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Load())


def store(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store())


def call(func: str, *args: ast.expr, keywords: list | None = None) -> ast.Call:
    return ast.Call(func=name(func), args=list(args), keywords=keywords or [])


def const(value: Any) -> ast.Constant:
    return ast.Constant(value=value)


def assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[store(target)], value=value)
