"""The differential tester's kernels on a real GPU: gpukit's simulator against the hardware.

tests/test_differential.py compares the simulator with Numba's CPU compiler (the oracle); this
compares it with an NVIDIA GPU, bit for bit, on the same generated kernels. Three steps, so that
the GPU machine only launches kernels:

    python benchmarks/gpu_differential.py prepare --examples 300 --seed 1 --out DIR   # no GPU
    python benchmarks/gpu_differential.py gpu DIR --out RESULTS [--workers 8]          # on a GPU
    python benchmarks/gpu_differential.py compare DIR RESULTS [--resimulate]            # anywhere

`prepare` draws kernels with the tester's hypothesis strategy, keeps those numba-cuda accepts and
the simulator runs, and saves each kernel's module, inputs, launch shape and the simulator's
outputs. `gpu` launches every kernel with numba-cuda twice: as numba-cuda compiles it (NVVM
contracts a multiply and an add into one fused multiply-add, rounding once: `-fma=1`, its
default) and with `-fma=0`. `compare` sorts each kernel: equal bit for bit; equal only without
contraction (the documented exception); different where the kernel calls a `math` function
(libdevice's results differ from the CPU's by an ulp or so, grown to at most ULPS units in the
last place by what the kernel computes from them: the other documented exception); or
unexplained, which is a simulator bug, printed in full.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pickle
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def prepare(examples: int, seed_value: int, out: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from diff_oracle import CudaTypingError, cuda_typing
    from diff_program import cases
    from diff_run import load, render
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from numba.core import types
    from numba.np.numpy_support import as_dtype, from_dtype

    import gpukit

    backend = gpukit.get_backend("cpu")
    out.mkdir(parents=True, exist_ok=True)
    kept: list[dict] = []
    counts: Counter = Counter()

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(case=cases())
    def one(case) -> None:
        program = case.program
        kernel_text, _ = render(program)
        kmod = load(kernel_text, out, "gpudiff")
        argtypes = tuple(types.Array(from_dtype(np.dtype(d)), 1, "C") for d in program.dtypes)
        try:
            _, rettype = cuda_typing(kmod.thread, argtypes)
        except CudaTypingError:
            counts["rejected by numba-cuda"] += 1
            return
        dtypes = [as_dtype(types.unliteral(t)) for t in rettype.types]
        outs = [backend.to_device(np.zeros(len(case.inputs[0]), dtype=d)) for d in dtypes]
        options = {"checks": {"wraparound": False}} if "negative_index" in program.features else {}
        try:
            backend.launch_kernel(kmod.kernel, case.grid, case.block,
                                  *map(backend.to_device, case.inputs), *outs, **options)
        except Exception as exc:  # noqa: BLE001 - counted and kept for a look
            counts[f"simulator raised {type(exc).__name__}"] += 1
            with open(out / "simulator_errors.txt", "a") as f:
                f.write(f"--- {kmod.__name__}.py (inputs {program.dtypes})\n"
                        f"{type(exc).__name__}: {exc}\n")
            return
        counts["kept"] += 1
        kept.append({"module": kmod.__name__, "grid": case.grid, "block": case.block,
                     "inputs": case.inputs, "dtypes": [str(d) for d in dtypes],
                     "simulator": [backend.to_host(o) for o in outs],
                     "uses_math": "math." in kernel_text, "features": sorted(program.features)})

    one()
    with open(out / "cases.pkl", "wb") as f:
        pickle.dump(kept, f)
    print(f"prepared {len(kept)} kernels in {out}: {dict(counts)}")


def _gpu_worker(job: tuple[Path, list[int]]) -> dict[int, dict]:
    directory, indices = job
    from numba import cuda
    from numba.cuda.cudadrv import nvvm

    original = nvvm.compile_ir
    state = {"fma": True}

    def compile_ir(llvmir, **options):
        if not state["fma"]:
            options["fma"] = False
        return original(llvmir, **options)

    nvvm.compile_ir = compile_ir
    with open(directory / "cases.pkl", "rb") as f:
        kept = pickle.load(f)
    results: dict[int, dict] = {}
    for index in indices:
        case = kept[index]
        result: dict = {}
        for fma in (True, False):
            state["fma"] = fma
            name = f"{case['module']}_{index}_fma{int(fma)}"
            spec = importlib.util.spec_from_file_location(name, directory / f"{case['module']}.py")
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
                ins = [cuda.to_device(a) for a in case["inputs"]]
                outs = [cuda.to_device(np.zeros(len(case["inputs"][0]), dtype=d))
                        for d in case["dtypes"]]
                module.kernel[case["grid"], case["block"]](*ins, *outs)
                cuda.synchronize()
                result[fma] = [o.copy_to_host() for o in outs]
            except Exception as exc:  # noqa: BLE001 - reported per kernel
                result[fma] = f"{type(exc).__name__}: {exc}"
        results[index] = result
    return results


def on_gpu(directory: Path, out: Path, workers: int) -> None:
    import multiprocessing

    from numba import cuda

    with open(directory / "cases.pkl", "rb") as f:
        count = len(pickle.load(f))
    device = cuda.get_current_device()
    name = getattr(device, "name", "Numba's CUDA simulator")
    name = name.decode() if isinstance(name, bytes) else name
    shards = [(directory, list(range(k, count, workers))) for k in range(workers)]
    results: dict[int, dict] = {}
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for part in pool.map(_gpu_worker, shards):
            results.update(part)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "gpu_results.pkl", "wb") as f:
        pickle.dump({"device": name, "cc": device.compute_capability, "results": results}, f)
    print(f"ran {len(results)} kernels on {name} (CC {device.compute_capability})")


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        return bool(np.all(_equal_each(a, b)))
    return bool(np.array_equal(a, b))


ULPS = 1024  # a libdevice function's last bit, grown by what the kernel computes from it


def _near(sim: list[np.ndarray], gpu: list[np.ndarray]) -> bool:
    """Whether every float output is within ULPS units in the last place of the GPU's (NaN
    equal to NaN): a larger difference is no libdevice rounding, however many `math` calls the
    kernel makes (NVVM folding Numba's float-remainder sign check was one such, in 6 kernels)."""
    for s, g in zip(sim, gpu):
        if s.dtype.kind != "f":
            continue
        same = _equal_each(s, g)
        ints = f"i{s.itemsize}"
        apart = np.abs(s.view(ints).astype(np.int64) - g.view(ints).astype(np.int64))
        if np.any(~same & (apart > ULPS)):
            return False
    return True


def _equal_each(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.isnan(a) & np.isnan(b)) | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))


