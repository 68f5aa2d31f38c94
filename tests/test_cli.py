"""gpukit.cli: the `gpukit` command's output and exit codes."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

import gpukit.backends as registry
from gpukit.backends.base import Backend, BackendStatus, Capabilities, MemoryInfo
from gpukit.cli import main
from gpukit.devices import GiB, get_profile

CPU_BACKEND_PRESENT = importlib.util.find_spec("gpukit.backends.cpu") is not None


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_devices_lists_profiles_and_limits(capsys):
    code, out, err = run(capsys, "devices")
    assert code == 0 and err == ""
    for name in ("T4", "V100", "A100 40GB", "RTX 3090", "L4", "H100 SXM", "H200"):
        assert f"\n{name} " in out
    rows = [re.split(r"\s{2,}", line) for line in out.splitlines()]
    assert ["A100 40GB", "8.0", "108", "40.0 GiB", "1555 GB/s", "19.5 TFLOP/s", "PCIe Gen4"] in rows
    lines = {line.split()[0]: line for line in out.splitlines() if line[:1].isdigit()}
    assert lines["8.0"].split()[:5] == ["8.0", "2048", "64", "32", "65536"]
    assert "164 KiB" in lines["8.0"] and "163 KiB" in lines["8.0"] and "1024 B" in lines["8.0"]
    assert lines["7.5"].endswith("32, 64") and lines["6.1"].endswith("fixed")


def test_occupancy_command(capsys):
    code, out, err = run(capsys, "occupancy", "--device", "A100", "--threads", "256",
                         "--regs", "40", "--smem", "4096")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        ("A100 40GB (CC 8.0): 256 threads/block, 40 registers/thread, 4096 B shared memory/block "
         "(carveout default, opt-in on)"),
        "  75% occupancy (48/64 warps), 6 blocks/SM, limited by registers",
        "  blocks/SM allowed by: warps 8, registers 6, shared memory 32, blocks per SM 32",
        "  allocated per block: 10240 registers, 5120 B shared memory (SM configured for 164 KiB)",
    ]


def test_occupancy_carveout_and_opt_in(capsys):
    code, out, _ = run(capsys, "occupancy", "--device", "8.0", "--threads", "128", "--carveout",
                       "0")
    assert code == 0
    assert "50% occupancy (32/64 warps), 8 blocks/SM, limited by shared memory" in out
    assert "(SM configured for 8 KiB)" in out
    code, out, _ = run(capsys, "occupancy", "--device", "A100", "--threads", "128", "--smem",
                       str(100 * 1024), "--no-opt-in")
    assert code == 0
    assert "0% occupancy: cannot launch, the block needs 103424 B of shared memory" in out


def test_occupancy_best_block_size_and_curve(capsys):
    code, out, _ = run(capsys, "occupancy", "--device", "A100", "--regs", "40", "--smem", "4096",
                       "--best")
    assert code == 0
    assert out.startswith("Best block size: 768 threads (a grid of at least 216 blocks fills "
                          "every SM)\nA100 40GB (CC 8.0): 768 threads/block")
    code, out, _ = run(capsys, "occupancy", "--device", "7.0", "--threads", "128", "--curve",
                       "regs")
    assert code == 0
    rows = out.split("(rows where it changes):\n")[1].splitlines()
    assert rows[0].split() == ["Registers", "per", "thread", "Occupancy", "Warps/SM", "Blocks/SM",
                               "Limited", "by"]
    assert rows[1].split()[:4] == ["1", "100%", "64", "16"]
    assert any(row.split()[:4] == ["33", "75%", "48", "12"] for row in rows)


@pytest.mark.parametrize("argv, message", [
    ([], "the following arguments are required: COMMAND"),
    (["bogus"], "invalid choice: 'bogus'"),
    (["occupancy", "--threads", "x"], "argument --threads: invalid int value: 'x'"),
    (["occupancy", "--threads", "128", "--curve", "warps"], "argument --curve: invalid choice"),
])
def test_bad_arguments_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and err.startswith("usage: gpukit")


@pytest.mark.parametrize("argv, message", [
    (["occupancy", "--device", "foo", "--threads", "128"], "unknown device 'foo': not a profile"),
    (["occupancy", "--threads", "0"], "threads_per_block must be a positive int, got 0"),
    (["occupancy", "--threads", "128", "--carveout", "150"], "carveout is a percentage"),
    (["occupancy"], "give --threads N (threads per block), or --best to search for one"),
])
def test_gpukit_errors_exit_1_with_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.startswith(f"gpukit: error: {message}") and err.count("\n") == 1


class FakeBackend(Backend):
    """Just enough of a backend for `gpukit info` to describe."""

    name = "fake"
    is_available = True
    profile = get_profile("L4")

    def compile_kernel(self, func, signature=None):
        return func

    def allocate(self, shape, dtype="float32"):
        return None

    def to_device(self, array):
        return array

    def to_host(self, array):
        return array

    def synchronize(self):
        pass

    def free(self, array):
        pass

    def capabilities(self):
        return Capabilities(32, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 49152, 101376,
                            (8, 9), 58, self.profile.memory_bytes)

    def memory_info(self):
        return MemoryInfo(free_bytes=self.profile.memory_bytes - 2 * GiB,
                          total_bytes=self.profile.memory_bytes)

    def status(self):
        return BackendStatus("fake", True, "L4", 2 * GiB, 3)


def test_info_describes_the_selected_backend(capsys, monkeypatch):
    monkeypatch.setitem(registry._FACTORIES, "fake", FakeBackend)
    code, out, err = run(capsys, "info", "--backend", "fake")
    assert code == 0 and err == ""
    assert out.startswith("gpukit 0.1.0 on Python ")
    assert "\nBackends:\n" in out and "  fake  available" in out
    assert "\n  cuda  " in out  # available or the reason why not, never a crash
    assert "Selected backend: fake (asked for 'fake')" in out
    assert f"  device: {get_profile('L4').describe()}" in out
    assert "  memory: 2.00 GiB used of 21.99 GiB (9.1%, pressure low)" in out
    assert "  status: initialized, 3 kernel launches, 2147483648 B allocated" in out
    assert "Kernel inspection (registers, shared memory via ptxas): " in out


def test_info_reports_an_unusable_backend(capsys, monkeypatch):
    def broken():
        raise RuntimeError("no such device")

    monkeypatch.setitem(registry._FACTORIES, "broken", broken)
    code, out, err = run(capsys, "info", "--backend", "broken")
    assert code == 1
    assert "  broken  not available: RuntimeError: no such device" in out
    assert "Selected backend: none (RuntimeError: no such device)" in out
    assert err == "gpukit: error: no backend can be used here\n"


def _info_in_subprocess(block_cupy: bool) -> subprocess.CompletedProcess:
    prelude = "import sys; sys.modules['cupy'] = None; " if block_cupy else ""
    code = prelude + "from gpukit.cli import main; raise SystemExit(main(['info']))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("block_cupy", [True, False], ids=["cupy-blocked", "cupy-importable"])
def test_info_without_a_gpu_never_crashes(block_cupy):
    proc = _info_in_subprocess(block_cupy)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "\nBackends:\n" in proc.stdout and "\n  cuda  " in proc.stdout
    cupy = proc.stdout.splitlines()[0]
    if block_cupy:
        assert cupy.endswith("CuPy not installed)")
    elif importlib.util.find_spec("cupy") is not None:
        assert "CuPy not installed" not in cupy
    if CPU_BACKEND_PRESENT:  # the simulator is always usable
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "\n  cpu   available" in proc.stdout
    else:
        assert proc.returncode == 1 and "gpukit: error: no backend can be used" in proc.stderr


# -- gpukit lab -------------------------------------------------------------------------------------
def test_lab_command_adds_allow_root_only_as_root():
    from gpukit.cli import lab_command
    base = [sys.executable, "-m", "jupyterlab"]
    assert lab_command(["notebooks/"], root=False) == [*base, "notebooks/"]
    assert lab_command(["notebooks/"], root=True) == [*base, "notebooks/", "--allow-root"]
    assert lab_command(["--allow-root"], root=True) == [*base, "--allow-root"]


def test_lab_passes_every_argument_to_jupyter(capsys, monkeypatch):
    from gpukit import cli
    ran = []
    monkeypatch.setattr(cli, "_exec", lambda command: ran.append(command) or 0)
    monkeypatch.setattr(cli, "_is_root", lambda: True)
    assert run(capsys, "lab", "notebooks/", "--port", "8899", "--no-browser") == (
        0, "", "gpukit: running as root, so JupyterLab starts with --allow-root\n")
    assert ran == [[sys.executable, "-m", "jupyterlab", "notebooks/", "--port", "8899",
                    "--no-browser", "--allow-root"]]
    monkeypatch.setattr(cli, "_is_root", lambda: False)
    assert run(capsys, "lab", "--version") == (0, "", "")
    assert ran[-1] == [sys.executable, "-m", "jupyterlab", "--version"]


def test_lab_without_jupyterlab_says_how_to_install_it(capsys, monkeypatch):
    from gpukit import cli
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: None)
    message = ('gpukit: error: JupyterLab is not installed in this environment: pip install -e '
               '".[lab]" installs it with everything the lessons use\n')
    assert run(capsys, "lab") == (1, "", message)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("jupyterlab") is None, reason="needs JupyterLab")
def test_lab_starts_jupyterlab_here(tmp_path):
    """The real thing: JupyterLab starts (and, as root, would refuse without --allow-root)."""
    import os
    import socket
    import time
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_DATA_DIR": str(tmp_path)}
    args = ["--no-browser", f"--port={port}", "--ServerApp.port_retries=0",
            "--IdentityProvider.token=gpukit-test", f"--ServerApp.root_dir={tmp_path}"]
    proc = subprocess.Popen([sys.executable, "-m", "gpukit.cli", "lab", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, seen = time.monotonic() + 120, []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if f":{port}/lab" in line or not line:
                break
        assert any(f":{port}/lab" in line for line in seen), "".join(seen)
    finally:   # how long a loaded machine takes to shut the server down is not under test
        proc.terminate()
        try:
            proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    if os.geteuid() == 0:   # what the subcommand saves a root user from
        refused = subprocess.run([sys.executable, "-m", "jupyterlab", *args], env=env,
                                 check=False, capture_output=True, text=True, timeout=120)
        assert refused.returncode != 0 and "--allow-root" in refused.stderr
