"""`progress()`: which exercises pass, from the `check` calls of this Python session.

`check` hands every verdict to `record`, which keeps the latest one per exercise (and how many
checks were made) in a small in-process registry; `progress()` returns a `Progress` table of
every exercise in workshop order, shown as HTML in Jupyter and as text elsewhere. Exercises
never checked are "not attempted". Nothing is saved to disk: a new kernel (or Python process)
starts empty, and `reset()` empties it. It runs no kernels and holds no timings, so a
notebook's stored output of it stays the same from one execution to the next.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from typing import Any

__all__ = ["ExerciseProgress", "Progress", "progress", "record", "reset"]

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted"
_MARKS = {PASSED: "✓", FAILED: "✗", NOT_ATTEMPTED: "·"}


@dataclass(frozen=True)
class ExerciseProgress:
    """One exercise's row: its latest verdict in this session (or none)."""

    number: int  # 1-based position in the workshop order
    name: str
    title: str
    status: str  # "passed", "failed" or "not attempted"
    checks: int = 0  # how many times check() ran on it in this session
    runs_passed: int = 0  # of the latest check
    runs: int = 0
    failure: str = ""  # the latest check's main failure kind ("mismatch", "budget", ...)
    ever_passed: bool = False

    @property
    def detail(self) -> str:
        """What the latest check found, in a few words."""
        if self.status == NOT_ATTEMPTED:
            return "run its check cell"
        text = f"{self.runs_passed}/{self.runs} runs passed"
        if self.status == FAILED:
            text += f" (first problem: {self.failure})"
            if self.ever_passed:
                text += "; passed earlier"
        return text


_LATEST: dict[str, ExerciseProgress] = {}  # exercise name -> its latest verdict


def record(result: Any) -> None:
    """Keep `result` (a `CheckResult`) as its exercise's latest verdict. `check` calls this."""
    name = result.spec.name
    before = _LATEST.get(name)
    runs = result.runs
    main = result.main_failure
    passed = bool(result.passed)
    _LATEST[name] = ExerciseProgress(
        number=0, name=name, title=result.spec.title, status=PASSED if passed else FAILED,
        checks=(before.checks if before else 0) + 1,
        runs_passed=sum(bool(r.passed) for r in runs), runs=len(runs),
        failure="" if main is None else main.kind,
        ever_passed=passed or bool(before and before.ever_passed))


def reset() -> None:
    """Forget every verdict of this session."""
    _LATEST.clear()


@dataclass(frozen=True)
class Progress:
    """Every exercise with its latest verdict: `.rows`, `.passed`, `.failed`, `.not_attempted`.

    Displays as an HTML table in Jupyter; `str()` is the same table as text.
    """

    rows: tuple[ExerciseProgress, ...]

    def _names(self, status: str) -> list[str]:
        return [r.name for r in self.rows if r.status == status]

    @property
    def passed(self) -> list[str]:
        return self._names(PASSED)

    @property
    def failed(self) -> list[str]:
        return self._names(FAILED)

    @property
    def not_attempted(self) -> list[str]:
        return self._names(NOT_ATTEMPTED)

    @property
    def summary(self) -> str:
        counts = Counter(r.status for r in self.rows)
        return (f"{counts[PASSED]} of {len(self.rows)} exercises passed, {counts[FAILED]} "
                f"failed, {counts[NOT_ATTEMPTED]} not attempted (checks run in this session)")

    def __getitem__(self, name: str) -> ExerciseProgress:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"no exercise {name!r} in this progress table")

    def __str__(self) -> str:
        table = [("#", "exercise", "title", "status", "checks", "latest check")]
        for r in self.rows:
            table.append((f"{r.number:02d}", r.name, r.title, f"{_MARKS[r.status]} {r.status}",
                          str(r.checks), r.detail))
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                 for row in table]
        return "\n".join([self.summary, *lines])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        colours = {PASSED: "#1a7f37", FAILED: "#cf222e", NOT_ATTEMPTED: "#6e7781"}
        cell = "padding:2px 10px;text-align:left"
        head = "".join(f'<th style="{cell}">{h}</th>' for h in
                       ("#", "exercise", "title", "status", "checks", "latest check"))
        body = []
        for r in self.rows:
            status = (f'<span style="color:{colours[r.status]};font-weight:bold">'
                      f"{_MARKS[r.status]} {r.status}</span>")
            cells = (f"{r.number:02d}", f"<code>{html.escape(r.name)}</code>",
                     html.escape(r.title), status, str(r.checks), html.escape(r.detail))
            body.append("<tr>" + "".join(f'<td style="{cell}">{c}</td>' for c in cells) + "</tr>")
        return (f"<div><p>{html.escape(self.summary)}</p>"
                f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
                "</div>")


def progress(exercises: str | list[str] | None = None) -> Progress:
    """Every exercise (or those named) in workshop order, with its latest verdict this session.

    An exercise whose check never ran in this Python session is "not attempted"; for the others
    the table gives the latest verdict, how many runs of it passed, its first problem, and how
    many times check ran. Display the result (the last line of a cell) to see the table.
    """
    from .checker import get_spec  # lazy: the checker imports this module
    from .specs import EXERCISES

    if exercises is None:  # every exercise, then any custom spec that was checked
        titles = {name: spec.title for name, spec in EXERCISES.items()}
        titles.update({n: e.title for n, e in _LATEST.items() if n not in titles})
    else:
        if isinstance(exercises, str):
            exercises = [exercises]
        titles = {spec.name: spec.title for spec in map(get_spec, exercises)}
    order = {name: i + 1 for i, name in enumerate(EXERCISES)}
    rows = []
    for name, title in titles.items():
        number = order.get(name, 0)
        if name in _LATEST:
            latest = _LATEST[name]
            rows.append(ExerciseProgress(number, name, latest.title, latest.status, latest.checks,
                                         latest.runs_passed, latest.runs, latest.failure,
                                         latest.ever_passed))
        else:
            rows.append(ExerciseProgress(number, name, title, NOT_ATTEMPTED))
    return Progress(tuple(rows))
