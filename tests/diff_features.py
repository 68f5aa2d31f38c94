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

# feature -> why it is excluded. Nothing hides a failure silently: each entry is an open engine
# bug, reported with a minimal kernel in the project's engine bug list under "differential #n",
# and kept as a strict xfail in test_differential.py (KNOWN_BUGS) that fails once it is fixed.
EXCLUDED: dict[str, str] = {
    "math.floor": "differential #1: typed int64 (numba's CPU typing) where numba-cuda gives a float",
    "math.ceil": "differential #1 (as math.floor)",
    "math.trunc": "differential #1 (as math.floor)",
    "math.modf": "differential #2: an internal TypingError from the simulator's generated code",
    "math.fmod": "differential #2 (as math.modf)",
    "math.remainder": "differential #2 (as math.modf)",
    "math.pow": "differential #3: 0.0 ** -1 raises ZeroDivisionError (numba's CPU int power)",
    "math.ldexp": "differential #4: ldexp(True, n) computed in float64, numba-cuda says float32",
}


def excluded() -> set[str]:
    """The features not generated now (after the environment's overrides)."""
    names = set() if os.environ.get("GPUKIT_DIFFERENTIAL_ALL") == "1" else set(EXCLUDED)
    extra = os.environ.get("GPUKIT_DIFFERENTIAL_EXCLUDE", "")
    return names | {n.strip() for n in extra.split(",") if n.strip()}


_EXCLUDED_NOW = excluded()


def enabled(feature: str) -> bool:
    """Whether the generator may write `feature`."""
    return feature not in _EXCLUDED_NOW
