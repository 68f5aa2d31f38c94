"""Kernels whose only sync points are block-wide barriers, run region by region.

A rewritten kernel with sync points is a generator: each thread runs to its next sync point and
is resumed later (`sync`). Resuming a Numba generator costs about as much as a few checked
memory accesses, per thread and per barrier. When every sync point of a kernel is a block-wide
barrier (`syncthreads`, `syncthreads_count/_and/_or`) and the control flow around the barriers is
uniform (the same for every thread of a block, as the CUDA Programming Guide requires of code
that reaches `__syncthreads()`), the kernel is split instead into barrier-free regions, each run
as a plain loop over the block's threads in `thread_at` order:

    region 1 (every thread, to the first barrier)    -> complete the barrier (sync.barrier)
    while <uniform test>:                            -> evaluated once per trip
        region 2 (every thread, to the next barrier) -> complete the barrier
        region 3 (every thread, to the end of the body)

Each thread runs from one barrier to the next as under generators, except that an if/while/for
around a barrier splits such a stretch in two (regions 3 and 2 above: every thread runs the end
of the body, then every thread the start of the next trip). Threads may interleave anywhere
between barriers on a GPU, so this is a legal schedule too and the checks find the same bugs;
a race across such a split may be reported from its other access. A variable a thread needs in
a later region (or in the next trip of a loop) is kept per thread between regions (`keep`,
`reload`: its bits, in a workspace buffer); site counters and the watchdog's tick count are
summed over the block instead. What is not split this way runs as generators: warp-level sync
points, barriers under a test the analysis cannot prove uniform (one that depends on the
thread's index or on memory), a `break`/`continue` that leaves a region, a kept value other than
a number or a bool (a tuple, a view: found when Numba types `keep`), and a kept variable that
numba-cuda types differently before and after a barrier (`kept_types_agree`; see
`SimKernel.without_regions`).
"""

from __future__ import annotations

import ast
import copy
import re

from numba.core import types

from . import intervals, sync
from . import layout as L
from . import nodes as N
from .transform import CTX, P

# whether uniform values are computed once by the block (`_block_level_values`); only
# `python -m benchmarks.regions` turns it off, to measure what it saves
BLOCK_LEVEL_VALUES = True
_ACCUMULATOR = re.compile(P + r"(n\d+|ticks)")  # transform.UnitRewriter.prologue's counters
# the transform's stand-ins for operators that compute as a GPU does (sim.arith, sim.conversions):
# pure, and they cannot fail
_OPERATORS = ("min_", "max_", "shl", "shr", "neg", "abs_", "round_int")
_BLOCK_UNIFORM_CALLS = frozenset(P + n for n in (
    "floordiv", "mod", *_OPERATORS, "shared_array", "dynamic_shared_array", "block_idx",
    "block_dim", "grid_dim", "gridsize", "warpsize", "len",
    *(f"{what}_{axis}" for what in ("bid", "bdim", "gdim") for axis in "xyz")))


def split(body: list[ast.stmt], fences: bool, frames: bool = True
          ) -> tuple[list[ast.stmt], tuple[str, ...]] | None:
    """The block-level body of a region-run kernel and the variables each thread keeps between
    regions, or None when the kernel must run as generators. `fences`: the kernel calls
    threadfence, so each thread's fence and acquire state is kept between regions too;
    `frames`: it calls device functions (see `sync.begin_thread`)."""
    if not _only_block_barriers(body) or not _structured(body, in_loop=False):
        return None
    # site counters and the watchdog's tick count sum over threads: one per block, not kept
    inits = [s for s in body if isinstance(s, ast.Assign) and len(s.targets) == 1
             and isinstance(s.targets[0], ast.Name) and _ACCUMULATOR.fullmatch(s.targets[0].id)]
    body = [s for s in body if s not in inits]
    stored = _stores(body)
    varying = _varying(body, stored)
    if not _uniform_control(body, varying):
        return None
    regions: list[tuple[list[ast.stmt], bool]] = []  # (statements, inside a block-level loop)
    block_level: set[str] = set()
    _collect(body, False, regions, block_level)
    region_stores = set().union(*(_stores(r) for r, _ in regions)) if regions else set()
    if block_level & region_stores:
        return None  # a name both a block-level loop variable and a thread's variable
    hoisted = _block_level_values(body, varying, stored, block_level) \
        if BLOCK_LEVEL_VALUES else set()
    kept = {n for n in _kept(regions, region_stores, body) if not _ACCUMULATOR.fullmatch(n)}
    kept -= hoisted
    index = {name: k for k, name in enumerate(sorted(kept))}
    builder = _Builder(index, fences, frames, hoisted, _thread_x_names(body),
                       (hoisted | block_level, stored))
    block = builder.block(body)
    intervals.mark_unraced(block, body)
    return inits + block, tuple(sorted(kept))


