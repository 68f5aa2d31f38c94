"""The verdict of `check`: what passed, what failed and why, a pattern, and a hint.

`RunResult` is one launch of the learner's kernel and what happened; `CheckResult` holds every
run; its `report` is plain text with no timings or file paths, so a
notebook's stored output stays the same from one execution to the next. Nothing here runs
kernels.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from .budgets import BudgetCheck
from .spec import TAG_TEXTS, Case, ExerciseSpec

WIDTH = 96


@dataclass
class RunResult:
    """One launch of the learner's kernel: a case under one schedule, and what happened."""

    case: Case
    schedule: str  # "ordered" or "shuffle"
    seed: int | None  # the shuffle's seed
    passed: bool
    kind: str  # "ok", an error class name, "mismatch", "unwritten", "input_modified", "budget"
    message: str = ""
    budgets: list[BudgetCheck] = field(default_factory=list)
    facts: dict = field(default_factory=dict)  # what happened: "cause", "unwritten", "wrong", ...

    @property
    def cause(self) -> str | None:
        """What the evidence shows went wrong ("race:two_lines", "oob:shared", ...), if known."""
        return self.facts.get("cause")

    @property
    def schedule_text(self) -> str:
        return self.schedule if self.seed is None else f"shuffle (seed {self.seed})"

HINTS = {
    "OutOfBoundsError": "Some thread indexed past the end of an array. Blocks come whole, so a "
    "launch usually has more threads than elements: guard each access (`if i < n:`) and check "
    "the index arithmetic at the edges.",
    "StreamRaceError": "Two operations on different streams (copies or kernels) touched the "
    "same memory with nothing ordering them: on a GPU they may run at the same time. Put work "
    "that must run in order on one stream, or record an event on the first stream and make "
    "the second wait for it (ev = s1.record_event(); s2.wait_event(ev)).",
    "RaceConditionError": "Two threads touched the same element with nothing ordering them, at "
    "least one writing. Inside a block, put cuda.syncthreads() between the write and the other "
    "access; for updates many threads make to one place, use cuda.atomic.add.",
    "UninitializedMemoryError": "A thread read memory no one had written yet. Shared memory "
    "starts empty in every block: write it, then cuda.syncthreads(), then read. Outputs start "
    "uninitialised too: do not read out[...] before writing it.",
    "BarrierError": "Not every thread of a block reached the same cuda.syncthreads(). Keep "
    "barriers outside `if` branches that only some threads take (guard the work, not the "
    "barrier), and do not `return` early before a barrier.",
    "KernelTimeoutError": "The kernel did not finish: a loop never ends for some thread. Check "
    "the loop's condition and that its variable changes every iteration.",
    "TraceTooLargeError": "The kernel made millions of memory accesses, far more than the "
    "exercise needs: a loop probably never ends (check its condition, and that its variable "
    "changes every iteration).",
    "LaunchConfigError": "The launch asks for more than the device allows (often too much shared "
    "memory): size arrays from the factory's arguments.",
    "KernelArithmeticError": "A thread divided an integer by zero.",
    "UnsupportedKernelError": "The kernel uses Python the GPU cannot run; keep to numbers, "
    "arrays, loops and ifs.",
    "unwritten": "Some output elements were never written: every element needs exactly one "
    "thread that writes it.",
    "mismatch": "The kernel ran cleanly but computed different numbers: compare your formula "
    "with the goal on the element shown.",
    "input_modified": "Treat inputs as read-only; keep partial results in registers or shared "
    "memory.",
    "budget": "The answer is right, but the kernel does more global-memory work than the "
    "exercise allows: reuse data through shared memory or registers instead of re-reading it.",
    "factory": "make_kernel(...) must define the kernel inside it and return it.",
    "signature": "Keep the kernel's parameters as the skeleton gives them.",
}

