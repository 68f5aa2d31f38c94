"""Runs a file of checks under Numba's CUDA simulator in a subprocess (NUMBA_ENABLE_CUDASIM=1).

The CUDA backend cannot run here without a GPU; Numba's simulator stands in for the device. It
must be switched on before numba is imported, hence a fresh interpreter per file of checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_checks(checks: Path, report_dir: Path) -> tuple[dict[str, list[str]], str]:
    """({check name, with its parameters: problems (empty when it passed)}, the output)."""
    report = report_dir / f"{checks.stem}.xml"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    env.pop("GPUKIT_BACKEND", None)
    command = [sys.executable, "-m", "pytest", str(checks), "-q", "-p", "no:cacheprovider",
               "-o", "addopts=", f"--junitxml={report}"]  # not this repository's -n, nbval
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    output = f"$ {' '.join(command)}\n{proc.stdout}\n{proc.stderr}"
    if not report.exists():
        raise AssertionError(f"the simulator run wrote no report:\n{output}")
    results: dict[str, list[str]] = {}
    for case in ET.parse(report).iter("testcase"):
        # a check skipped with its reason (what Numba's simulator lacks) is no problem; the
        # whole file skipped (NUMBA_ENABLE_CUDASIM not set) is
        problems = [f"{child.tag}: {child.get('message', '')}\n{child.text or ''}"
                    for child in case if child.tag in ("failure", "error")
                    or (child.tag == "skipped" and "NUMBA_ENABLE_CUDASIM" in
                        child.get("message", ""))]
        results.setdefault(case.get("name", ""), []).extend(problems)
    return results, output
