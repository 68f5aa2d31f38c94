"""The benchmark harness (benchmarks/): its kernels against numpy on gpukit, the scaling of Numba
measurements, the targets' verdicts, the tables and BENCHMARKS.md. No timing thresholds: speed
is the harness's output, never a test's condition."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks/ is run from a checkout, not installed
    sys.path.insert(0, str(ROOT))

from benchmarks import kernels, numba_sim, regions, report, simulator
from benchmarks.simulator import GpukitRun, NumbaRun, Result, Row, Target

# sizes that leave a partial block (or tile) so the bounds guards matter
TINY = {"vector_add": 1000, "matmul_naive": 20, "matmul_tiled": 20, "reduce_sum": 1000,
        "histogram": 1000, "stencil": 1000, "hypot_scale": 1000}


def test_every_workload_has_a_tiny_size_and_a_full_target_row():
    assert set(TINY) == set(kernels.WORKLOADS)
    assert {row.workload for row in simulator.FULL_PLAN} == set(kernels.WORKLOADS)
    assert {row.workload for row in simulator.QUICK_PLAN} == set(kernels.WORKLOADS)


@pytest.mark.parametrize("name", list(kernels.WORKLOADS))
def test_kernel_matches_numpy_on_gpukit_with_every_check_on(name):
    run = simulator.run_gpukit(kernels.WORKLOADS[name], TINY[name], repeats=1)
    assert run.threads >= TINY[name] and run.best_s > 0 and run.wall_ms > 0
    assert run.max_error <= 1e-3


def test_launch_stats_count_what_the_kernels_do():
    hist = simulator.run_gpukit(kernels.WORKLOADS["histogram"], 1000, repeats=1)
    assert hist.stats.atomics == 1000  # one per element; the guard masks the rest
    tiled = simulator.run_gpukit(kernels.WORKLOADS["matmul_tiled"], 20, repeats=1)
    assert tiled.stats.barriers > 0 and tiled.stats.shared_store_bytes > 0


@settings(max_examples=8, deadline=None)
@given(name=st.sampled_from(["vector_add", "reduce_sum", "matmul_tiled", "histogram",
                                        "stencil"]),
       size=st.integers(1, 700), seed=st.integers(0, 2**16))
def test_kernels_match_numpy_for_any_size(name, size, seed):
    workload = kernels.WORKLOADS[name]
    size = min(size, 40) if workload.square else size
    run = simulator.run_gpukit(workload, size, repeats=0, seed=seed)
    assert run.repeats == 0 and run.best_s == run.first_s


def test_verify_rejects_a_wrong_result():
    case = kernels.build_vector_add(300, seed=1)
    wrong = case.expected[0].copy()
    wrong[299] += 1
    with pytest.raises(AssertionError, match="output argument 2"):
        case.verify([wrong])
    assert case.verify([case.expected[0]]) == 0.0


def test_builders_are_seeded():
    a = kernels.build_histogram(500, seed=3).args[0]
    assert np.array_equal(a, kernels.build_histogram(500, seed=3).args[0])
    assert not np.array_equal(a, kernels.build_histogram(500, seed=4).args[0])


# -- scaling and verdicts, with made-up measurements -----------------------------------------------
def _result(name, size, numba_size, numba_s, gpukit_s, numpy_s=1.0, targets=()):
    workload = kernels.WORKLOADS[name]
    gpukit = GpukitRun(gpukit_s, gpukit_s, 0.001, gpukit_s * 1e3, 3, size, None, 0.0)
    numba = None if numba_size is None else NumbaRun(numba_size, numba_s, True)
    result = Result(Row(name, size, numba_size, tuple(targets)), workload, gpukit, numba,
                    numpy_s)
    simulator._annotate(result)
    return result


def test_numba_time_is_scaled_by_the_work_and_the_note_says_so():
    vec = _result("vector_add", 1_000_000, 100_000, 14.9, 0.1)
    assert vec.scale == 10 and vec.numba_s == pytest.approx(149.0)
    assert vec.ratio == pytest.approx(1490.0)
    assert vec.notes == ["Numba sim measured at 100,000: 14.9 s, scaled x10 (linear in threads)"]
    mat = _result("matmul_tiled", 256, 128, 60.0, 1.0)
    assert mat.scale == 8 and mat.numba_s == pytest.approx(480.0)
    assert mat.notes[0].startswith("Numba sim measured at 128x128: 60 s, scaled x8 (n^3")
    same = _result("reduce_sum", 65_536, 65_536, 127.0, 0.5)
    assert same.scale == 1 and same.notes == []


def test_targets_verdicts():
    ratio, seconds, numpy_ = Target("ratio", 300), Target("seconds", 0.5), Target("numpy", 20)
    fast = _result("vector_add", 100_000, 100_000, 30.0, 0.05, numpy_s=0.01,
                   targets=[ratio, seconds, numpy_])
    assert [fast.met(t) for t in fast.row.targets] == [True, True, True]
    slow = _result("vector_add", 100_000, 100_000, 30.0, 0.6, numpy_s=0.01,
                   targets=[ratio, seconds, numpy_])
    assert [slow.met(t) for t in slow.row.targets] == [False, False, False]
    no_numba = _result("vector_add", 100_000, None, None, 0.05, targets=[ratio])
    assert no_numba.met(ratio) is None and no_numba.ratio is None
    assert [t.text() for t in (ratio, seconds, numpy_)] == [">= 300x", "< 0.5 s", "<= 20x numpy"]


def test_table_rows_and_summary():
    results = [_result("vector_add", 1_000_000, 100_000, 14.9, 0.1, targets=[Target("ratio", 300)]),
               _result("histogram", 1000, None, None, 0.01)]
    rows = report.main_rows(results)
    assert all(len(row) == len(report.MAIN_HEADERS) for row in rows)
    assert rows[0][:7] == ["vector add (float32)", "1,000,000", "0.1", "149 (scaled)", "1,490x",
                           ">= 300x", "yes"]
    assert rows[1][3:7] == ["-", "-", "report", "-"]
    assert report.summary(results) == "targets met: 1 of 1; every result matches numpy"
    text = report.text_table(report.MAIN_HEADERS, rows).splitlines()
    assert text[0].split()[:3] == ["kernel", "size", "gpukit"] and len(text) == 4


# -- the command, in-process, gpukit side only -------------------------------------------------
def test_quick_run_without_numba_prints_the_table_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "BENCHMARKS.md"
    code = simulator.main(["--quick", "--no-write", "--no-numba", "--repeats", "1",
                           "--only", "vector_add,reduce_sum", "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and not out.exists()
    table = printed[printed.index("kernel "):].splitlines()
    assert table[0].split() == ["kernel", "size", "gpukit", "s", "Numba", "sim", "s", "ratio",
                                "target", "met?", "numpy", "s", "notes"]
    assert table[2].startswith("vector add (float32)") and "10,000" in table[2]
    assert table[3].startswith("shared-memory tree reduction") and "2,048" in table[3]
    assert "every result matches numpy" in printed


def test_written_file_has_the_date_the_machine_and_the_tables(tmp_path, capsys):
    out = tmp_path / "BENCHMARKS.md"
    assert simulator.main(["--quick", "--no-numba", "--repeats", "1", "--only", "histogram",
                           "--profile", "3", "--output", str(out)]) == 0
    text = out.read_text()
    for needle in ("## Machine", "- CPU: ", "- cores: ", "- numba-cuda: ", "- Python: ",
                   "| kernel | size | gpukit s | Numba sim s | ratio | target | met? |",
                   "| histogram, 256 bins, atomics | 10,000 |", "LaunchRecord.wall_ms",
                   "### histogram 10,000", "quick run"):
        assert needle in text
    assert " UTC; do not edit by hand" in text


def test_only_rejects_an_unknown_workload(capsys):
    with pytest.raises(SystemExit):
        simulator.main(["--only", "vector_add,nope", "--no-write"])
    assert "unknown workload(s) nope; the workloads are: vector_add" in capsys.readouterr().err


# -- Numba's side ------------------------------------------------------------------------------
def test_numba_worker_refuses_to_run_outside_the_simulator(monkeypatch, capsys):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    assert numba_sim.main(["vector_add", "10"]) == 2
    assert "NUMBA_ENABLE_CUDASIM=1" in capsys.readouterr().out


@pytest.mark.cudasim
def test_numba_simulator_runs_the_same_kernel_source_and_matches_numpy():
    run = simulator.run_numba("matmul_tiled", 20, timeout_s=300)
    assert run.ok, run.error
    assert run.size == 20 and run.measured_s > 0
    assert os.environ.get("NUMBA_ENABLE_CUDASIM") != "1"  # only the subprocess used it


# -- scaling curves (benchmarks.scaling) -------------------------------------------------------
def test_scaling_curves_cover_the_issue_and_start_at_2_to_the_10():
    from benchmarks import scaling

    assert [c.name for c in scaling.CURVES] == ["vector_add", "matmul_naive", "matmul_tiled",
                                                "reduce_sum", "histogram", "stencil",
                                                "small_launches"]
    for curve in scaling.CURVES:
        full = curve.sizes(quick=False)
        assert full == sorted(full) and len(curve.sizes(quick=True)) == 2
        first = full[0] ** 2 if curve.kind == "square" else full[0]
        assert first == (16 if curve.kind == "loop" else 2 ** 10)
    assert [m.key for m in scaling._modes()] == ["all", "no_races", "bounds", "off",
                                                 "one_thread"]


def test_scaling_quick_run_writes_tables_per_curve(tmp_path, capsys):
    from benchmarks import scaling

    out, raw = tmp_path / "SCALING.md", tmp_path / "scaling.json"
    code = scaling.main(["--quick", "--no-numba", "--only", "vector_add,small_launches",
                         "--cache-dir", "as-is", "--output", str(out), "--json", str(raw)])
    assert code == 0
    data = json.loads(raw.read_text())
    assert [c["name"] for c in data["curves"]] == ["vector_add", "small_launches"]
    assert data["quick"] and data["load_before"] and data["load_after"] and data["wall_s"] > 0
    for curve in data["curves"]:
        assert [p["size"] for p in curve["points"]] == scaling.CURVES[
            [c.name for c in scaling.CURVES].index(curve["name"])].sizes(quick=True)
        for point in curve["points"]:
            assert set(point["gpukit"]) == {"all", "no_races", "bounds", "off",
                                             "one_thread"}
            assert all(g["s"] > 0 for g in point["gpukit"].values())
            assert point["numpy_s"] > 0 and point["numba"] is None
        assert set(curve["compile"]) == set(point["gpukit"])
    text = out.read_text()
    for needle in ("## Machine", "- cores: ", "- load average (1/5/15 min) before: ",
                   "## Check modes", "## Findings", "## vector add (float32) (`vector_add`)",
                   ("| size | all s (x numpy) | no_races s (x numpy) | bounds s (x numpy) | "
                    "off s (x numpy) | one_thread s (x numpy) | numpy s | Numba sim s | "
                    "Numba sim / all | load 1 min |"),
                   ("- `one_thread`: all checks, the blocks on one host thread (`checks=True`, "
                   "`num_threads=1`)"),
                   "| 2^10 | ", "| 4 launches | ", " us (", "compile_kernel + first launch",
                   "Numba's simulator not run"):
        assert needle in text, needle
    assert "per launch at 8 launches: all " in text


def test_scaling_findings_quote_the_measured_ratios():
    from benchmarks import scaling

    def point(size, all_s, off_s, numpy_s, numba_s=None):
        return {"size": size, "label": f"2^{size.bit_length() - 1}", "load": "1.00 / 1 / 1",
                "gpukit": {"all": {"s": all_s}, "off": {"s": off_s}}, "numpy_s": numpy_s,
                "numba": None if numba_s is None else {"s": numba_s}}
    data = {"curves": [{"title": "vector add", "kind": "1d", "points": [
        point(1024, 0.002, 0.001, 0.00001, 2.0), point(2048, 0.003, 0.002, 0.0001)]}]}
    (line,) = scaling.findings(data)
    assert line.startswith("- vector add: with all checks, 30x numpy's time at the largest size "
                           "run (2^11); the most, 200x, at 2^10; checks off at 2^11: 20x numpy")
    assert "Numba's simulator 1,000x slower than all checks at 2^10" in line
    headers, rows = scaling.curve_table(data["curves"][0], [{"key": "all"}, {"key": "off"}])
    assert rows[0] == ["2^10", "0.002 (200x)", "0.001 (100x)", "1.00e-05", "2", "1,000x", "1.00"]
    assert rows[1][4:6] == ["-", "-"] and len(headers) == len(rows[0])


def test_benchmarks_md_quotes_the_scaling_findings_as_written(tmp_path):
    scaling_md = tmp_path / "SCALING.md"
    assert report.scaling_section(scaling_md) == []
    scaling_md.write_text("# Scaling\n\nWritten by `python -m benchmarks.scaling` on 2026-11-24 "
                          "03:35 UTC in 20.0 minutes; do not edit by hand, rerun it.\n\n"
                          "## Findings\n\n- vector add: 30x numpy.\n- loop: 60 us.\n\n"
                          "## How\n\n- not a finding\n")
    section = report.scaling_section(scaling_md)
    assert section[0] == "## Scaling curves"
    assert "(`python -m benchmarks.scaling` on 2026-11-24 03:35 UTC in 20.0 minutes)" in section[2]
    assert section[4:6] == ["- vector add: 30x numpy.", "- loop: 60 us."]
    assert "- not a finding" not in section


def test_regions_benchmark_runs_each_barrier_kernel_three_ways(capsys):
    regions.main(["--quick", "--repeat", "1"])
    rows = [line for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and not line.startswith("| kernel") and "---" not in line]
    assert [r.split(" | ")[0].strip("| ") for r in rows] == ["reduce_sum", "stencil_3pt",
                                                           "matmul_tiled"]
    assert all(r.rstrip(" |").endswith("x") for r in rows)


def test_a_scaling_run_refreshes_the_section_benchmarks_md_quotes(tmp_path):
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# B\n\n## Scaling curves\n\n- an old finding\n\n## After\n\nkept\n")
    assert report.refresh_scaling_section(md)
    text = md.read_text()
    assert "- an old finding" not in text
    assert "\n".join(report.scaling_section()) in text and text.endswith("## After\n\nkept\n")
    (tmp_path / "none.md").write_text("# B\n")
    assert not report.refresh_scaling_section(tmp_path / "none.md")


def test_revisions_worker_times_a_kernel_and_numpy_and_a_loop_per_launch():
    from benchmarks import revisions
    one = revisions.worker("vector_add", 1000, 64, 1)
    assert one["s"] > 0 and one["numpy_s"] > 0
    loop = revisions.worker("loop", 4, 2, 1)
    assert set(loop) == {"s"} and 0 < loop["s"] < 1


@pytest.fixture
def fake_revisions(monkeypatch):
    """benchmarks.revisions with no copies made: `use(measure)` stands in for its workers."""
    from benchmarks import revisions
    monkeypatch.setattr(revisions, "_copy", lambda rev, into: f"rev-{rev}")

    def use(measure):
        monkeypatch.setattr(revisions, "_measure", measure)
        return revisions
    return use


def test_revisions_passes_the_host_threads_to_its_workers(fake_revisions, monkeypatch):
    seen = []

    def measure(src, cache, target, quick, threads=None):
        seen.append(threads)
        return {"s": 1e-4}
    revisions = fake_revisions(measure)
    loop = "1,000 launches of 32 threads"
    text = revisions.run(["old", "new"], 1, quick=True, targets=[loop], threads=1)
    assert seen == [1, 1]
    assert f"--quick --target '{loop}' --threads 1 --repeat 1`" in text

    class Made(Exception):
        pass

    def made(self, **options):  # the worker's backend, with the options it was given
        raise Made(options)
    monkeypatch.setattr("gpukit.backends.cpu.CPUBackend.__init__", made)
    with pytest.raises(Made) as info:
        revisions.worker("vector_add", 1000, 64, 1, 1)
    assert info.value.args == ({"watchdog_s": None, "num_threads": 1},)


def test_revisions_report_puts_the_revisions_side_by_side(fake_revisions):
    times = {"rev-old": 2.0, "rev-new": 0.5}

    def measure(src, cache, target, quick, threads=None):
        label = "rev-old" if src.parent.name == "rev0" else "rev-new"
        if target.startswith("1,000"):
            return {"s": times[label] * 1e-4}
        return {"s": times[label], "numpy_s": 0.1}
    revisions = fake_revisions(measure)
    text = revisions.run(["old", "new"], 1, quick=True)
    assert "| target (all checks) | rev-old | rev-new | rev-old / rev-new | #19's target |" in text
    assert "| tree reduction 2^24 | 2 s (20.0x numpy) | 0.5 s (5.0x numpy) | 4x | " \
           "10x faster than when #19 was filed (7 s on its machine) |" in text
    assert "| 1,000 launches of 32 threads | 200.0 us | 50.0 us | 4x | under 50 us a launch |" \
        in text


def test_revisions_can_measure_only_the_targets_named(fake_revisions):
    measured = []

    def measure(src, cache, target, quick, threads=None):
        measured.append(target)
        return {"s": 1e-4}
    revisions = fake_revisions(measure)
    loop = "1,000 launches of 32 threads"
    text = revisions.run(["old", "new"], 2, quick=True, targets=[loop])
    assert measured == [loop] * 4  # two revisions, two turns each
    assert f"--quick --target '{loop}' --repeat 2`" in text
    assert f"| {loop} | 100.0 us | 100.0 us |" in text and "tiled matmul" not in text
    with pytest.raises(SystemExit):  # argparse refuses a target it does not know
        revisions.main(["old", "--target", "matmul"])


def test_split_benchmark_times_one_thread_against_every_core_and_restores_the_threshold():
    from benchmarks import split
    from gpukit.sim import parallel

    threshold = parallel.MIN_THREADS
    table = split.rows(range(10, 12), rounds=1, launches=2)
    assert parallel.MIN_THREADS == threshold
    assert [row[0] for row in table] == ["2^10", "2^11"]
    for size, one, many, default, ratio, ratio_default, threads, blocks, cores, split_ones in \
            table:
        assert float(ratio) == pytest.approx(float(one) / float(many), rel=0.02, abs=0.02)
        assert float(ratio_default) == pytest.approx(float(one) / float(default), rel=0.02,
                                                     abs=0.02)
        assert int(threads) == min(parallel.usable_cores(), parallel.MAX_THREADS)
        per_thread = [int(n) for n in blocks.split("/")]
        assert len(per_thread) == int(threads)
        assert sum(per_thread) == -(-(1 << int(size[2:])) // 256)  # every block, once
        if int(threads) > 1:  # CPU time over wall time: at most one core per thread
            assert 0 < float(cores) <= int(threads) * 1.05
        else:  # one usable core: nothing splits
            assert cores == "-"
        split, made = (int(n) for n in split_ones.split("/"))
        assert made == 2 and 0 <= split <= made  # the round's launches, less the first


def test_split_benchmark_spins_other_processes_only_while_it_measures():
    from benchmarks import split

    with split.busy(2) as spinning:
        assert len(spinning) == 2 and all(p.poll() is None for p in spinning)
    assert all(p.poll() is not None for p in spinning)