CAUSE_HINTS = {
    "race:blocks": "Threads of different blocks touched the same element, and no barrier can "
    "order them: give each block its own elements (index with the global index), or combine "
    "the blocks' results with cuda.atomic.add.",
    "race:atomic_and_plain": "An atomic and a plain access touched the same element. An atomic "
    "is a write too, even cuda.atomic.add(x, j, 0): read inputs with plain reads, and update a "
    "result that several threads share only with atomics.",
    "race:same_element": "Several threads of one block update the same element with the same "
    "code (the same index in the same statement), so no barrier can order them: that update "
    "is one thread's job. If every thread runs a loop over data the other threads also "
    "handle, remove the loop (each thread does its own part) or let one thread do it "
    "(`if t == 0:`); to add up from many threads, use cuda.atomic.add.",
    "race:same_statement": "In one statement a thread reads an element that another thread of "
    "the block writes in the same statement: read the value into a register, "
    "cuda.syncthreads(), then write it, and cuda.syncthreads() again before the next step.",
    "race:two_lines": "Two lines touch the same element from different threads of one block "
    "with no barrier between them: put cuda.syncthreads() (not cuda.syncwarp(): a block has "
    "several warps) after the first and before the second, reached by every thread of the "
    "block.",
    "oob:shared": "A shared array belongs to one block and has one slot per thread of the block "
    "(or what you declared): index it with cuda.threadIdx.x (the place in the block), and the "
    "global arrays with the global index.",
    "budget:atomics": "This exercise needs no atomics: a cuda.atomic.* call on global memory is "
    "a read and a write of that element (cuda.atomic.add(x, j, 0) is a read in disguise), and "
    "it counts against the budgets. Use plain reads and writes.",
    "budget:unused_shared": "Declaring a shared array is not using it: the budget counts shared "
    "arrays that the kernel writes and then reads. Load the data into shared memory, "
    "cuda.syncthreads(), and compute from the shared copy.",
    "oob:local": "A local array (cuda.local.array) indexed past its size: check the loop bounds.",
    "unwritten:untouched": "Some cases show the kernel can write the output, so look at what "
    "differs in this case: a guard such as `if i < n - 1:` or `if i < 32:` that no thread "
    "passes here, or a loop whose range is empty for these sizes.",
    "mismatch:untouched": "Some cases show the kernel can write the output, so look at what "
    "differs in this case: a guard no thread passes here, or a loop whose range is empty for "
    "these sizes.",
    "unwritten:skeleton": "Fill in the kernel: every element of the output needs a thread that "
    "writes it.",
    "mismatch:skeleton": "Fill in the kernel: the output still holds its starting value.",
}
"""Hints for what the evidence of a failure shows (`RunResult.cause`); they come before the hint
for the kind of failure, which may not fit (a race inside one statement needs no barrier)."""

PATTERN_KINDS = {"several_blocks": {"unwritten", "mismatch"}}
"""A pattern's hint applies only to these kinds of failure (absent: to any): "compute the global
index" is backwards for an out-of-bounds access to shared memory that only several blocks show."""

PATTERN_HINTS = {
    "several_blocks": "With several blocks, each block must work on its own part of the data "
    "(compute the global index, cuda.grid(1), not only threadIdx.x), and blocks may combine "
    "their results only through atomics.",
    "partial_block": "The last block has threads past the end of the data: guard their "
    "accesses, and make sure their elements (and shared-memory slots) are still handled.",
    "shuffle": "The result depends on the order in which blocks run or racing writes land.",
    "several_warps": "Something in the kernel holds only within one warp of 32 threads: a step "
    "the whole block must finish needs cuda.syncthreads() (cuda.syncwarp() waits for one warp), "
    "a thread's place in the block is cuda.threadIdx.x (cuda.laneid restarts at 0 in every "
    "warp), and a sum over the block goes through shared memory (a warp shuffle reaches only "
    "the 32 threads of its warp).",
    "fewer_threads_than_elements": "When the grid is smaller than the data, each thread must "
    "handle several elements: loop with a stride of the whole grid (cuda.gridsize(1)).",
}


