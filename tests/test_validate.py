"""The input checks every backend shares: shapes, dtypes, host arrays, copies, launches."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from gpukit.backends.base import Capabilities
from gpukit.backends.validate import (
    SUPPORTED_DTYPES,
    InvalidShapeError,
    ShapeTypeError,
    UnsupportedDtypeError,
    check_copy_target,
    check_host_array,
    check_launch,
    check_launch_bounds,
    normalize_dim3,
    normalize_dtype,
    normalize_launch_bounds,
    normalize_shape,
)
from gpukit.errors import GpukitError, LaunchConfigError, TransferError


@pytest.mark.parametrize(("shape", "expected"), [
    (3, (3,)), (0, (0,)), ((), ()), ((2, 3), (2, 3)), ([4, 5], (4, 5)),
    (np.int64(7), (7,)), ((np.uint8(2), 3), (2, 3)), (np.array([2, 3]), (2, 3)),
])
def test_normalize_shape(shape, expected):
    result = normalize_shape(shape)
    assert result == expected and all(type(n) is int for n in result)


@pytest.mark.parametrize(("shape", "error", "message"), [
    (-1, InvalidShapeError, (r"^invalid shape -1: size -1 of axis 0 is negative; sizes must be "
                            r">= 0$")),
    ((2, -3), InvalidShapeError, r"^invalid shape \(2, -3\): size -3 of axis 1 is negative"),
    (2.5, ShapeTypeError, (r"^invalid shape 2.5: a shape is an int or a tuple of ints, not float "
                          r"\(for example 1024 or \(64, 64\)\)$")),
    (None, ShapeTypeError, r"^invalid shape None: .* not NoneType"),
    ("12", ShapeTypeError, r"^invalid shape '12': .* not str"),
    (True, ShapeTypeError, r"^invalid shape True: .* not bool"),
    ((2, 3.0), ShapeTypeError, (r"^invalid shape \(2, 3.0\): size 3.0 of axis 1 is float, not an "
                               r"int; write sizes as ints, e.g. int\(n\)$")),
    ((np.True_,), ShapeTypeError, r"of axis 0 is bool, not an int"),
])
def test_normalize_shape_errors(shape, error, message):
    with pytest.raises(error, match=message):
        normalize_shape(shape)


def test_shape_errors_are_gpukit_value_and_type_errors():
    assert issubclass(InvalidShapeError, GpukitError) and issubclass(InvalidShapeError, ValueError)
    assert issubclass(ShapeTypeError, InvalidShapeError) and issubclass(ShapeTypeError, TypeError)
    assert issubclass(UnsupportedDtypeError, GpukitError)
    assert issubclass(UnsupportedDtypeError, TypeError)


@pytest.mark.parametrize(("dtype", "expected"), [
    ("float32", "float32"), ("f4", "float32"), (np.float16, "float16"), (float, "float64"),
    (int, "int64"), (bool, "bool"), (complex, "complex128"), (">f8", "float64"),
    (np.dtype("<u2"), "uint16"), ([("x", "f8"), ("n", "i4", (2,))], [("x", "f8"), ("n", "i4", (2,))]),
])
def test_normalize_dtype(dtype, expected):
    result = normalize_dtype(dtype)
    assert result == np.dtype(expected) and result.isnative


def test_supported_dtypes_are_bool_and_numeric():
    names = [dt.name for dt in SUPPORTED_DTYPES]
    assert names == ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float16", "float32", "float64", "complex64", "complex128",
                     "bfloat16"]  # ml_dtypes' (installed with the test extra)
    assert normalize_dtype(ml_dtypes.bfloat16) == np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize(("dtype", "message"), [
    ("floot32", (r"^unknown dtype 'floot32'; accepted dtypes: bool, int8, int16, int32, int64, "
                r"uint8, uint16, uint32, uint64, float16, float32, float64, complex64, "
                r"complex128, bfloat16$")),
    (None, r"^dtype must be given, got None; accepted dtypes: bool, "),
    (object, (r"^unsupported dtype <class 'object'> \(object\): device arrays hold bool and "
             r"numeric data only; accepted dtypes: ")),
    ("U3", r"^unsupported dtype 'U3' \(<U3\)"),
    ("M8[s]", r"^unsupported dtype 'M8\[s\]' \(datetime64\[s\]\)"),
    ([("x", "f4"), ("name", "U3")], r"^unsupported dtype \[\('x', 'f4'\), \('name', 'U3'\)\]"),
    ([("x", ">f4")], r"^unsupported dtype \[\('x', '>f4'\)\]"),
])
def test_normalize_dtype_errors(dtype, message):
    with pytest.raises(UnsupportedDtypeError, match=message):
        normalize_dtype(dtype)


def test_check_host_array():
    fortran = np.asfortranarray(np.ones((2, 3), ">f4"))
    result = check_host_array(fortran)
    assert result.flags.c_contiguous and result.dtype == np.float32 and result.dtype.isnative
    plain = np.ones(3)
    assert check_host_array(plain) is plain  # nothing to convert: no copy
    with pytest.raises(TransferError, match=r"^to_device expects a numpy array, got list; "
                                            r"convert it first with numpy.asarray\(...\)$"):
        check_host_array([1, 2])
    with pytest.raises(TransferError, match="^copy_to_device expects a numpy array, got float"):
        check_host_array(1.5, operation="copy_to_device")

    class DeviceLike:
        def copy_to_host(self):
            return None
    with pytest.raises(TransferError, match=r"^to_device expects a numpy array, got a device "
                                            r"array that is already on the device; pass it to "
                                            r"kernels directly$"):
        check_host_array(DeviceLike())
    with pytest.raises(UnsupportedDtypeError, match="unsupported dtype"):
        check_host_array(np.array([object()]))


def test_check_copy_target():
    check_copy_target(np.ones((2, 3), np.float32), (2, 3), "float32")
    with pytest.raises(TransferError, match=r"^copy_to_device: the host array is \(3,\) float64 "
                                            r"but the device array is \(2, 3\) float32; copies "
                                            r"need equal shapes and dtypes"):
        check_copy_target(np.ones(3), [2, 3], np.float32)
    with pytest.raises(TransferError, match=r"^to_host: the host array is \(2, 3\) float64 but "
                                            r"the device array is \(2, 3\) float32"):
        check_copy_target(np.ones((2, 3)), (2, 3), "float32", operation="to_host")


@pytest.mark.parametrize(("value", "expected"), [
    (32, (32, 1, 1)), ((4, 4), (4, 4, 1)), ([2, 3, 4], (2, 3, 4)), (np.int32(8), (8, 1, 1)),
])
def test_normalize_dim3(value, expected):
    assert normalize_dim3(value) == expected


@pytest.mark.parametrize(("value", "message"), [
    (0, r"^grid 0 is invalid: every dimension must be an int >= 1$"),
    ((2, -1), r"^grid \(2, -1\) is invalid"),
    ((1, 2, 3, 4), r"^grid must be an int or a tuple of 1 to 3 ints, got \(1, 2, 3, 4\)$"),
    ((), r"^grid must be an int or a tuple of 1 to 3 ints, got \(\)$"),
    (2.0, r"^grid must be an int or a tuple of 1 to 3 ints, got 2.0$"),
    ((2, 2.0), r"^grid \(2, 2.0\) is invalid"),
    (True, r"^grid must be an int or a tuple of 1 to 3 ints, got True$"),
])
def test_normalize_dim3_errors(value, message):
    with pytest.raises(LaunchConfigError, match=message):
        normalize_dim3(value, "grid")


T4_LIKE = Capabilities(32, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 48 * 1024,
                       64 * 1024, (7, 5), 40, 15 * 1024**3)


def test_check_launch():
    assert check_launch("k", (10, 2), (16, 16), 1024, T4_LIKE) == ((10, 2, 1), (16, 16, 1))
    assert check_launch("k", 1, 1024, 64 * 1024, T4_LIKE) == ((1, 1, 1), (1024, 1, 1))


@pytest.mark.parametrize(("grid", "block", "shared", "message"), [
    (1, (32, 33), 0, (r"^kernel 'k': block \(32, 33\) has 1056 threads; the device allows at most "
                     r"1024 threads per block$")),
    (1, (1, 1, 65), 0, r"^kernel 'k': block dimension z is 65; the device allows at most 64$"),
    ((1, 65536), 1, 0, (r"^kernel 'k': grid dimension y is 65536; the device allows at most "
                       r"65535$")),
    (1, 0, 0, r"^kernel 'k': block 0 is invalid"),
    (1, 32, 64 * 1024 + 1, (r"^kernel 'k': dynamic_shared_bytes must be an int from 0 to 65536 "
                           r"\(the device's shared memory per block\), got 65537$")),
    (1, 32, -1, r"dynamic_shared_bytes must be an int from 0 to 65536 .*got -1$"),
    (1, 32, 1.0, r"dynamic_shared_bytes must be an int .*got 1.0$"),
])
def test_check_launch_errors(grid, block, shared, message):
    with pytest.raises(LaunchConfigError, match=message):
        check_launch("k", grid, block, shared, T4_LIKE)


@pytest.mark.parametrize(("value", "expected"), [
    (None, ()), (128, (128,)), ((128,), (128,)), ((128, 2), (128, 2)), ([64, 2, 4], (64, 2, 4)),
])
def test_normalize_launch_bounds(value, expected):
    assert normalize_launch_bounds(value) == expected


def test_too_many_launch_bounds_get_numba_cudas_error():
    with pytest.raises(ValueError, match=r"^Got 4 launch bounds: \(128, 2, 4, 8\)\. A maximum of "
                                         r"three are supported: \(max_threads_per_block, "
                                         r"min_blocks_per_sm, max_blocks_per_cluster\)$"):
        normalize_launch_bounds((128, 2, 4, 8))


def test_a_block_beyond_the_launch_bounds_is_refused_as_a_gpu_refuses_it():
    check_launch_bounds("k", (8, 16), 128)  # 128 threads: allowed
    check_launch_bounds("k", 1024, None)  # no bounds
    with pytest.raises(LaunchConfigError, match=(
            r"^kernel 'k': block \(16, 16\) has 256 threads, more than the 128 its launch bounds "
            r"allow \(cuda.jit\(launch_bounds=\(128, 2\)\)\); a GPU refuses this launch with "
            r"CUDA_ERROR_INVALID_VALUE$")):
        check_launch_bounds("k", (16, 16), (128, 2))