def kept_types_agree(kept: tuple[str, ...], typemap: dict) -> bool:
    """Whether every kept variable has one type in numba-cuda's typing of the kernel (`typemap`,
    from `compiler.cuda_typecheck`). A variable that is, say, float64 before a barrier and
    float32 after it could be kept as one type and read back as the other: such a kernel runs
    as generators, which keep every value in its own type."""
    for name in kept:
        if name.startswith(P):
            if re.match(P + r"i\d+_", name):
                return False  # a variable of an inlined device function: not in this typemap
            continue  # the rewrite's own counters, flags and single-assignment temporaries
        version = re.compile(re.escape(name) + r"(\.\d+)?")
        found = {types.unliteral(t) for k, t in typemap.items() if version.fullmatch(k)}
        if len(found) > 1:
            return False
    return True


# -- what may be split -------------------------------------------------------------------------
def _yield_site(stmt: ast.stmt) -> int | None:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield) \
            and isinstance(stmt.value.value, ast.Constant):
        return int(stmt.value.value.value)
    return None


def _put_kind(stmt: ast.stmt) -> int | None:
    """The sync kind of a `_g_put(...)` statement (see `sync.put`), else None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == P + "put":
        return stmt.value.args[1].value
    return None


def _has_yield(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Yield) for n in ast.walk(node))


def _only_block_barriers(body: list[ast.stmt]) -> bool:
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == P + "put":
            kind = node.args[1]
            if not isinstance(kind, ast.Constant) or not L.K_BARRIER <= kind.value <= L.K_SYNC_OR:
                return False
    return True


def _escapes(stmt: ast.stmt) -> bool:
    """Whether `stmt` holds a break/continue that leaves it (not one of a loop inside it)."""
    if isinstance(stmt, (ast.Break, ast.Continue)):
        return True
    if isinstance(stmt, (ast.For, ast.While)):
        return any(_escapes(s) for s in stmt.orelse)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    children = [s for f in ("body", "orelse", "finalbody") for s in getattr(stmt, f, [])]
    children += [s for h in getattr(stmt, "handlers", []) for s in h.body]
    return any(_escapes(s) for s in children)


def _structured(stmts: list[ast.stmt], in_loop: bool) -> bool:
    """Barriers only as statements of the body or of if/while/for-range bodies around them."""
    for stmt in stmts:
        if _yield_site(stmt) is not None:
            continue
        if not _has_yield(stmt):
            if isinstance(stmt, (ast.Break, ast.Continue)):
                if not in_loop:
                    return False
            elif _escapes(stmt):
                return False
            continue
        if isinstance(stmt, ast.If):
            if not (_structured(stmt.body, in_loop) and _structured(stmt.orelse, in_loop)):
                return False
        elif isinstance(stmt, ast.While):
            if stmt.orelse or not _structured(stmt.body, True):
                return False
        elif isinstance(stmt, ast.For):
            if stmt.orelse or not isinstance(stmt.target, ast.Name) or not _is_range(stmt.iter) \
                    or not _structured(stmt.body, True):
                return False
        else:
            return False
    return True


def _is_range(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id == "range" and not node.keywords and 1 <= len(node.args) <= 3


# -- uniformity --------------------------------------------------------------------------------
def _stores(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _uniform(node: ast.expr, varying: set[str]) -> bool:
    """Whether `node` has the same value in every thread of a block (conservatively)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id not in varying
    if isinstance(node, ast.Attribute):
        return _uniform(node.value, varying)
    if isinstance(node, ast.Subscript):  # element reads are calls (_g_ld): this is a tuple's
        return _uniform(node.value, varying) and _uniform(node.slice, varying)
    if isinstance(node, ast.Call):
        func = node.func
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        if root.id.startswith(P) and not (isinstance(func, ast.Name)
                                          and func.id in _BLOCK_UNIFORM_CALLS):
            return False  # the simulator's runtime: thread indices, memory, sync results
        if root.id in varying:
            return False
        return all(_uniform(a, varying) for a in node.args) \
            and all(_uniform(k.value, varying) for k in node.keywords)
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Tuple,
                         ast.List, ast.Slice)):
        return all(_uniform(c, varying) for c in ast.iter_child_nodes(node)
                   if isinstance(c, ast.expr))
    return False


