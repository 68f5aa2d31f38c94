"""Counting what each thread and block of a launch does, and judging it against a `Budget`.

`AccessCounter` reads the execution trace of a checked launch (`gpukit.trace.Trace`) and keeps
per-thread counts of distinct global elements read and written and per-block counts of global
atomics. An atomic counts as a read and a write of its element as well (it is both: an
`atomic.add(x, j, 0)` is a read in disguise). It counts elements, not bytes or sectors. Of shared
memory it keeps which arrays the launch both wrote and read: a shared array that is declared but
never used does not count towards `min_shared_bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..trace.metrics import bank_conflicts
from .spec import Case

BUDGET_TEXTS = {
    "global_reads_per_thread": "global reads per thread",
    "global_writes_per_thread": "global writes per thread",
    "global_atomics_per_block": "global atomics per block",
    "min_shared_bytes": "shared memory per block written and read (bytes, at least)",
    "max_shared_bytes": "shared memory per block (bytes, at most)",
    "max_bank_conflict_ways": "shared-memory bank conflicts (ways per warp access, at most)",
}
_GLOBAL = ("global", "const")


class AccessCounter:
    """Per-thread global reads/writes and per-block global atomics of one traced launch.

    Reads and writes count distinct elements per thread (a compiler keeps `a[i] * a[i]` in one
    register), atomics included; atomics also count operations. `shared_used_bytes` is the size
    of the shared arrays that some thread both wrote (or updated atomically) and read.
    """

    def __init__(self, case: Case, trace: Any):
        self.tpb = int(np.prod(case.block))
        self.threads = case.threads
        self.trace = trace
        col = trace.columns
        spaces = np.array([a.space in _GLOBAL for a in trace.arrays] or [False])
        is_global = spaces[col["array"]] if len(col["array"]) else np.zeros(0, bool)
        kind = col["kind"]
        thread = col["thread"]
        self.atomics = np.bincount(thread[is_global & (kind == 2)], minlength=self.threads)
        self._rows = {k: np.stack([thread[sel], col["array"][sel], col["element"][sel]], axis=1)
                      for k, sel in (("read", is_global & (kind != 1)),
                                     ("write", is_global & (kind != 0)))}
        self.shared_used_bytes = 0
        self.shared_unused: list[str] = []  # shared arrays touched but not both written and read
        for number, info in enumerate(trace.arrays):
            if info.space != "shared":
                continue
            kinds = set(np.unique(kind[col["array"] == number]).tolist())
            if kinds & {1, 2} and kinds & {0, 2}:
                self.shared_used_bytes += int(np.prod(info.shape)) * info.itemsize
            else:
                self.shared_unused.append(info.label)

    def _distinct(self, kind: str) -> np.ndarray:
        rows = self._rows[kind]
        if not len(rows):
            return np.zeros(self.threads, np.int64)
        rows = np.unique(rows, axis=0)
        return np.bincount(rows[:, 0], minlength=self.threads)

    @property
    def reads(self) -> np.ndarray:
        """Distinct global elements each thread read (by global linear thread id)."""
        return self._distinct("read")

    @property
    def writes(self) -> np.ndarray:
        """Distinct global elements each thread wrote."""
        return self._distinct("write")

    def per_block_atomics(self) -> np.ndarray:
        return self.atomics.reshape(-1, self.tpb).sum(axis=1)

    def bank_conflict_ways(self) -> tuple[int, str]:
        """The worst bank conflict of a warp-wide shared access (ways) and where it happened."""
        sites = bank_conflicts(self.trace).sites
        if not sites:
            return 1, ""
        worst = max(sites, key=lambda s: s.max_ways)
        return worst.max_ways, f"line {worst.lineno}: {worst.text}"


@dataclass(frozen=True)
class BudgetCheck:
    """One budget line: the limit, what the launch used, and who used the most."""

    name: str
    limit: int
    used: int
    ok: bool
    where: str = ""  # the worst thread or block, when over
    declared: int | None = None  # min_shared_bytes: the shared memory the kernel declared

    def describe(self) -> str:
        text = BUDGET_TEXTS[self.name]
        if self.name == "min_shared_bytes":
            unused = (f"; {self.declared} declared" if self.declared is not None
                      and self.declared != self.used else "")
            return f"{text}: {self.used} (needs >= {self.limit}{unused})"
        return f"{text}: {self.used} (limit {self.limit})"


def _thread_block(tid: int, case: Case) -> str:
    tpb = int(np.prod(case.block))
    b, t = divmod(int(tid), tpb)
    bx, by, _ = case.block
    gx, gy, _ = case.grid
    thread = (t % bx, (t // bx) % by, t // (bx * by))
    block = (b % gx, (b // gx) % gy, b // (gx * gy))
    return f"thread {thread} of block {block}"


def judge(limits: dict[str, int], counter: AccessCounter, shared_bytes: int,
          case: Case) -> list[BudgetCheck]:
    """Each limit of the case checked against the counts of one launch (`shared_bytes`: what the
    launch declared; `min_shared_bytes` counts only the part of it that was written and read)."""
    checks = []
    per_thread = {"global_reads_per_thread": counter.reads,
                  "global_writes_per_thread": counter.writes}
    for name, limit in limits.items():
        if name in per_thread:
            counts = per_thread[name]
            worst = int(np.argmax(counts))
            used = int(counts[worst])
            where = _thread_block(worst, case) if used > limit else ""
            checks.append(BudgetCheck(name, limit, used, used <= limit, where))
        elif name == "global_atomics_per_block":
            blocks = counter.per_block_atomics()
            worst = int(np.argmax(blocks))
            used = int(blocks[worst])
            gx, gy, _ = case.grid
            where = (f"block {(worst % gx, (worst // gx) % gy, worst // (gx * gy))}"
                     if used > limit else "")
            checks.append(BudgetCheck(name, limit, used, used <= limit, where))
        elif name == "min_shared_bytes":
            used = min(shared_bytes, counter.shared_used_bytes)
            checks.append(BudgetCheck(name, limit, used, used >= limit, declared=shared_bytes))
        elif name == "max_shared_bytes":
            checks.append(BudgetCheck(name, limit, shared_bytes, shared_bytes <= limit))
        elif name == "max_bank_conflict_ways":
            used, where = counter.bank_conflict_ways()
            checks.append(BudgetCheck(name, limit, used, used <= limit,
                                      where if used > limit else ""))
    return checks
