"""Counting what each thread and block of a launch does, and judging it against a `Budget`.

`AccessCounter` is a light trace recorder for `CPUBackend.launch_kernel(..., trace=...)`: the
simulator calls its `record` on every array access (and `finish` at the end), and it keeps
per-thread counts of distinct global elements read and written and per-block counts of global
atomics, without storing the events as `gpukit.trace` does. It counts elements, not bytes or
sectors, and does not look at shared or local memory (shared memory use comes from
`LaunchRecord.stats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .spec import Case

BUDGET_TEXTS = {
    "global_reads_per_thread": "global reads per thread",
    "global_writes_per_thread": "global writes per thread",
    "global_atomics_per_block": "global atomics per block",
    "min_shared_bytes": "shared memory per block (bytes, at least)",
    "max_shared_bytes": "shared memory per block (bytes, at most)",
}


class AccessCounter:
    """Per-thread global reads/writes and per-block global atomics of one launch.

    Reads and writes count distinct elements per thread (a compiler keeps `a[i] * a[i]` in one
    register); atomics count operations.
    """

    def __init__(self, case: Case):
        self.tpb = int(np.prod(case.block))
        self.threads = case.threads
        self._arrays: dict[int, int] = {}
        self._touches: dict[str, list[np.ndarray]] = {"read": [], "write": []}
        self.atomics = np.zeros(self.threads, np.int64)
        self._counts: dict[str, np.ndarray] = {}

    def record(self, group: Any, array: Any, kind: str, lanes: Any, flat: Any,
               site: int) -> None:
        if array.kind not in ("global", "const"):
            return
        tids = group.gtid if lanes is None else group.gtid[lanes]
        if kind == "atomic":
            self.atomics += np.bincount(tids, minlength=self.threads)
            return
        which = self._arrays.setdefault(id(array.buf), len(self._arrays))
        rows = np.empty((len(tids), 3), np.int64)
        rows[:, 0], rows[:, 1], rows[:, 2] = tids, which, flat
        self._touches[kind].append(rows)
        self._counts.pop(kind, None)

    def finish(self, record: Any) -> AccessCounter:
        """Called by the simulator when the launch ends; the counter is its own result."""
        return self

    def _distinct(self, kind: str) -> np.ndarray:
        if kind not in self._counts:
            parts = self._touches[kind]
            counts = np.zeros(self.threads, np.int64)
            if parts:
                rows = np.unique(np.concatenate(parts), axis=0)
                counts = np.bincount(rows[:, 0], minlength=self.threads)
            self._counts[kind] = counts
        return self._counts[kind]

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


@dataclass(frozen=True)
class BudgetCheck:
    """One budget line: the limit, what the launch used, and who used the most."""

    name: str
    limit: int
    used: int
    ok: bool
    where: str = ""  # the worst thread or block, when over

    def describe(self) -> str:
        text = BUDGET_TEXTS[self.name]
        if self.name == "min_shared_bytes":
            return f"{text}: {self.used} (needs >= {self.limit})"
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
    """Each limit of the case checked against the counts of one launch."""
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
            checks.append(BudgetCheck(name, limit, shared_bytes, shared_bytes >= limit))
        elif name == "max_shared_bytes":
            checks.append(BudgetCheck(name, limit, shared_bytes, shared_bytes <= limit))
    return checks
