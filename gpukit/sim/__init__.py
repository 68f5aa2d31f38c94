"""The SIMT simulator behind CPUBackend.

`transform` (statements) and `expressions` rewrite a Numba CUDA kernel into lock-step numpy code
over the threads of a group of blocks; `runtime`, `calls`, `intrinsics` and `warps` are what that
code calls (masks, checked array access, the `cuda` namespace); `arrays`, `races` and `atomics`
check and perform memory accesses; `engine` validates and runs launches; `memory` is the simulated
device memory; `streams` the modeled timeline; `context` holds the state of the running launch. It models execution and memory semantics, not timing (see README).
"""