def resimulate(directory: Path, kept: list[dict]) -> None:
    """Run the saved kernels on today's simulator again (their GPU results stay valid)."""
    import gpukit

    backend = gpukit.get_backend("cpu")
    for case in kept:
        spec = importlib.util.spec_from_file_location(case["module"],
                                                      directory / f"{case['module']}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        outs = [backend.to_device(np.zeros(len(case["inputs"][0]), dtype=d))
                for d in case["dtypes"]]
        options = ({"checks": {"wraparound": False}} if "negative_index" in case["features"]
                   else {})
        backend.launch_kernel(module.kernel, case["grid"], case["block"],
                              *map(backend.to_device, case["inputs"]), *outs, **options)
        case["simulator"] = [backend.to_host(o) for o in outs]


def compare(directory: Path, results_dir: Path, again: bool = False) -> dict:
    with open(directory / "cases.pkl", "rb") as f:
        kept = pickle.load(f)
    if again:
        resimulate(directory, kept)
    with open(results_dir / "gpu_results.pkl", "rb") as f:
        gpu = pickle.load(f)
    verdicts: Counter = Counter()
    unexplained = []
    for index, case in enumerate(kept):
        result = gpu["results"][index]
        if isinstance(result[True], str) or isinstance(result[False], str):
            verdicts["failed on the GPU"] += 1
            unexplained.append((index, f"GPU: {result[True]} / {result[False]}"))
            continue
        same = [all(_equal(s, g) for s, g in zip(case["simulator"], result[fma]))
                for fma in (True, False)]
        if same[0]:
            verdict = "equal bit for bit"
        elif same[1]:
            verdict = "equal without FMA contraction"
        elif case["uses_math"] and _near(case["simulator"], result[True]):
            verdict = "differs: calls math functions (libdevice)"
        else:
            verdict = "differs: unexplained"
            unexplained.append((index, _describe(case, result[False])))
        verdicts[verdict] += 1
    summary = {"device": gpu["device"], "cc": list(gpu["cc"]), "kernels": len(kept),
               "verdicts": dict(verdicts)}
    print(json.dumps(summary, indent=1))
    for index, text in unexplained:
        print(f"--- kernel {index} ({kept[index]['module']}.py)\n{text}")
    return summary


def _describe(case: dict, gpu_outs: list[np.ndarray]) -> str:
    lines = []
    for k, (s, g) in enumerate(zip(case["simulator"], gpu_outs)):
        for t in range(len(s)):
            if not _equal(s[t:t + 1], g[t:t + 1]):
                inputs = ", ".join(f"a{j}[{t}]={a[t].item()!r}"
                                   for j, a in enumerate(case["inputs"]))
                lines.append(f"o{k} thread {t}: simulator {s[t].item()!r}, GPU {g[t].item()!r};"
                             f" {inputs}")
    return "\n".join(lines[:8])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--examples", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, required=True)
    g = sub.add_parser("gpu")
    g.add_argument("directory", type=Path)
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--workers", type=int, default=8)
    c = sub.add_parser("compare")
    c.add_argument("directory", type=Path)
    c.add_argument("results", type=Path)
    c.add_argument("--resimulate", action="store_true",
                   help="run the saved kernels on the simulator again before comparing")
    args = parser.parse_args(argv)
    if args.step == "prepare":
        prepare(args.examples, args.seed, args.out)
    elif args.step == "gpu":
        on_gpu(args.directory, args.out, args.workers)
    else:
        compare(args.directory, args.results, args.resimulate)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
