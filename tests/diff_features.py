"""Which constructs the differential tester's generator writes (`enabled`).

Everything is generated unless excluded. `EXCLUDED` lists constructs that hit an open engine bug,
each with the number of its engine bug report ("differential #n"), so that the CI test stays green
while the bug is fixed; `GPUKIT_DIFFERENTIAL_ALL=1` generates them anyway (to check a fix), and
`GPUKIT_DIFFERENTIAL_EXCLUDE=a,b` excludes more (to look past a bug while hunting others).
Feature names: `math.<name>`, `shift`, `pow`, `divmod`, `float_divmod`, `round`, `minmax`,
`constructor`, `int_ifexp`, `frexp`, `modf`, `math2`, `chained_cmp`, `device_call`,
`device_functions`, `tuple_item`, `tuples`, `local_arrays`, `negative_index`, `for`, `while`,
`break_continue`, `if`.
"""

from __future__ import annotations

import os

# feature -> why it is excluded. Nothing hides a failure silently: each entry must be an open
# engine bug, reported with a minimal kernel, and kept as a case in test_differential.py that
# shows it.
EXCLUDED: dict[str, str] = {}  # none open now (the math bugs #1-#4 are fixed: see
# test_differential.FIXED_BUGS)


def excluded() -> set[str]:
    """The features not generated now (after the environment's overrides)."""
    names = set() if os.environ.get("GPUKIT_DIFFERENTIAL_ALL") == "1" else set(EXCLUDED)
    extra = os.environ.get("GPUKIT_DIFFERENTIAL_EXCLUDE", "")
    return names | {n.strip() for n in extra.split(",") if n.strip()}


_EXCLUDED_NOW = excluded()


def enabled(feature: str) -> bool:
    """Whether the generator may write `feature`."""
    return feature not in _EXCLUDED_NOW
