"""The inspectable parts of a modeled kernel time: `Term` and `Breakdown`.

A `Breakdown` lists the terms of one launch's model (each a time in ms, what it counts and
where its numbers come from), says which limit binds (the largest of the overlapping terms)
and by how much (its ratio to the next largest), and prints as a small table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Breakdown", "Term"]


@dataclass(frozen=True)
class Term:
    """One part of a kernel's modeled time. `role`: "limit" for throughput and latency limits
    that run at the same time (the kernel takes the largest), "added" for costs paid on top,
    "sum" for the memory time (dram, l2 and latency combined wave by wave)."""

    name: str
    ms: float
    role: str = "limit"

    @property
    def overlaps(self) -> bool:
        return self.role == "limit"


@dataclass(frozen=True)
class Breakdown:
    """The terms of a modeled launch and the facts behind them."""

    terms: tuple[Term, ...]
    facts: dict[str, Any]
    texts: Callable[[], dict[str, str]] | None = field(default=None, repr=False, compare=False)

    def what(self, name: str) -> str:
        """What term `name` counts, in words (with its numbers)."""
        self[name]
        return "" if self.texts is None else self.texts().get(name, "")

    def __getitem__(self, name: str) -> Term:
        for term in self.terms:
            if term.name == name:
                return term
        raise KeyError(f"no term {name!r}; the terms are: {', '.join(self.names)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.terms)

    def ms(self, name: str) -> float:
        return self[name].ms

    @property
    def binding(self) -> str:
        """The name of the largest overlapping term (what limits the kernel)."""
        over = [t for t in self.terms if t.overlaps]
        return max(over, key=lambda t: t.ms).name if over else "launch"

    @property
    def margin(self) -> float:
        """How much the binding term exceeds the next overlapping one (a ratio >= 1; inf when
        no other term costs anything)."""
        times = sorted((t.ms for t in self.terms if t.overlaps), reverse=True)
        if len(times) < 2 or times[1] <= 0:
            return float("inf")
        return times[0] / times[1]

    def summary(self) -> str:
        width = max(len(t.name) for t in self.terms)
        texts = {} if self.texts is None else self.texts()
        lines = []
        for t in self.terms:
            mark = "*" if t.name == self.binding else " "
            how = {"limit": "max", "added": "  +", "sum": "  ="}[t.role]
            lines.append(f" {mark}{how} {t.name.ljust(width)} {t.ms:10.4g} ms  {texts.get(t.name, '')}")
        margin = "alone" if self.margin == float("inf") else f"{self.margin:.2f}x the next limit"
        lines.append(f"binding: {self.binding} ({margin})")
        return "\n".join(lines)

    __str__ = summary

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.summary())
