"""gpukit.exercises.progress: check() records each verdict; progress() tables every exercise, as
text and HTML, with those never checked marked "not attempted"."""

from __future__ import annotations

import pytest
from numba import cuda

from gpukit.exercises import EXERCISES, ExerciseUsageError, Progress, check, progress
from gpukit.exercises.progress import ExerciseProgress, reset


@cuda.jit
def map_right(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i] + 10


@cuda.jit
def map_wrong(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i] + 1


@pytest.fixture(autouse=True)
def empty_registry():
    reset()
    yield
    reset()


def test_nothing_checked_means_nothing_attempted():
    table = progress()
    assert isinstance(table, Progress)
    assert [r.name for r in table.rows] == list(EXERCISES)
    assert [r.number for r in table.rows] == list(range(1, len(EXERCISES) + 1))
    assert table.not_attempted == list(EXERCISES)
    assert table.passed == [] and table.failed == []
    assert table.summary == (f"0 of {len(EXERCISES)} exercises passed, 0 failed, "
                             f"{len(EXERCISES)} not attempted (checks run in this session)")
    assert table["map"].detail == "run its check cell"


def test_check_records_failures_then_passes():
    failed = check(map_wrong, "map", quiet=True)
    row = progress()["map"]
    assert (row.status, row.checks, row.runs_passed, row.runs) == ("failed", 1, 0,
                                                                   len(failed.runs))
    assert row.failure == "mismatch"
    assert row.detail == f"0/{len(failed.runs)} runs passed (first problem: mismatch)"

    passed = check(map_right, "map", quiet=True)
    row = progress()["map"]
    assert (row.status, row.checks, row.runs_passed) == ("passed", 2, len(passed.runs))
    assert row.detail == f"{len(passed.runs)}/{len(passed.runs)} runs passed"
    assert progress().passed == ["map"]

    check(map_wrong, "map", quiet=True)  # the latest verdict wins, the earlier pass is noted
    row = progress()["map"]
    assert (row.status, row.checks, row.ever_passed) == ("failed", 3, True)
    assert row.detail.endswith("; passed earlier")


def test_text_and_html_tables():
    check(map_right, "map", quiet=True)
    check(map_wrong, "map", quiet=True)
    check(map_right, "map", quiet=True)
    table = progress(["map", "guards"])
    text = str(table)
    lines = text.splitlines()
    assert lines[0] == "1 of 2 exercises passed, 0 failed, 1 not attempted (checks run in this " \
                       "session)"
    assert lines[1].split() == ["#", "exercise", "title", "status", "checks", "latest", "check"]
    assert lines[2].startswith("01  map ") and "✓ passed" in lines[2] and " 3 " in lines[2]
    assert lines[3].startswith("02  guards ") and "· not attempted" in lines[3]
    assert lines[3].endswith("run its check cell")
    assert repr(table) == text
    page = table._repr_html_()
    assert page.startswith("<div><p>1 of 2 exercises passed")
    assert page.count("<tr>") == 3  # the head and two exercises
    assert "<code>map</code>" in page and "✓ passed" in page and "· not attempted" in page


def test_html_escapes_names():
    table = Progress((ExerciseProgress(1, "a<b", "x & y", "not attempted"),))
    page = table._repr_html_()
    assert "<code>a&lt;b</code>" in page and "x &amp; y" in page


def test_selection_and_bad_names():
    assert [r.name for r in progress("guards").rows] == ["guards"]
    with pytest.raises(ExerciseUsageError, match="unknown exercise 'mapp'; did you mean 'map'"):
        progress(["mapp"])
    with pytest.raises(KeyError, match="no exercise 'nope' in this progress table"):
        progress()["nope"]


def test_reset_forgets():
    check(map_right, "map", quiet=True)
    reset()
    assert progress()["map"].status == "not attempted"