def _varying(body: list[ast.stmt], stored: set[str]) -> set[str]:
    """The names that may differ between threads: the greatest fixed point of "assigned only
    uniform values, in uniform control flow"."""
    varying: set[str] = set()
    while True:
        before = len(varying)
        _mark(body, True, varying)
        if len(varying) == before:
            return varying


def _mark(stmts: list[ast.stmt], uniform_ctx: bool, varying: set[str]) -> None:
    def names(target: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}

    for stmt in stmts:
        if isinstance(stmt, ast.Assign):
            if not (uniform_ctx and _uniform(stmt.value, varying)):
                for t in stmt.targets:
                    varying |= names(t)
        elif isinstance(stmt, ast.AugAssign):
            if not (uniform_ctx and _uniform(stmt.value, varying)
                    and _uniform(stmt.target, varying)):
                varying |= names(stmt.target)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is None or not (uniform_ctx and _uniform(stmt.value, varying)):
                varying |= names(stmt.target)
        elif isinstance(stmt, ast.If):
            inner = uniform_ctx and _uniform(stmt.test, varying)
            _mark(stmt.body, inner, varying)
            _mark(stmt.orelse, inner, varying)
        elif isinstance(stmt, ast.While):
            inner = uniform_ctx and _uniform(stmt.test, varying) and _trips_alike(stmt, varying)
            _mark(stmt.body, inner, varying)
            _mark(stmt.orelse, inner, varying)
        elif isinstance(stmt, ast.For):
            inner = uniform_ctx and _uniform(stmt.iter, varying) and _trips_alike(stmt, varying)
            if not inner:
                varying |= names(stmt.target)
            _mark(stmt.body, inner, varying)
            _mark(stmt.orelse, inner, varying)
        else:  # anything else that stores (with, try, ...): its names vary
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    varying.add(node.id)
                elif isinstance(node, ast.NamedExpr):
                    varying |= names(node.target)
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)):
            for node in ast.walk(stmt):
                if isinstance(node, ast.NamedExpr):
                    varying |= names(node.target)


def _trips_alike(loop: ast.stmt, varying: set[str]) -> bool:
    """Whether every thread makes the same trips through `loop`: each break/continue of its
    own is under uniform tests only (a thread that leaves early has different values after)."""
    def walk(stmts: list[ast.stmt], uniform: bool) -> bool:
        for stmt in stmts:
            if isinstance(stmt, (ast.Break, ast.Continue)):
                if not uniform:
                    return False
            elif isinstance(stmt, ast.If):
                inner = uniform and _uniform(stmt.test, varying)
                if not (walk(stmt.body, inner) and walk(stmt.orelse, inner)):
                    return False
            elif isinstance(stmt, (ast.Try, ast.With)):
                inner = [s for f in ("body", "orelse", "finalbody") for s in getattr(stmt, f, [])]
                if not walk(inner, uniform):
                    return False
        return True
    return walk(loop.body, True)