@dataclass
class CheckResult:
    """What `check` found: `passed`, every run in `runs` (also as `details`), and `report`."""

    spec: ExerciseSpec
    runs: list[RunResult]
    seed: int = 0  # check's seed: the same seed replays the same sizes, inputs and orders

    @property
    def exercise(self) -> str:
        return self.spec.name

    @property
    def passed(self) -> bool:
        return bool(self.runs) and all(r.passed for r in self.runs)

    @property
    def details(self) -> list[RunResult]:
        return self.runs

    @property
    def failures(self) -> list[RunResult]:
        return [r for r in self.runs if not r.passed]

    @property
    def main_failure(self) -> RunResult | None:
        """The failure the report explains (errors first, then wrong numbers, then budgets)."""
        return main_failure(self.runs)

    @property
    def report(self) -> str:
        return format_report(self)

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        ok = sum(r.passed for r in self.runs)
        verdict = "passed" if self.passed else "failed"
        return f"<CheckResult {self.exercise!r}: {verdict}, {ok} of {len(self.runs)} runs>"


def _tags(run: RunResult) -> set[str]:
    tags = set(run.case.tags) | {run.schedule}
    tags |= {f"{k}={v}" for k, v in run.case.params.items()}
    return tags


def _tag_text(tag: str, spec: ExerciseSpec, only: bool = False) -> str:
    """A tag as words; `only`: for "passes only when", where a factory argument's value points at
    a number written into the kernel."""
    if f"tag:{tag}" in spec.hints:
        return spec.hints[f"tag:{tag}"]
    if tag in TAG_TEXTS:
        return TAG_TEXTS[tag]
    if "=" in tag and only:
        return f"{tag} (did you write a number where the argument belongs?)"
    return tag


SEVERITY = {"ok": 9, "budget": 5, "input_modified": 4, "mismatch": 3, "unwritten": 3}


def main_failure(runs: list[RunResult]) -> RunResult | None:
    """The failure to explain: kernel errors before wrong numbers before budgets, then the first."""
    failures = [r for r in runs if not r.passed]
    if not failures:
        return None
    return min(failures, key=lambda r: SEVERITY.get(r.kind, 0))


def _priority(tag: str) -> tuple[int, str]:
    order = ["several_warps", "shuffle", "several_blocks", "fewer_threads_than_elements",
             "partial_block", "drawn"]
    if tag in order:
        return (1 + order.index(tag), tag)
    if tag in TAG_TEXTS or "=" in tag:
        return (len(order) + 1, tag)
    return (0, tag)  # an exercise's own tags say the most


def find_pattern(runs: list[RunResult], spec: ExerciseSpec) -> tuple[str, str | None] | None:
    """(sentence, tag) for a fact that separates the main failure's runs from the others."""
    main = main_failure(runs)
    if main is None:
        return None
    failing = [_tags(r) for r in runs if r.kind == main.kind]
    others = [r for r in runs if r.kind != main.kind]
    if not others:
        return None
    rest = [_tags(r) for r in others]
    all_pass = all(r.passed for r in others)
    what = "the kernel fails" if all_pass else f"{main.kind} happens"
    only_fail = set.intersection(*failing) - set.union(*rest)
    only_rest = set.intersection(*rest) - set.union(*failing)
    params = sorted(t for t in only_rest if "=" in t)
    facts = sorted((t for t in only_fail if "=" not in t), key=_priority)
    if facts:  # a fact about the failing cases says more than the value of an argument
        return f"{what} exactly when {_tag_text(facts[0], spec)}.", facts[0]
    if all_pass and params:
        return f"the kernel passes only when {_tag_text(params[0], spec, True)}.", None
    for tag in sorted(only_fail, key=_priority):
        return f"{what} exactly when {_tag_text(tag, spec)}.", tag
    if all_pass:
        for tag in sorted(only_rest, key=_priority):
            return f"the kernel passes only when {_tag_text(tag, spec)}.", None
    return None


