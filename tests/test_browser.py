"""The widgets in a real JupyterLab: headless Chromium (Debian's `chromium`, driven by Playwright)
opens a generated notebook showing every widget, runs it, sees each one's summary, moves sliders of
`launch_geometry` and `occupancy_explorer` with the keyboard, and sees the summary text change. Skips, saying how to install them, without chromium or playwright.
The server always stops (kernels included); the whole test has a 90 s budget."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("GPUKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
BUDGET_S = 90.0

NOTEBOOK_CELLS = [
    ("from gpukit.widgets import launch_geometry\n"
     "launch_geometry(n=100, threads_per_block=32)"),
    ("from gpukit.widgets import occupancy_explorer\n"
     "occupancy_explorer(device='T4')"),
    ("import numpy as np\n"
     "from gpukit.backends.cpu import CPUBackend\n"
     "from gpukit.widgets import memory_monitor, timeline_view, transfer_bandwidth\n"
     "be = CPUBackend('T4')\n"
     "a = be.to_device(np.ones(1 << 20, np.float32))\n"
     "memory_monitor(be)"),
    "transfer_bandwidth(be, sizes=[4096, 65536], repeat=1)",
    "timeline_view(be)",
]
# What each widget's summary starts with once the notebook has run, in cell order.
FIRST_LINES = [
    "1D launch kernel[4, 32] over n = 100 elements",
    "T4 (CC 7.5): 256 threads/block, 32 registers/thread",
    "device memory of simulated T4:",
    "transfer bandwidth (GB/s = 10^9 bytes/s)",
    "modeled timeline:",
]


def _requirements() -> tuple[str, str] | None:
    """(what is missing, how to install it), or None when everything is there."""
    if not (os.path.exists(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return (f"chromium not found at {CHROMIUM}",
                ("apt-get install -y chromium (as root; or set GPUKIT_CHROMIUM to a Chromium "
                 "binary)"))
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return ("the Python package playwright is not installed",
                ("pip install playwright (its browser download, `playwright install`, is not "
                 "needed: the test drives the system chromium)"))
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        return "jupyterlab is not installed", "pip install 'gpukit[lab]'"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_notebook(path: Path) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "id": f"cell{i}", "metadata": {},
              "outputs": [], "source": source} for i, source in enumerate(NOTEBOOK_CELLS)]
    path.write_text(json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}}}))


class _Lab:
    """`jupyter lab` on localhost in its own process group, with its own config and data dirs."""

    def __init__(self, root: Path, deadline: float):
        self.root, self.deadline = root, deadline
        self.port, self.token = _free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        config = root / ".config"
        (config / "labconfig").mkdir(parents=True)
        # No news and update checks from the browser (nothing may reach the network).
        (config / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {
            "@jupyterlab/apputils-extension:announcements": True}}))
        # Start the notebook's kernel without asking (the "Select Kernel" dialog).
        settings = root / ".settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True)
        (settings / "tracker.jupyterlab-settings").write_text(
            json.dumps({"autoStartDefaultKernel": True}))
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_DATA_DIR=str(root / ".data"),
                   JUPYTER_RUNTIME_DIR=str(root / ".runtime"), IPYTHONDIR=str(root / ".ipython"),
                   JUPYTERLAB_SETTINGS_DIR=str(root / ".settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(root / ".workspaces"), JUPYTER_PLATFORM_DIRS="1",
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
        self.log = open(root / "jupyter.log", "wb")  # noqa: SIM115 - closed in stop()
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={self.port}",
                   "--ip=127.0.0.1", f"--IdentityProvider.token={self.token}",
                   f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
                   "--ServerApp.terminals_enabled=False", "--LabApp.expose_app_in_browser=True",
                   "--LabApp.extension_manager=readonly", "--LabApp.news_url=None",
                   "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI often run as root
            command.append("--allow-root")
        self.proc = subprocess.Popen(command, cwd=root, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def api(self, path: str, method: str = "GET") -> bytes:
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read()

    def wait_ready(self) -> None:
        while time.monotonic() < self.deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"jupyter lab exited with {self.proc.returncode}:\n"
                                     f"{self.log_text()}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.api("/api/status")
                return
            time.sleep(0.25)
        raise AssertionError(f"jupyter lab did not answer in time:\n{self.log_text()}")

    def log_text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return (self.root / "jupyter.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        """Shut the kernels and the server down; escalate to SIGTERM, then SIGKILL."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, urllib.error.URLError):
                for kernel in json.loads(self.api("/api/kernels")):
                    self.api(f"/api/kernels/{kernel['id']}", method="DELETE")
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.api("/api/shutdown", method="POST")
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, sig)
                try:
                    self.proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self.log.close()