def _uniform_control(stmts: list[ast.stmt], varying: set[str]) -> bool:
    """Whether every if/while/for around a barrier tests a block-uniform value."""
    for stmt in stmts:
        if not _has_yield(stmt) or _yield_site(stmt) is not None:
            continue
        test = stmt.iter if isinstance(stmt, ast.For) else stmt.test
        if not _uniform(test, varying):
            return False
        if not all(_uniform_control(b, varying) for b in (stmt.body, stmt.orelse)):
            return False
    return True


# -- values the block computes once ------------------------------------------------------------
_SAFE_CALLS = frozenset(P + n for n in (
    *_OPERATORS, "shared_array", "block_idx", "block_dim", "grid_dim", "gridsize", "warpsize",
    "len",
    *(f"{what}_{axis}" for what in ("bid", "bdim", "gdim") for axis in "xyz")))


def _runs(stmts: list[ast.stmt], runs: list[list[ast.stmt]]) -> None:
    """The statements between sync points and block-level if/while/for, as `_Builder.block`
    groups them into regions."""
    run: list[ast.stmt] = []
    for stmt in stmts:
        if _yield_site(stmt) is not None or isinstance(stmt, (ast.Break, ast.Continue)):
            runs.append(run)
            run = []
        elif _has_yield(stmt):
            runs.append(run)
            run = []
            _runs(stmt.body, runs)
            _runs(stmt.orelse, runs)
        else:
            run.append(stmt)
    runs.append(run)


