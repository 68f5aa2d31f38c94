"""The seed operations as readable Numba CUDA kernels that run on every gpukit backend.

gemm (naive and shared-memory tiled; cuBLAS via CuPy as "library" on the CUDA backend),
batched_gemm, conv2d_forward (direct), attention (fused online softmax), reduce (shared-memory
tree plus warp shuffle), unary and binary (element-wise). float32 and float64. Operands are
device arrays of the backend (`backend=`, default `gpukit.current_backend()`); numpy arrays are
copied to the device with an ImplicitTransferWarning; results stay on the device. Every launch's
record (simulator) carries `extra["op"]` and `extra["flops"]`. Each module also has a numpy
`reference`. These are teaching kernels: correct and readable, not tuned.
"""

from __future__ import annotations

from types import SimpleNamespace

from . import attention as _attention
from . import conv as _conv
from . import elementwise as _elementwise
from . import gemm as _gemm
from . import reduce as _reduce
from ._common import OpInputError
from .attention import attention
from .conv import conv2d_forward
from .elementwise import BinaryOp, UnaryOp, binary, unary
from .gemm import batched_gemm, gemm
from .reduce import ReduceOp, reduce

# numpy versions of each op, for checking results: references.gemm(a, b, ...), ...
references = SimpleNamespace(
    gemm=_gemm.reference, batched_gemm=_gemm.reference, conv2d_forward=_conv.reference,
    attention=_attention.reference, reduce=_reduce.reference,
    unary=_elementwise.unary_reference, binary=_elementwise.binary_reference)

__all__ = ["BinaryOp", "OpInputError", "ReduceOp", "UnaryOp", "attention", "batched_gemm",
           "binary", "conv2d_forward", "gemm", "reduce", "references", "unary"]
