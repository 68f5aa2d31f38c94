"""gpukit.simulate: starting and stopping the mode, exactly what it patches, its entry points
(python -m gpukit.simulate, GPUKIT_SIMULATE, pytest --gpukit-simulate, %gpukit), and errors that
come out of the user's launch line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gpukit
from gpukit.errors import OutOfBoundsError, RaceConditionError
from gpukit.simulate import patching
from gpukit.simulate.session import SimulationNotActiveError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_simulation_left():
    yield
    gpukit.simulate.stop()


def _originals() -> dict:
    found = {}
    for where, attr, *_ in patching.PATCHED:
        target = patching._target(where)
        found[(where, attr)] = target.__dict__.get(attr) if isinstance(target, type) else \
            getattr(target, attr)
    return found


def test_nothing_is_patched_until_asked_and_stop_restores_the_very_same_objects():
    before = _originals()
    assert not patching.is_applied()
    with gpukit.simulate("A100") as simulation:
        assert simulation.active and gpukit.simulate.active() is simulation
        during = _originals()
        assert all(during[key] is not before[key] for key in before)
        assert cuda.get_current_device().name == "A100 40GB (gpukit simulator)"
    assert gpukit.simulate.active() is None
    after = _originals()
    assert all(after[key] is before[key] for key in before)
    assert sys.excepthook is sys.__excepthook__


def test_simulations_nest_and_stop_ends_them_all():
    outer = gpukit.simulate("T4")
    with gpukit.simulate("H100"):
        assert cuda.get_current_device().compute_capability == (9, 0)
    assert cuda.get_current_device().compute_capability == (7, 5)
    assert gpukit.simulate.active() is outer
    gpukit.simulate.simulate_again = None  # the module is an ordinary module besides __call__
    gpukit.simulate("A100")
    gpukit.simulate.stop()
    assert gpukit.simulate.active() is None and not patching.is_applied()


def test_objects_of_a_stopped_simulation_say_it_is_not_active():
    with gpukit.simulate():
        pass
    from gpukit.simulate import host_api
    with pytest.raises(SimulationNotActiveError, match="simulation mode is not active; start it "
                                                       r"with gpukit.simulate\(\)"):
        host_api.device_array(4)


def test_the_patch_table_documents_every_replacement():
    for where, attr, module, name, why in patching.PATCHED:
        assert why and (module == "" or callable(patching._replacement(module, name)))
    names = {attr for where, attr, *_ in patching.PATCHED if where == "numba.cuda"}
    assert {"to_device", "device_array", "jit", "synchronize", "stream", "event",
            "current_context", "get_current_device", "gpus"} <= names


def test_options_from_text_reads_devices_and_options():
    read = gpukit.simulate.options_from_text
    assert read("1") == {} and read("") == {}
    assert read("A100") == {"device": "A100"}
    assert read("H100,checks=bounds+races,seed=3,schedule=shuffle,watchdog_s=none") == {
        "device": "H100", "checks": ["bounds", "races"], "seed": 3, "schedule": "shuffle",
        "watchdog_s": None}
    assert read("checks=none")["checks"] is False


def test_dispatchers_made_before_the_simulation_launch_on_it():
    @cuda.jit
    def double(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= 2

    with gpukit.simulate() as simulation:
        d = cuda.to_device(np.arange(8.0))
        double[1, 32](d)
        np.testing.assert_array_equal(d.copy_to_host(), np.arange(8.0) * 2)
        assert [r.kernel for r in simulation.launches] == ["double"]


class _InOnly:
    """A numba-cuda dispatcher extension: host arrays go in, nothing comes back."""

    def __init__(self):
        self.seen, self.written_back = [], []

    def prepare_args(self, ty, val, stream=0, retr=None):
        self.seen.append(str(ty))
        retr.append(lambda: self.written_back.append(True))
        return ty, cuda.In(val)


def test_dispatcher_extensions_map_the_arguments_as_in_numba_cuda():
    with gpukit.simulate():
        @cuda.jit
        def set_three(a):
            a[0] = 3

        extension = _InOnly()
        set_three.extensions.append(extension)
        host = np.zeros(1, np.int64)
        set_three[1, 1](host)
    assert host[0] == 0  # cuda.In: not copied back
    assert extension.seen == ["array(int64, 1d, C)"] and extension.written_back == [True]


def test_eager_signatures_are_chosen_by_numba_cudas_overload_resolution():
    with gpukit.simulate():
        @cuda.jit(["(float64[::1], float32, float32)", "(float64[::1], float64, float64)"])
        def add(r, x, y):
            r[0] = x + y

        r = np.zeros(1)
        add[1, 1](r, np.float32(1), np.float32(2 ** -25))
        assert r[0] == 1.0  # summed in float32
        add[1, 1](r, 1, 2 ** -25)  # int64, float64: the float64 signature, not the first
        assert r[0] == 1.0000000298023224

        @cuda.jit(["(float64[::1], float32, float64)", "(float64[::1], float64, float32)"])
        def tie(r, x, y):
            r[0] = x + y

        with pytest.raises(TypeError, match=r"^Ambiguous overloading for <function .*tie at "
                                            r"0x[0-9a-f]+> \(Array\(float64, 1, 'C', False, "
                                            r"aligned=True\), float64, float64\):\n"):
            tie[1, 1](r, 1.0, 2.0)


def test_arguments_convert_to_an_eager_signature_as_c_converts():
    with gpukit.simulate():
        @cuda.jit("void(int64[:], int32, uint8)")
        def store(r, x, y):
            r[0] = x
            r[1] = y

        r = np.zeros(2, np.int64)
        store[1, 1](r, 0xFFFFFFFF, 257)  # wrap, as numba-cuda's conversion does
        assert r.tolist() == [-1, 1]
        # a float for an integer parameter: numba-cuda's ctypes conversion refuses it at launch
        with pytest.raises(TypeError, match="^'float' object cannot be interpreted as an "
                                            "integer$"):
            store[1, 1](r, 12.3, 1)


def _add(x, y):
    return x + y


@pytest.mark.parametrize(("sigs", "args", "want"), [
    (["(int64, int64)"], (1.5, 2.5), 3),  # an unsafe conversion, as numba-cuda makes it
    (["(int64, int64)", "(float64, float64)"], (np.int32(1), 2.5), 3.5),
])
def test_calls_of_a_device_function_with_signatures_convert_to_the_one_chosen(sigs, args, want):
    with gpukit.simulate():
        add = cuda.jit(sigs, device=True)(_add)

        @cuda.jit
        def call(r, x, y):
            r[0] = add(x, y)

        r = np.zeros(1, type(want))
        call[1, 1](r, *args)
    assert r[0] == want


def test_launch_configurations_are_checked_when_made_as_numba_cuda_checks_them():
    with gpukit.simulate():
        @cuda.jit
        def noop(x):
            pass

        with pytest.raises(TypeError, match=r"^griddim must be a sequence of integers, got "
                                            r"\[2\.0\]"):
            noop[2.0, 3]
        with pytest.raises(ValueError, match=r"^blockdim must be a sequence of 1, 2 or 3 "
                                             r"integers, got \[3, 4, 5, 6\]"):
            noop[(1, 2), (3, 4, 5, 6)]


def test_kernel_errors_come_from_the_launch_line_with_the_users_frames_only():
    @cuda.jit
    def write_past_the_end(out):
        i = cuda.grid(1)
        out[i] = 1.0

    with gpukit.simulate():
        out = cuda.device_array(10)
        with pytest.raises(OutOfBoundsError) as info:
            write_past_the_end[1, 32](out)
    err = info.value
    assert (err.kernel, err.thread, err.block) == ("write_past_the_end", (10, 0, 0), (0, 0, 0))
    frames = traceback.extract_tb(err.__traceback__)
    assert [Path(f.filename).name for f in frames] == ["test_simulate.py", "dispatch.py"]
    assert frames[0].line == "write_past_the_end[1, 32](out)"
    assert frames[1].name == "__call__"  # the launch itself, which pytest and IPython hide:
    assert [e for e in info.traceback if not e.ishidden(info)][-1].name == \
        "test_kernel_errors_come_from_the_launch_line_with_the_users_frames_only"


def test_debug_true_kernels_raise_on_a_zero_divisor_as_numba_cudas_debug_mode():
    def quotient(r, x, y):
        r[0] = y[0] / x[0]
        r[1] = y[0]

    with gpukit.simulate():
        debug = cuda.jit(debug=True, opt=False)(quotient)
        plain = cuda.jit(quotient)
        r, x, y = np.zeros(2), np.zeros(1), np.ones(1)
        with pytest.raises(ZeroDivisionError) as info:
            debug[1, 1](r, x, y)
        assert str(info.value).startswith(
            "division by zero in 'y[0] / x[0]': the kernel was compiled with debug=True, under "
            "which numba-cuda uses Python's error model: a zero divisor raises "
            "ZeroDivisionError, floats too")
        np.testing.assert_array_equal(r, [0, 0])  # the launch stopped at the division
        plain[1, 1](r, x, y)  # numba-cuda's default (numpy's error model): inf, no error
        np.testing.assert_array_equal(r, [np.inf, 1])


def test_debug_true_integer_modulo_raises_even_with_the_division_check_off():
    def remainder(r, n, d):
        r[0] = n % d

    backend = gpukit.get_backend("cpu", checks={"division_by_zero": False})
    r = backend.allocate(1, np.int64)
    backend.launch_kernel(remainder, 1, 1, r, 7, 0)  # the check off: no error without debug
    with pytest.raises(ZeroDivisionError, match=r"^modulo by zero in 'n % d': the kernel was "):
        backend.launch_kernel(cuda.jit(debug=True, opt=False)(remainder), 1, 1, r, 7, 0)


def test_debug_true_float_floordiv_and_divmod_raise_too():
    def floor_quotient(r, x, y):
        r[0] = x // y

    def quotient_and_remainder(r, x, y):
        q, m = divmod(x, y)
        r[0] = q + m

    backend = gpukit.get_backend("cpu")
    r = backend.allocate(1, np.float64)
    for kernel, text in ((floor_quotient, r"division by zero in 'x // y'"),
                         (quotient_and_remainder, r"divmod by zero in 'divmod\(x, y\)'")):
        backend.launch_kernel(kernel, 1, 1, r, 1.0, 0.0)  # IEEE without debug=True: no error
        with pytest.raises(ZeroDivisionError, match="^" + text):
            backend.launch_kernel(cuda.jit(debug=True, opt=False)(kernel), 1, 1, r, 1.0, 0.0)


PROGRAM = """
import numpy as np
from numba import cuda

