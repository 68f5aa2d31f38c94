"""The backend contract (tests/contract.py) on CUDABackend under Numba's CUDA simulator; run by
tests/test_contract.py in a subprocess (NUMBA_ENABLE_CUDASIM must be set before numba.cuda is
imported). The file name does not match test_*.py on purpose."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    pytest.skip("runs only under NUMBA_ENABLE_CUDASIM=1 (tests/test_contract.py runs it so)",
                allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from contract import CHECKS

from gpukit.backends.cuda import CUDABackend


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_contract(check):
    kwargs = {"other": CUDABackend()} if "other" in inspect.signature(check).parameters else {}
    check(CUDABackend(), **kwargs)