def _wrap(text: str, indent: str = "  ") -> str:
    lines = []
    for para in text.split("\n"):
        lines.append(textwrap.fill(para, WIDTH, initial_indent=indent, subsequent_indent=indent,
                                   break_long_words=False, break_on_hyphens=False))
    return "\n".join(lines)


def _case_lines(result: CheckResult) -> list[str]:
    lines, by_case = [], {}
    for run in result.runs:
        by_case.setdefault(id(run.case), []).append(run)
    for runs in by_case.values():
        where = runs[0].case.describe() + (" (drawn)" if "drawn" in runs[0].case.tags else "")
        bad = [r for r in runs if not r.passed]
        if not bad:
            lines.append(f"  ✓ {where}")
        elif len(bad) == len(runs) and len({r.kind for r in bad}) == 1:
            lines.append(f"  ✗ {where}: {bad[0].kind}")
        else:
            states = ", ".join(f"{r.schedule}: {'ok' if r.passed else r.kind}" for r in runs)
            lines.append(f"  ✗ {where}: {states}")
    return lines


def _budget_summary(result: CheckResult) -> str:
    worst: dict[str, tuple[float, str]] = {}
    for run in result.runs:
        for b in run.budgets:
            slack = (b.limit - b.used) if b.name == "min_shared_bytes" else (b.used - b.limit)
            if b.name not in worst or slack > worst[b.name][0]:
                worst[b.name] = (slack, b.describe())
    return "; ".join(text for _, text in worst.values())


def failure_hint(run: RunResult, spec: ExerciseSpec) -> str:
    """The hint for one failure: for what its evidence shows first (the exercise's own, then the
    general one), then for its kind (the exercise's own, then the general one)."""
    cause = run.cause
    if cause is not None and (cause in spec.hints or cause in CAUSE_HINTS):
        return spec.hints.get(cause) or CAUSE_HINTS[cause]
    return spec.hints.get(run.kind) or HINTS.get(run.kind, "")


def _pattern_hint(tag: str, run: RunResult, spec: ExerciseSpec) -> str:
    if f"pattern:{tag}:{run.kind}" in spec.hints:
        return spec.hints[f"pattern:{tag}:{run.kind}"]
    if f"pattern:{tag}" in spec.hints:
        return spec.hints[f"pattern:{tag}"]
    if run.kind in PATTERN_KINDS.get(tag, {run.kind}):
        return PATTERN_HINTS.get(tag, "")
    return ""


def format_report(result: CheckResult) -> str:
    spec, runs = result.spec, result.runs
    n_ok = sum(r.passed for r in runs)
    head = f"check('{spec.name}', seed={result.seed}) · {spec.title}"
    if result.passed:
        lines = [head, f"PASSED all {len(runs)} runs (each case in block order and shuffled):"]
        lines += _case_lines(result)
        budgets = _budget_summary(result)
        if budgets:
            lines.append(_wrap(f"Budgets met (worst run): {budgets}.", ""))
        return "\n".join(lines)
    status = f"FAILED: {n_ok} of {len(runs)} runs passed (each case in block order and shuffled):"
    lines = [head, status]
    lines += _case_lines(result)
    first = main_failure(runs)
    where = "" if first.case is None else (
        f" ({first.case.describe()}, schedule {first.schedule_text})")
    lines.append(f"Failure{where}:")
    lines.append(_wrap(first.message))
    pattern = find_pattern(runs, spec)
    hint_parts = []
    if pattern is not None:
        sentence, tag = pattern
        lines.append(_wrap(f"Pattern: {sentence}", ""))
        if tag is not None:
            hint_parts.append(_pattern_hint(tag, first, spec))
    hint_parts.append(failure_hint(first, spec))
    if not any(hint_parts) and "general" in spec.hints:
        hint_parts.append(spec.hints["general"])
    hint = " ".join(dict.fromkeys(p for p in hint_parts if p))
    if hint:
        lines.append(_wrap(f"Hint: {hint}", ""))
    return "\n".join(lines)
