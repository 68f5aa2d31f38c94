"""A log that keeps the latest records: `backend.launches` and `backend.transfers`.

A long session (a workshop notebook, a test suite, a loop of small launches) must not grow
without bound, so each log keeps its latest `limit` records (10,000 unless changed) and counts
every record ever added in `total`. Reading it is like reading a list: `log[-1]`, `log[-5:]`,
`len(log)`, iteration, comparison with a list.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..errors import ArgumentTypeError, InvalidArgumentError

DEFAULT_LIMIT = 10_000


class RecordLog(Sequence):
    """The latest `limit` records, oldest first; `total` counts all ever appended.

    `log.limit = n` keeps more or fewer (the latest n stay); `log.since(mark)` gives the records
    added after `mark = log.total` was read (those still kept)."""

    def __init__(self, records: Iterable[Any] = (), limit: int = DEFAULT_LIMIT):
        self._items: deque[Any] = deque(maxlen=_check_limit(limit))
        self.total = 0
        for record in records:
            self.append(record)

    @property
    def limit(self) -> int:
        return self._items.maxlen or 0

    @limit.setter
    def limit(self, limit: int) -> None:
        self._items = deque(self._items, maxlen=_check_limit(limit))

    @property
    def dropped(self) -> int:
        """How many of the oldest records are no longer kept."""
        return self.total - len(self._items)

    def append(self, record: Any) -> None:
        self._items.append(record)
        self.total += 1

    def clear(self) -> None:
        """Forget the records (`total` keeps counting from where it was)."""
        self._items.clear()

    def since(self, mark: int) -> list[Any]:
        """The records appended after `total` was `mark`, as far as they are still kept."""
        return list(self._items)[max(mark - self.dropped, 0):]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(self._items)[index]
        return self._items[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RecordLog, list, tuple)):
            return list(self._items) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        kept = f"{len(self)} kept" + (f" of {self.total}" if self.dropped else "")
        return f"RecordLog({kept}, limit {self.limit:,}): {list(self._items)[-3:]!r}"


def _check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ArgumentTypeError(f"a log's limit must be an int >= 1 (the records it keeps), not "
                                f"{type(limit).__name__} {limit!r}")
    if limit < 1:
        raise InvalidArgumentError(f"a log's limit must be an int >= 1 (the records it keeps), "
                                   f"got {limit}")
    return limit