@cuda.jit
def reverse(a):
    tile = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    tile[t] = a[t]
    {barrier}
    a[t] = tile[63 - t]

a = cuda.to_device(np.arange(64, dtype=np.float32))
reverse[1, 64](a)
print(cuda.get_current_device().name, a.copy_to_host()[:3])
"""


def _program(tmp_path: Path, barrier: bool) -> Path:
    path = tmp_path / "program.py"
    path.write_text(PROGRAM.format(barrier="cuda.syncthreads()" if barrier else "pass"))
    return path


def _run(args: list[str], env: dict | None = None, cwd: Path | None = None
         ) -> subprocess.CompletedProcess:
    full = {**os.environ, "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS": "0", **(env or {})}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=full,
                          check=False,
                          cwd=cwd, timeout=300)


@pytest.mark.slow
def test_python_m_gpukit_simulate_runs_a_program_unchanged_and_stops_its_bug(tmp_path):
    ok = _run(["-m", "gpukit.simulate", "--device", "A100", str(_program(tmp_path, True))])
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "A100 40GB (gpukit simulator) [63. 62. 61.]"
    bad = _run(["-m", "gpukit.simulate", str(_program(tmp_path, False))])
    assert bad.returncode == 1
    lines = bad.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == f'  File "{tmp_path / "program.py"}", line 14, in <module>'
    assert lines[2].strip() == "reverse[1, 64](a)"
    assert lines[3].startswith("gpukit.errors.RaceConditionError: data race on tile[")
    assert "gpukit" + os.sep not in bad.stderr.replace(str(tmp_path), "")


@pytest.mark.slow
def test_gpukit_simulate_variable_needs_no_import_of_gpukit(tmp_path):
    program = _program(tmp_path, True)
    ok = _run([str(program)], env={"GPUKIT_SIMULATE": "H100"})
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "H100 SXM (gpukit simulator) [63. 62. 61.]"
    probe = tmp_path / "probe.py"
    probe.write_text("import sys\nprint(sorted(m for m in ('gpukit', 'numba') "
                     "if m in sys.modules))\n")
    for value in ("", "0"):  # unset: the startup hook imports nothing
        assert _run([str(probe)], env={"GPUKIT_SIMULATE": value}).stdout.strip() == "[]"
    # set, for a program that never imports numba.cuda: numba is not imported on its behalf
    assert _run([str(probe)], env={"GPUKIT_SIMULATE": "1"}).stdout.strip() == "['gpukit']"
    bad = _run([str(_program(tmp_path, False))], env={"GPUKIT_SIMULATE": "1"})
    assert "RaceConditionError" in bad.stderr and "gpukit" + os.sep + "sim" not in bad.stderr


@pytest.mark.slow
def test_pytest_plugin_runs_a_suite_on_the_simulator(tmp_path):
    (tmp_path / "test_suite.py").write_text(textwrap.dedent("""
        import numpy as np
        from numba import cuda

        if not cuda.is_available():
            raise RuntimeError("not simulated")

        @cuda.jit
        def inc(a):
            i = cuda.grid(1)
            if i < a.size:
                a[i] += 1

        def test_inc():
            a = np.zeros(5)
            inc[1, 32](a)
            assert a.tolist() == [1.0] * 5

        def test_device_name():
            assert cuda.get_current_device().compute_capability == (8, 0)
    """))
    result = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--gpukit-simulate=A100",
                   "-W", "ignore", "test_suite.py"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    bare = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--gpukit-simulate",
                 "test_suite.py", "-k", "inc", "-W", "ignore"], cwd=tmp_path)
    assert "1 passed" in bare.stdout, bare.stdout + bare.stderr


def test_pytest_plugin_simulates_the_python_processes_tests_start(tmp_path):
    (tmp_path / "test_child.py").write_text(textwrap.dedent("""
        import subprocess
        import sys

        def test_child_process():
            code = "from numba import cuda; print(cuda.get_current_device().name)"
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout
            assert out.strip() == "A100 40GB (gpukit simulator)"
    """))
    result = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--gpukit-simulate=A100",
                   "--gpukit-checks=bounds,races", "-W", "ignore", "test_child.py"], cwd=tmp_path)
    assert "1 passed" in result.stdout, result.stdout + result.stderr


def test_the_magic_starts_switches_and_stops_the_simulation(capsys):
    from gpukit.simulate.magic import gpukit_magic
    gpukit_magic("simulate A100 seed=1")
    assert capsys.readouterr().out == ("gpukit: numba.cuda now runs on a simulated A100 40GB "
                                       "(checks on; %gpukit stop to end)\n")
    gpukit_magic("simulate L4")
    assert gpukit.simulate.active().profile.name == "L4"
    gpukit_magic("status")
    assert "simulated L4, 0 launches" in capsys.readouterr().out
    gpukit_magic("stop")
    assert gpukit.simulate.active() is None
    gpukit_magic("nonsense")
    assert capsys.readouterr().out.endswith("%gpukit stop | %gpukit status\n")


def test_load_ext_registers_the_magic():
    registered = {}

    class Shell:
        def register_magic_function(self, func, magic_kind, magic_name):
            registered[magic_name] = (func, magic_kind)

    gpukit.load_ipython_extension(Shell())
    assert registered["gpukit"][1] == "line"


def test_a_race_is_reported_with_both_threads():
    @cuda.jit
    def racy(out):
        out[0] = cuda.threadIdx.x

    with gpukit.simulate(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RaceConditionError, match=re.escape("[kernel 'racy', thread")):
            racy[1, 2](cuda.device_array(1, np.int64))


def test_numba_cudas_runtime_statistics_count_what_simulated_kernels_allocate(monkeypatch):
    from numba.cuda import config
    from numba.cuda.memory_management.nrt import rtsys
    monkeypatch.setattr(config, "CUDA_ENABLE_NRT", True)
    with gpukit.simulate():
        @cuda.jit
        def scratch(out):
            tmp = np.zeros(4)  # allocated by the runtime, freed at the end of the thread
            tmp[1] = 2.0
            out[cuda.threadIdx.x] = tmp.sum()

        rtsys.ensure_allocated()  # nothing to set up on the simulator
        rtsys.memsys_enable_stats()
        assert rtsys.memsys_stats_enabled()
        before = rtsys.get_allocation_stats()
        out = np.zeros(8)
        scratch[1, 8](out)
        after = rtsys.get_allocation_stats()
        rtsys.memsys_disable_stats()
    assert out.tolist() == [2.0] * 8
    assert after.alloc - before.alloc == after.free - before.free >= 8  # one per thread
