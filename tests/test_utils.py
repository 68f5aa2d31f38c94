"""gpukit.utils: integer ceilings, byte sizes in words, strides and plain argument checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpukit.errors import ArgumentTypeError, GpukitError, InvalidArgumentError
from gpukit.utils import (
    as_choice,
    as_int,
    as_number,
    c_strides,
    ceil_div,
    f_strides,
    format_bytes,
    round_up,
    size_text,
)


@given(st.integers(0, 10**30), st.integers(1, 10**6))
def test_ceil_div_and_round_up(a, b):
    q = ceil_div(a, b)
    assert (q - 1) * b < a <= q * b if a else q == 0
    assert round_up(a, b) % b == 0 and 0 <= round_up(a, b) - a < b


def test_byte_sizes_in_words():
    assert format_bytes(1536) == "1.50 KiB (1,536 bytes)"
    assert format_bytes(100) == "100 bytes"
    assert format_bytes(3 << 30) == "3.00 GiB (3,221,225,472 bytes)"
    assert (size_text(1536), size_text(64 << 20), size_text(512)) == ("1.5 KiB", "64 MiB", "512 B")


@given(st.lists(st.integers(1, 7), min_size=1, max_size=4), st.sampled_from([1, 2, 4, 8]))
def test_strides_match_numpy(shape, itemsize):
    dtype = {1: np.uint8, 2: np.uint16, 4: np.float32, 8: np.float64}[itemsize]
    assert c_strides(shape, itemsize) == np.zeros(shape, dtype).strides
    assert f_strides(shape, itemsize) == np.zeros(shape, dtype, order="F").strides


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: as_int("n", 1.5), ArgumentTypeError, "n must be an int >= 0, got float 1.5"),
    (lambda: as_int("n", True), ArgumentTypeError, "n must be an int >= 0, got bool True"),
    (lambda: as_int("n", -1), InvalidArgumentError, "n must be an int >= 0, got -1"),
    (lambda: as_int("n", 11, 1, 10), InvalidArgumentError, "n must be an int from 1 to 10, got 11"),
    (lambda: as_number("s", "x"), ArgumentTypeError, "s must be a number >= 0, got str 'x'"),
    (lambda: as_number("s", float("nan")), InvalidArgumentError,
     "s must be a finite number >= 0, got nan"),
    (lambda: as_number("s", 0, positive=True), InvalidArgumentError,
     "s must be a finite number > 0, got 0"),
    (lambda: as_choice("way", ["a"], ("a", "b")), InvalidArgumentError,
     "way must be one of a, b, got ['a']"),
])
def test_argument_checks_say_what_is_allowed(call, error, message):
    with pytest.raises(error, match=f"^{message.replace('[', '.').replace(']', '.')}$"):
        call()
    assert issubclass(error, (GpukitError, ValueError))


def test_argument_checks_take_numpy_numbers():
    assert as_int("n", np.int64(3)) == 3 and type(as_int("n", np.uint8(3))) is int
    assert as_number("s", np.float32(0.5)) == 0.5 and as_choice("way", "b", "ab") == "b"