def _remaining_ms(deadline: float) -> float:
    left = (deadline - time.monotonic()) * 1000
    if left <= 0:
        raise AssertionError(f"the browser test ran over its {BUDGET_S:.0f} s budget")
    return left


def test_widgets_render_and_sliders_move_in_jupyterlab(tmp_path):
    missing = _requirements()
    if missing:
        pytest.skip(f"browser test needs {missing[0]}; install: {missing[1]}")
    from playwright.sync_api import sync_playwright

    deadline = time.monotonic() + BUDGET_S
    _write_notebook(tmp_path / "widget.ipynb")
    lab = _Lab(tmp_path, deadline)
    try:
        lab.wait_ready()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                        headless=True, timeout=_remaining_ms(deadline))
            try:
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                page.set_default_timeout(min(60_000, _remaining_ms(deadline)))
                try:
                    _drive(page, lab, deadline)
                except Exception:
                    page.screenshot(path=str(tmp_path / "failure.png"))
                    raise
            finally:
                browser.close()
    finally:
        lab.stop()
    assert lab.proc.poll() is not None, "jupyter lab is still running"


_KERNEL_IDLE = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const context = panel && panel.sessionContext;
    return !!(context && context.isReady && context.session && context.session.kernel
              && context.session.kernel.status === 'idle');
}"""


def _summaries(page) -> list[str]:
    return page.locator(".gpukit-summary pre").all_inner_texts()


def _move_slider(page, description: str, deadline: float) -> None:
    """Focus the handle of the slider labelled `description` and press the right arrow."""
    slider = page.locator(".widget-slider", has_text=description).first
    handle = slider.locator(".noUi-handle").first
    handle.focus(timeout=_remaining_ms(deadline))
    handle.press("ArrowRight", timeout=_remaining_ms(deadline))


def _wait_for_summary(page, index: int, start: str, deadline: float) -> None:
    page.wait_for_function(
        "([index, start]) => { const pre = document.querySelectorAll('.gpukit-summary pre');"
        " return pre.length > index && pre[index].innerText.startsWith(start); }",
        arg=[index, start], timeout=_remaining_ms(deadline))


def _drive(page, lab: _Lab, deadline: float) -> None:
    page.goto(f"{lab.url}/lab/tree/widget.ipynb?token={lab.token}",
              timeout=_remaining_ms(deadline))
    page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')",
                           timeout=_remaining_ms(deadline))
    # Run the notebook once its kernel is up and idle (earlier, JupyterLab drops the request).
    page.wait_for_function(_KERNEL_IDLE, timeout=_remaining_ms(deadline))
    # Not awaited: the command's promise settles only when every cell has run.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    for index, start in enumerate(FIRST_LINES):  # every widget rendered, with its summary
        _wait_for_summary(page, index, start, deadline)
    assert len(page.locator(".gpukit-widget img").all()) == len(FIRST_LINES)

    # Move sliders as a user would: the kernel redraws and the summary text changes.
    _move_slider(page, "threads_per_block", deadline)  # launch_geometry's, the first one
    _wait_for_summary(page, 0, "1D launch kernel[4, 33]", deadline)
    assert "4 blocks x 33 threads = 132 threads: 100 work, 32 idle (24.2%)" in _summaries(page)[0]
    readout = page.locator(".widget-slider", has_text="threads_per_block").first \
        .locator(".widget-readout")
    assert readout.inner_text().strip() == "33"
    _move_slider(page, "registers/thread", deadline)  # the occupancy explorer's
    _wait_for_summary(page, 1, "T4 (CC 7.5): 256 threads/block, 33 registers/thread", deadline)
    from gpukit.occupancy import occupancy
    assert occupancy("T4", 256, 33).summary() in _summaries(page)[1]
