"""2D convolution, forward pass, computed directly: one thread per output element.

x is NCHW (batch, channels, height, width), w is KCRS (filters, channels, rows, cols); the
output is (N, K, P, Q) with P = (H + 2 * pad_h - R) // stride_h + 1 and Q likewise. As in deep
learning frameworks it is a cross-correlation (the filter is not flipped). Zero padding is not
materialised: taps that fall outside x are skipped. No dilation, groups, bias, im2col or
shared-memory tiling.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda

from ._common import (
    OpInputError,
    blocks,
    check_nonempty,
    check_rank,
    common_dtype,
    launch,
    operand,
    resolve_backend,
    staging,
)

BLOCK = (16, 16)  # threads per block along (output column, output row)


@functools.cache
def conv2d_kernel(dtype: type) -> Any:
    """The direct convolution kernel for `dtype`. Grid (Q tiles, P tiles, N * K)."""

    def conv2d_direct(x, w, y, stride_h, stride_w, pad_h, pad_w):
        q = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x  # output column
        p = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y  # output row
        filters = w.shape[0]
        image = cuda.blockIdx.z // filters  # grid z runs over (image, filter) pairs
        f = cuda.blockIdx.z % filters
        if p < y.shape[2] and q < y.shape[3]:
            acc = dtype(0)
            for c in range(x.shape[1]):
                for r in range(w.shape[2]):
                    row = p * stride_h - pad_h + r  # the input row this tap reads
                    if 0 <= row < x.shape[2]:  # rows in the zero padding add nothing
                        for s in range(w.shape[3]):
                            col = q * stride_w - pad_w + s
                            if 0 <= col < x.shape[3]:
                                acc += x[image, c, row, col] * w[f, c, r, s]
            y[image, f, p, q] = acc

    return conv2d_direct


MAX_STEP = 2**31 - 1  # strides and padding are int32 on the device


def _pair(name: str, value: Any, minimum: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, (int, np.integer)) else value
    ok = (isinstance(pair, (tuple, list)) and len(pair) == 2
          and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                  and minimum <= v <= MAX_STEP for v in pair))
    if not ok:
        raise OpInputError(f"conv2d_forward: {name} must be an int >= {minimum} or a pair of "
                           f"them (rows, cols), got {value!r}")
    return int(pair[0]), int(pair[1])


def output_shape(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: tuple[int, int],
                 padding: tuple[int, int]) -> tuple[int, int, int, int]:
    """(N, K, P, Q) of conv2d_forward; P or Q may come out <= 0 for a filter larger than x."""
    n, _, h, wid = x_shape
    k, _, r, s = w_shape
    return (n, k, (h + 2 * padding[0] - r) // stride[0] + 1,
            (wid + 2 * padding[1] - s) // stride[1] + 1)


def conv2d_forward(x: Any, w: Any, stride: Any = (1, 1), padding: Any = (0, 0), *,
                   backend: Any = None) -> Any:
    """The direct convolution of NCHW `x` with KCRS filters `w`; a new (N, K, P, Q) device array.

    stride and padding are ints or (rows, cols) pairs; padding adds zeros on both sides.
    """
    op = "conv2d_forward"
    backend = resolve_backend(backend, op)
    xo, wo = operand(backend, op, "x", x), operand(backend, op, "w", w)
    check_rank(op, xo, 4, "(batch, channels, height, width)")
    check_rank(op, wo, 4, "(filters, channels, rows, cols)")
    check_nonempty(op, xo, wo)
    dtype = common_dtype(op, xo, wo)
    stride = _pair("stride", stride, 1)
    padding = _pair("padding", padding, 0)
    if xo.shape[1] != wo.shape[1]:
        raise OpInputError(f"{op}: x has {xo.shape[1]} channels (shape {xo.shape}) but w has "
                           f"{wo.shape[1]} (shape {wo.shape}); axis 1 of both must match")
    out_shape = output_shape(xo.shape, wo.shape, stride, padding)
    if out_shape[2] < 1 or out_shape[3] < 1:
        raise OpInputError(
            f"{op}: the {wo.shape[2]}x{wo.shape[3]} filter does not fit the {xo.shape[2]}x"
            f"{xo.shape[3]} input with padding {padding}: the output would be {out_shape[2]}x"
            f"{out_shape[3]}; use a smaller filter or more padding")
    n, k, p, q = out_shape
    grid = (blocks(q, BLOCK[0]), blocks(p, BLOCK[1]), n * k)
    flops = 2 * n * k * p * q * wo.shape[1] * wo.shape[2] * wo.shape[3]
    with staging(backend, op) as stage:
        x_dev, w_dev = stage.inputs([xo, wo])
        y = stage.allocate(out_shape, dtype, result=True)
        launch(backend, conv2d_kernel(dtype.type), grid, BLOCK, x_dev, w_dev, y, stride[0],
               stride[1], padding[0], padding[1], op=op, flops=flops)
        return y


def reference(x: np.ndarray, w: np.ndarray, stride: Any = (1, 1),
              padding: Any = (0, 0)) -> np.ndarray:
    """The numpy result conv2d_forward computes (a loop over filter taps), for checking."""
    stride, padding = _pair("stride", stride, 1), _pair("padding", padding, 0)
    n, k, p, q = output_shape(x.shape, w.shape, stride, padding)
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    out = np.zeros((n, k, p, q), np.float64)
    for r in range(w.shape[2]):
        for s in range(w.shape[3]):
            patch = padded[:, :, r:r + stride[0] * p:stride[0], s:s + stride[1] * q:stride[1]]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, r, s])
    return out.astype(x.dtype)