def _block_value(stmt: ast.stmt, varying: set[str]) -> str | None:
    """The name `stmt` assigns when it is `name = <uniform value that cannot fail>`: the
    same in every thread, so the block computes it once (a division only by a nonzero
    constant, calls only of block coordinates and sizes)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)) or stmt.targets[0].id in varying:
        return None
    value = stmt.value
    if not _uniform(value, varying):
        return None
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            divides = name in (P + "floordiv", P + "mod") and len(node.args) == 4 \
                and isinstance(node.args[2], ast.Constant) and node.args[2].value not in (0, 0.0)
            if name not in _SAFE_CALLS and not divides:
                return None
    return stmt.targets[0].id


def _block_level_values(body: list[ast.stmt], varying: set[str], stored: set[str],
                        block_level: set[str]) -> set[str]:
    """Uniform variables the block can compute once, at block level, instead of every thread
    computing and keeping its own copy: each assignment of one is a `_block_value` that can
    move before or after its region's loop over threads without changing what any thread sees
    (`_split_run`), reading only constants, parameters and other such names. A tree reduction's
    `stride` is one: its `stride //= 2` region then needs no loop over threads."""
    runs: list[list[ast.stmt]] = []
    _runs(body, runs)
    names: set[str] = set()
    others: set[str] = set()
    for run in runs:
        for stmt in run:
            name = _block_value(stmt, varying)
            if name is None:
                others |= _stores([stmt])
            else:
                names.add(name)
    names -= others | block_level
    while True:  # an assignment that must stay among the threads' statements: not ours
        bad = {s.targets[0].id for run in runs for s in _split_run(run, names)[1]
               if _assigns_one_of(s, names)}
        bad |= {s.targets[0].id for run in runs for s in run  # reads a thread's value
                if _assigns_one_of(s, names) and _loads(s.value) & stored - names - block_level}
        if not bad:
            return names
        names -= bad


def _split_run(run: list[ast.stmt], names: set[str]
               ) -> tuple[list[ast.stmt], list[ast.stmt], list[ast.stmt]]:
    """`run` as (what the block computes before the threads' loop, what every thread runs,
    what the block computes after it): an assignment of one of `names` moves to the front when
    no statement before it that stays touches its name or writes what it reads, else to the
    back when no statement after it that stays does; otherwise it stays."""
    front: list[ast.stmt] = []
    stay: list[ast.stmt] = []
    for stmt in run:
        (front if _assigns_one_of(stmt, names) and _independent(stmt, stay) else stay).append(stmt)
    back: list[ast.stmt] = []
    rest: list[ast.stmt] = []
    for stmt in reversed(stay):
        (back if _assigns_one_of(stmt, names) and _independent(stmt, rest) else rest).append(stmt)
    return front, rest[::-1], back[::-1]


def _assigns_one_of(stmt: ast.stmt, names: set[str]) -> bool:
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
        and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in names


def _independent(assign: ast.Assign, others: list[ast.stmt]) -> bool:
    """Whether `assign` may trade places with `others`: none reads or writes its name, none
    writes a name its value reads."""
    name, reads = assign.targets[0].id, _loads(assign.value)
    return not any(name in _loads(o) | _stores([o]) or reads & _stores([o]) for o in others)


# -- regions and what they keep ----------------------------------------------------------------
def _collect(stmts: list[ast.stmt], in_loop: bool, regions: list, block_level: set[str]) -> None:
    pending: list[ast.stmt] = []
    for stmt in stmts:
        if _has_yield(stmt) and _yield_site(stmt) is None:
            if pending:
                regions.append((pending, in_loop))
                pending = []
            test = stmt.iter if isinstance(stmt, ast.For) else stmt.test
            regions.append(([ast.Expr(test)], in_loop))  # where the test reads its names
            if isinstance(stmt, ast.For):
                block_level.add(stmt.target.id)
            loop = in_loop or isinstance(stmt, (ast.For, ast.While))
            _collect(stmt.body, loop, regions, block_level)
            _collect(stmt.orelse, loop, regions, block_level)
        elif _yield_site(stmt) is not None:
            regions.append((pending, in_loop))
            pending = []
        elif not isinstance(stmt, (ast.Break, ast.Continue)):
            pending.append(stmt)
    if pending:
        regions.append((pending, in_loop))


def _kept(regions: list, region_stores: set[str], body: list[ast.stmt]) -> set[str]:
    """Names a thread stores in one region and may read, before storing them again, in
    another (or in a later trip of a block-level loop): each thread's value is kept between
    regions. Shared arrays are the same in every thread and are not kept."""
    shared = _shared_arrays(body)
    kept: set[str] = set()
    for k, (stmts, loop) in enumerate(regions):
        for name in _exposed(stmts, set())[0] & region_stores:
            stored_elsewhere = any(name in _stores(other) for j, (other, _) in enumerate(regions)
                                   if j != k)
            if stored_elsewhere or loop:
                kept.add(name)
    return kept - shared


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _exposed(stmts: list[ast.stmt], defined: set[str]) -> tuple[set[str], set[str]]:
    """(names `stmts` may read before writing them, names every path through them writes),
    given the names `defined` before them."""
    found: set[str] = set()
    defined = set(defined)
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            found |= _loads(stmt.test) - defined
            e1, d1 = _exposed(stmt.body, defined)
            e2, d2 = _exposed(stmt.orelse, defined)
            found |= e1 | e2
            defined |= d1 & d2
        elif isinstance(stmt, (ast.While, ast.For)):
            head = stmt.test if isinstance(stmt, ast.While) else stmt.iter
            found |= _loads(head) - defined
            inner = set(defined)
            if isinstance(stmt, ast.For):
                inner |= {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
            found |= _exposed(stmt.body, inner)[0] | _exposed(stmt.orelse, defined)[0]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) or not any(
                isinstance(getattr(stmt, f, None), list) for f in ("body", "handlers")):
            found |= _loads(stmt) - defined
            if isinstance(stmt, ast.AugAssign):
                found |= {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)} \
                    - defined
            defined |= _stores([stmt])
        else:  # try, with, ...: everything it reads may come first; it defines nothing surely
            found |= _loads(stmt) - defined
    return found, defined


def _shared_arrays(body: list[ast.stmt]) -> set[str]:
    """Names only ever assigned a shared array declaration (the same array in every thread)."""
    declared: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            value = node.value
            name = node.targets[0].id
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                    and value.func.id in (P + "shared_array", P + "dynamic_shared_array"):
                declared.add(name)
                continue
            other.add(name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            pass
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AnnAssign, ast.With)):
            other |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                      and isinstance(n.ctx, ast.Store)}
    return declared - other


# -- threads a region need not visit -------------------------------------------------------------
_SPAN_OPS = {ast.Lt: sync.SPAN_LT, ast.LtE: sync.SPAN_LE, ast.Eq: sync.SPAN_EQ,
             ast.GtE: sync.SPAN_GE, ast.Gt: sync.SPAN_GT}
_MIRRORED = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Eq: ast.Eq, ast.GtE: ast.LtE, ast.Gt: ast.Lt}


def _thread_x_names(body: list[ast.stmt]) -> set[str]:
    """Variables that hold the thread's threadIdx.x wherever they are read: assigned once, by
    a statement of the kernel's top level, `name = cuda.threadIdx.x`."""
    stores: dict[str, int] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    return {s.targets[0].id for s in body
            if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and stores[s.targets[0].id] == 1
            and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
            and s.value.func.id == P + "tid_x"}


