"""Pure functions on a trace's numpy columns, used while `Recorder.collect` builds a `Trace`.

Element numbers of strided views, dense ids of column tuples, local-memory events split by their
declarations. No state, no recording: numpy arrays in, numpy arrays out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..utils import c_strides


def element_numbers(rel: np.ndarray, shape: tuple[int, ...], estrides: tuple[int, ...]
                    ) -> np.ndarray:
    """Row-major element numbers within `shape` of buffer offsets `rel` (strided layout).

    `rel` = sum(index[i] * estrides[i]); strides may be in any order or negative (views), as long
    as the layout does not overlap itself, which holds for every slice of a contiguous array.
    """
    if tuple(estrides) == c_strides(shape):
        return rel.astype(np.int64, copy=False)
    rem = rel.astype(np.int64) - sum((n - 1) * s for n, s in zip(shape, estrides) if s < 0)
    comps: list[Any] = [0] * len(shape)
    for axis in sorted(range(len(shape)), key=lambda a: -abs(estrides[a])):
        step, n = abs(estrides[axis]), shape[axis]
        if step == 0 or n == 1:
            continue
        c = rem // step
        rem = rem - c * step
        comps[axis] = c if estrides[axis] > 0 else n - 1 - c
    element: Any = np.zeros(len(rel), np.int64)
    for c, n in zip(comps, shape):
        element = element * n + c
    return element


def group_ids(*columns: np.ndarray) -> np.ndarray:
    """Row ids numbering the distinct tuples of `columns` in sorted order (as np.unique(axis=0)
    would, but by packing the columns' dense ids into one int64: many times faster)."""
    key = np.zeros(len(columns[0]), np.int64)
    span = 1
    for col in columns:
        values, ids = np.unique(col, return_inverse=True)
        span *= max(len(values), 1)
        if span >= 1 << 62:  # cannot pack: the slow way
            _, ids = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
            return ids.reshape(-1).astype(np.int64)
        key = key * len(values) + ids.reshape(-1)
    return np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)


def local_groups(info: Any, sel: np.ndarray, byte: np.ndarray, lt: np.ndarray) -> list:
    """Local-memory events split by the kernel's local array declarations (bytes of a thread's
    frame that no declaration covers belong to device functions: one "local" array)."""
    offset = byte - lt[sel] * info.stride
    groups, claimed = [], np.zeros(len(byte), bool)
    for decl in info.decls:
        mine = (offset >= decl.offset) & (offset < decl.offset + decl.nbytes)
        if not mine.any():
            continue
        claimed |= mine
        which = sel.copy()
        which[sel] = mine
        element = (offset[mine] - decl.offset) // decl.dtype.itemsize
        groups.append((which, decl.label, "local", tuple(decl.shape), np.dtype(decl.dtype),
                       element, offset[mine] - decl.offset))
    if not claimed.all():
        which = sel.copy()
        which[sel] = ~claimed
        rest = offset[~claimed]
        groups.append((which, "local", "local", (max(int(rest.max()) + 1, 1),),
                       np.dtype(np.uint8), rest, rest))
    return groups
