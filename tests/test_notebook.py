"""gpukit.notebook: gpukit's errors in a real IPython shell show the learner's frames, the message
and the kernel's line, not gpukit's internals; other errors are IPython's own; the filter switches
off; show_errors prints an error and lets the cell go on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import gpukit
from gpukit.errors import InvalidArgumentError, OutOfBoundsError
from gpukit.notebook import NOTE, describe, install_default, show_errors, tracebacks

IPython = pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

SETUP = '''
import numpy as np
from numba import cuda
import gpukit
sim = gpukit.get_backend("cpu")

@cuda.jit
def unguarded(a):
    i = cuda.grid(1)
    a[i] = 1.0

def learner_helper():
    sim.launch_kernel(unguarded, 2, 8, sim.allocate(10, np.float32))

def plain_helper():
    return 1 / 0
'''


@pytest.fixture
def shell():
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    result = shell.run_cell(SETUP)
    assert result.success
    tracebacks(True)   # gpukit was imported before this shell existed (see the next test)
    yield shell
    shell.set_custom_exc((), None)
    InteractiveShell.clear_instance()


def _run(shell, code: str, capsys) -> tuple[object, str]:
    capsys.readouterr()
    result = shell.run_cell(code)
    return result, ANSI.sub("", capsys.readouterr().out)


def test_importing_gpukit_in_ipython_turns_the_filter_on() -> None:
    code = ("from IPython.core.interactiveshell import InteractiveShell; "
            "shell = InteractiveShell.instance(); import gpukit; "
            "print(shell.custom_exceptions == (gpukit.errors.GpukitError,))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for value, expected in ((None, "True"), ("full", "False")):
        env.pop("GPUKIT_TRACEBACKS", None)
        if value:
            env["GPUKIT_TRACEBACKS"] = value
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        assert out.strip() == expected


def test_kernel_error_shows_the_learners_frames_message_and_kernel_line(shell, capsys) -> None:
    assert tracebacks(True) is True           # already on
    result, out = _run(shell, "learner_helper()", capsys)
    assert isinstance(result.error_in_exec, OutOfBoundsError)
    assert "----> 1 learner_helper()" in out
    assert "in learner_helper()" in out
    assert "sim.launch_kernel(unguarded, 2, 8, sim.allocate(10, np.float32))" in out
    assert "OutOfBoundsError: 'a[i]' indexes global array a (shape (10,)) at 10" in out
    assert "In kernel 'unguarded', thread (2, 0, 0) of block (1, 0, 0), Cell In[" in out
    assert "line 9:\n    a[i] = 1.0" in out   # the cell's leading blank line is dropped
    assert NOTE in out
    # none of gpukit's own frames
    for internal in ("cpu.py", "_cpu_launch.py", "launch.py", "gpukit/"):
        assert internal not in out, internal
    # %tb and %debug see the whole error
    assert sys.last_value is result.error_in_exec
    assert sys.last_traceback.tb_next is not None


def test_other_gpukit_errors_lose_the_internal_frames_too(shell, capsys) -> None:
    result, out = _run(shell, "sim.allocate(-1, np.float32)", capsys)
    assert type(result.error_in_exec).__name__ == "InvalidShapeError"
    assert "----> 1 sim.allocate(-1, np.float32)" in out
    assert "InvalidShapeError: invalid shape -1: size -1 of axis 0 is negative" in out
    assert "validate.py" not in out and "backends" not in out


def test_other_exceptions_are_left_alone(shell, capsys) -> None:
    result, out = _run(shell, "plain_helper()", capsys)
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    assert "----> 1 plain_helper()" in out and "return 1 / 0" in out
    assert "ZeroDivisionError: division by zero" in out
    assert NOTE not in out


def test_switched_off_ipython_shows_every_frame(shell, capsys) -> None:
    assert tracebacks(False) is False
    assert shell.custom_exceptions == ()
    _, out = _run(shell, "learner_helper()", capsys)
    assert "_cpu_launch.py" in out and "gpukit/sim/launch.py" in out
    assert NOTE not in out
    assert tracebacks(True) is True
    _, out = _run(shell, "learner_helper()", capsys)
    assert "_cpu_launch.py" not in out


def test_another_custom_handler_is_kept(shell) -> None:
    tracebacks(False)

    def theirs(self, etype, value, tb, tb_offset=None):
        return None

    shell.set_custom_exc((KeyError,), theirs)
    assert tracebacks(True) is False
    assert shell.custom_exceptions == (KeyError,)
    assert tracebacks(False) is False          # and turning ours off leaves theirs
    assert shell.custom_exceptions == (KeyError,)


def test_environment_variable_keeps_full_tracebacks(shell, monkeypatch) -> None:
    tracebacks(False)
    monkeypatch.setenv("GPUKIT_TRACEBACKS", "full")
    assert install_default() is False
    assert shell.custom_exceptions == ()
    monkeypatch.delenv("GPUKIT_TRACEBACKS")
    assert install_default() is True
    assert shell.custom_exceptions == (gpukit.errors.GpukitError,)


def test_outside_ipython_nothing_happens() -> None:
    InteractiveShell.clear_instance()
    assert tracebacks(True) is False
    assert install_default() is False


def test_bad_switch() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        tracebacks("off")
    assert str(info.value) == "tracebacks(on) takes True or False, not 'off'"


@cuda.jit
def _unguarded(a):
    i = cuda.grid(1)
    a[i] = 1.0


def test_show_errors_prints_the_error_and_goes_on(capsys) -> None:
    sim = gpukit.get_backend("cpu")
    with show_errors() as shown:
        sim.launch_kernel(_unguarded, 2, 8, sim.allocate(10, np.float32))
        raise AssertionError("not reached")
    assert isinstance(shown.error, OutOfBoundsError)
    out = capsys.readouterr().out
    assert out == describe(shown.error) + "\n"
    assert out.startswith("OutOfBoundsError: 'a[i]' indexes global array a (shape (10,)) at 10")
    assert "\n  in kernel '_unguarded', thread (2, 0, 0) of block (1, 0, 0), line " in out
    assert out.endswith(":\n    a[i] = 1.0\n")
    assert "test_notebook.py" not in out       # no file path: the same output on every machine


def test_show_errors_plain_gpukit_error_no_error_and_other_exceptions(capsys) -> None:
    sim = gpukit.get_backend("cpu")
    with gpukit.show_errors() as shown:
        sim.allocate(-1, np.float32)
    assert capsys.readouterr().out == (
        "InvalidShapeError: invalid shape -1: size -1 of axis 0 is negative; sizes must be >= 0\n")
    with gpukit.show_errors() as shown:
        pass
    assert shown.error is None and capsys.readouterr().out == ""
    with pytest.raises(ZeroDivisionError), gpukit.show_errors():
        1 / 0  # noqa: B018


@pytest.mark.slow
def test_in_a_jupyter_kernel(tmp_path) -> None:
    """The real thing: a notebook run by a Jupyter kernel goes on past show_errors, and the error
    that stops it carries the learner's frame, the message and the kernel line, no gpukit frame."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [SETUP, "with gpukit.show_errors():\n    learner_helper()\nprint('went on')",
             "learner_helper()", "print('not reached')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    os.environ["PYTHONPATH"], saved = env_path, os.environ.get("PYTHONPATH")
    try:
        client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                         resources={"metadata": {"path": str(tmp_path)}})
        with pytest.raises(nbclient.exceptions.CellExecutionError):
            client.execute()
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    shown = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    assert shown.startswith("OutOfBoundsError: 'a[i]' indexes global array a (shape (10,))")
    assert shown.endswith("line 9:\n    a[i] = 1.0\nwent on\n")
    (error,) = nb.cells[2].outputs
    assert error.output_type == "error" and error.ename == "OutOfBoundsError"
    traceback = ANSI.sub("", "\n".join(error.traceback))
    assert "----> 1 learner_helper()" in traceback and "in learner_helper()" in traceback
    assert "In kernel 'unguarded', thread (2, 0, 0) of block (1, 0, 0), Cell In[1], line 9:" \
        in traceback
    assert NOTE in traceback
    assert "gpukit" + os.sep not in traceback.replace("gpukit.tracebacks", "")
    assert nb.cells[3].outputs == []
