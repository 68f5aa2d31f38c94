#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and driver (a lab machine, a Colab T4, a lent GPU): install
# gpukit with the cuda extra and record, in benchmarks/GPU.md, what issue 17 asks a GPU run to
# show: the device, driver and versions, `gpukit selftest` on every backend, the tests that need
# a GPU (pytest -m gpu), every notebook executed on CUDABackend (nbval-lax: the cells must run;
# their outputs differ from the simulator's), and timing and bandwidth measured with CUDA events.
# Usage: bash benchmarks/gpu_check.sh   (about 10-20 minutes; it exits non-zero if anything fails)
#   GPUKIT_PYTHON=python3   use that interpreter as it is (gpukit importable, its packages
#                           installed: a machine without network access) instead of a new venv
#   GPUKIT_GPU_DIFF=DIR     also launch the differential tester's kernels prepared in DIR
#                           (python benchmarks/gpu_differential.py prepare --out DIR, on any
#                           machine) on the GPU and compare them with the simulator, bit for bit
#   GPUKIT_GPU_RECORD=FILE  where the record goes (default benchmarks/GPU.md)
#   PYTEST_ADDOPTS="-n 8"   (pytest-xdist) runs the notebooks in parallel
set -uo pipefail
cd "$(dirname "$0")/.."
py=${GPUKIT_PYTHON:-}
if [ -z "$py" ]; then
    python3 -m venv .venv && .venv/bin/pip install -q -e ".[test,cuda]" || exit 1
    py=.venv/bin/python
fi
record=${GPUKIT_GPU_RECORD:-benchmarks/GPU.md}
status=0
section() { printf '\n## %s\n\n```\n' "$1" >> "$record"; }
run() { "$@" >> "$record" 2>&1 || status=1; printf '```\n' >> "$record"; }
{
    echo "# gpukit on a real GPU"
    echo
    echo "Recorded by benchmarks/gpu_check.sh on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
} > "$record"
section "nvidia-smi";        run nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max --format=csv
section "gpukit info";       run "$py" -m gpukit.cli info
section "gpukit selftest";   run "$py" -m gpukit.cli selftest
section "pytest -m gpu";     run "$py" -m pytest -p no:cacheprovider -q -o addopts= -m gpu \
    tests/test_contract.py tests/test_cuda_backend.py tests/test_ops.py tests/test_resources.py
if [ -n "${GPUKIT_GPU_DIFF:-}" ]; then
    section "the differential tester's kernels: simulator against the GPU"
    run bash -c "'$py' benchmarks/gpu_differential.py gpu '$GPUKIT_GPU_DIFF' --out '$GPUKIT_GPU_DIFF/gpu' \
        && '$py' benchmarks/gpu_differential.py compare '$GPUKIT_GPU_DIFF' '$GPUKIT_GPU_DIFF/gpu'"
fi
section "timing and bandwidth (CUDA events)"
run "$py" - <<'PY'
import numpy as np
import gpukit
from gpukit.selftest.corpus import scale_shift
from gpukit.timing import bandwidth_sweep, time_kernel

gpu = gpukit.get_backend("cuda")
print(gpu.device_name, "|", gpu.version, "|", gpu.profile.describe())
for n in (1 << 16, 1 << 20, 1 << 24):
    x = gpu.to_device(np.ones(n, np.float32))
    t = time_kernel(scale_shift, (n + 255) // 256, 256, x, x, backend=gpu, repeat=50)
    print(f"scale_shift n={n:>10,}: {t.summary()}")
for direction in ("h2d", "d2h", "d2d"):
    for row in bandwidth_sweep(gpu, [1 << 20, 1 << 24, 1 << 26], direction,
                               pinned=(False, True), repeat=10):
        print(row)
PY
section "notebooks on CUDABackend (nbval-lax)"
run env GPUKIT_BACKEND=cuda "$py" -m pytest -p no:cacheprovider -q -o addopts= \
    --nbval-lax --nbval-current-env --nbval-cell-timeout=300 notebooks
echo "gpu_check: $( [ $status = 0 ] && echo all passed || echo SOMETHING FAILED ) - see $record"
exit $status