# -- the block-level code ------------------------------------------------------------------------
_END = -1  # a region that ends the kernel
_ON = -2  # a region that ends at a block-level if/while/for: threads stay runnable


class _Builder:
    def __init__(self, index: dict[str, int], fences: bool, frames: bool, hoisted: set[str],
                 thread_x: set[str], block_names: tuple[set[str], set[str]]):
        self.index = index
        self.fences = fences
        self.frames = frames
        self.hoisted = hoisted
        self.tests = 0
        self.thread_x = thread_x  # variables holding threadIdx.x (`span`)
        self.block_names = block_names  # (names the block computes itself, any thread stores)

    def run(self, stmts: list[ast.stmt], exit_code: int) -> list[ast.stmt]:
        """A region, with the block-level values it assigns computed once by the block,
        before or after the threads' loop (`_block_level_values`, `_split_run`)."""
        front, threads, back = _split_run(stmts, self.hoisted)
        return front + self.region(threads, exit_code) + back

    def block(self, stmts: list[ast.stmt], top: bool = True) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        pending: list[ast.stmt] = []
        for stmt in stmts:
            site = _yield_site(stmt)
            if site is not None:
                kind = _put_kind(pending[-1]) if pending else None
                if kind is None:
                    raise ValueError("a barrier's yield without its operands")  # transform's
                if kind == L.K_BARRIER:
                    pending = pending[:-1]  # a plain barrier has no operand to leave
                out += self.run(pending, _ON)
                out.append(ast.Expr(N.call(P + "barrier", N.name(CTX), N.const(kind),
                                           N.const(self.fences))))
                pending = []
            elif not _has_yield(stmt):
                if isinstance(stmt, (ast.Break, ast.Continue)):
                    if pending:
                        out += self.run(pending, _ON)
                        pending = []
                    out.append(stmt)
                else:
                    pending.append(stmt)
            else:
                if pending:
                    out += self.run(pending, _ON)
                    pending = []
                out += self.construct(stmt)
        if top:
            out += self.run(pending, _END)
        elif pending:
            out += self.run(pending, _ON)
        return out

    def construct(self, stmt: ast.stmt) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        if isinstance(stmt, ast.For):
            args = []
            for a in stmt.iter.args:
                value, pre = self.evaluated(a)
                out += pre
                args.append(value)
            loop = ast.For(target=stmt.target, iter=N.call("range", *args),
                           body=self.block(stmt.body, False), orelse=[])
            return out + [loop]
        test, pre = self.evaluated(stmt.test)
        if isinstance(stmt, ast.If):
            return pre + [ast.If(test=test, body=self.block(stmt.body, False) or [ast.Pass()],
                                 orelse=self.block(stmt.orelse, False))]
        # while test: body  ->  while True: (test, in every thread); if not test: break; body
        leave = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=test), body=[ast.Break()],
                       orelse=[])
        return [ast.While(test=N.const(True), body=pre + [leave] + self.block(stmt.body, False),
                          orelse=[])]

    def evaluated(self, expr: ast.expr) -> tuple[ast.expr, list[ast.stmt]]:
        """A uniform test: evaluated once at block level when it calls nothing, else by every
        thread (its checks, counts and errors then happen as in the thread)."""
        if not any(isinstance(n, ast.Call) for n in ast.walk(expr)):
            return expr, []
        self.tests += 1
        name = f"{P}b{self.tests}"
        return N.name(name), self.region([N.assign(name, expr)], _ON)

    def span(self, stmts: list[ast.stmt]) -> tuple[int, ast.expr] | None:
        """(comparison, bound) when the region does nothing in a thread whose threadIdx.x
        fails a comparison with a value the block knows (`sync.thread_span`): its statements
        are one `if` with no `else` (and the loop's watchdog tick), tested by that comparison
        or by an `and` that starts with it; a tree reduction's `if tid < stride:`."""
        guards = [s for s in stmts if not (isinstance(s, ast.Assign)
                                           and isinstance(s.targets[0], ast.Name)
                                           and s.targets[0].id == P + "ticks")]
        if len(guards) != 1 or not isinstance(guards[0], ast.If) or guards[0].orelse:
            return None
        test = guards[0].test
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            test = test.values[0]
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and type(test.ops[0]) in _SPAN_OPS):
            return None
        left, op, right = test.left, type(test.ops[0]), test.comparators[0]
        if isinstance(right, ast.Name) and right.id in self.thread_x:
            left, op, right = right, _MIRRORED[op], left
        if not (isinstance(left, ast.Name) and left.id in self.thread_x
                and self.known_to_block(right)):
            return None
        return _SPAN_OPS[op], right

    def known_to_block(self, expr: ast.expr) -> bool:
        """Whether the block can evaluate `expr` before its threads run, to the value every
        thread would: no call, and only names it computes itself or that no thread assigns
        (parameters, globals)."""
        own, stored = self.block_names
        for node in ast.walk(expr):
            if isinstance(node, ast.Call):
                return False
            if isinstance(node, ast.Name) and (node.id.startswith(P)
                                               or (node.id in stored and node.id not in own)):
                return False
        return True

    def region(self, stmts: list[ast.stmt], exit_code: int) -> list[ast.stmt]:
        """Every runnable thread of the block runs `stmts`, one after the other."""
        if not stmts and exit_code == _ON:
            return []  # nothing to run (two barriers in a row): every thread stays as it is
        stmts = _flushed(copy.deepcopy(stmts))
        tail: list[ast.stmt] = []  # the kernel's last counts: added once, by the block
        while exit_code == _END and stmts and _is_flush(stmts[-1]):
            tail.insert(0, stmts.pop())
        reads, surely = _exposed(stmts, set())
        stores = _stores(stmts)
        # a thread's own value first: what it reads, and what it may leave unwritten here
        needed = reads | (stores - surely)
        nv = N.const(len(self.index))
        reload = [N.assign(n, N.call(P + "reload", N.name(CTX), nv, N.const(k), N.name(n)))
                  for n, k in sorted(self.index.items()) if n in needed]
        keep = [] if exit_code == _END else [
            ast.Expr(N.call(P + "keep", N.name(CTX), nv, N.const(k), N.name(n)))
            for n, k in sorted(self.index.items()) if n in stores]
        if exit_code != _ON:
            finish = f"{P}save_thread({CTX}, {exit_code})"
        else:
            finish = f"{P}pause_thread({CTX})" if self.fences else "pass"
        if self.fences:
            setup, start = "", f"{P}restore_thread({CTX}, {P}lt)"
        else:  # what is the same for the block's threads, read once (sync.begin_thread_in)
            setup = f"{P}row, {P}first = {P}is_row({CTX}), {P}first_thread({CTX})\n"
            start = f"{P}begin_thread_in({CTX}, {P}lt, {P}row, {P}first, False, {self.frames})"
        visit, beyond = f"for {P}k in range({CTX}[{L.TPB}]):", ""
        span = self.span(stmts)
        if span is not None:  # visit only the threads that can pass the region's guard
            visit = (f"{P}lo, {P}hi = {P}thread_span({CTX}, {span[0]}, {ast.unparse(span[1])})"
                     f"\nfor {P}k in range({P}lo, {P}hi):")
            beyond = f"{P}alive = {P}alive_beyond({CTX}, {P}alive, {P}lo, {P}hi)\n"
        template = ast.parse(
            f"{P}alive = 0\n"
            f"{P}threads = {P}block_threads({CTX})\n"
            f"{setup}"
            f"{visit}\n"
            f"    {P}lt, {P}runs = {P}nth_runnable({P}threads, {P}k)\n"
            f"    if {P}runs:\n"
            f"        {start}\n"
            f"        {P}ret = False\n"
            f"        while True:\n"
            f"            break\n"
            f"        if {P}ret:\n"
            f"            {P}save_thread({CTX}, -1)\n"
            f"        else:\n"
            f"            {P}alive += 1\n"
            f"            {finish}\n"
            f"{beyond}"
            f"if {P}alive == 0:\n"
            f"    return\n").body
        loop = next(s for s in template if isinstance(s, ast.For))
        per_thread = loop.body[1].body
        per_thread[1:1] = reload
        wrapper = per_thread[len(reload) + 2]
        wrapper.body[0:0] = _returns_leave(stmts)
        per_thread[len(reload) + 3:len(reload) + 3] = keep
        if exit_code == _END:
            return template[:template.index(loop) + 1] + tail
        return template


