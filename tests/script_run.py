"""Running a test's Python script in a fresh process (what a later notebook or run would be)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_script(folder: Path, text: str, **env: str) -> dict:
    """Run `text` as a script in a new Python process, with `env` added to the environment;
    it must succeed, and its last line of output is JSON, which is returned."""
    script = folder / "script.py"
    script.write_text(text)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