def _flushed(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """A site counter summed over the block's threads starts again at 0 once added to the
    launch's (`runtime.count`, before a `return` and at the end), so no count is added twice."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        for attr in ("body", "orelse", "finalbody"):
            if isinstance(getattr(stmt, attr, None), list):
                setattr(stmt, attr, _flushed(getattr(stmt, attr)))
        out.append(stmt)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == P + "count":
            out.append(N.assign(stmt.value.args[3].id, N.const(0)))
    return out


def _is_flush(stmt: ast.stmt) -> bool:
    """Whether `stmt` adds a site counter to the launch's, or starts it again at 0 (`_flushed`)."""
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) \
            and stmt.value.func.id == P + "count"
    return isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) \
        and _ACCUMULATOR.fullmatch(stmt.targets[0].id) is not None \
        and isinstance(stmt.value, ast.Constant)


def _returns_leave(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """`return` becomes: note it, leave the region's wrapper loop (and every loop around it)."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            out += [N.assign(P + "ret", N.const(True)), ast.Break()]
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(stmt)  # an inner function's returns are its own
            continue
        for attr in ("body", "orelse", "finalbody"):
            if isinstance(getattr(stmt, attr, None), list):
                setattr(stmt, attr, _returns_leave(getattr(stmt, attr)))
        for handler in getattr(stmt, "handlers", []):
            handler.body = _returns_leave(handler.body)
        out.append(stmt)
        if isinstance(stmt, (ast.For, ast.While)) and _left_by_return(stmt):
            out.append(ast.If(test=N.name(P + "ret"), body=[ast.Break()], orelse=[]))
    return out


def _left_by_return(loop: ast.stmt) -> bool:
    return any(isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
               and n.targets[0].id == P + "ret" for n in ast.walk(loop))
