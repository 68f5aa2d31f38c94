"""The differential tester's soak run: many generated kernels, every failure collected.

    python tests/diff_soak.py --examples 10000 --out /tmp/differential [--seed 1]

Unlike the pytest soak (test_differential.py, which stops at the first failure), this runs on
after a failure: each failing case's report goes to <out>/failure-<n>.txt, and <out>/summary.json
keeps the counts by outcome, updated as it goes (so a run stopped early still says how many ran).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from diff_program import Case, cases
from diff_run import run_case
from hypothesis import HealthCheck, Phase, given, seed, settings

import gpukit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/differential"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "modules"
    work.mkdir(exist_ok=True)
    backend = gpukit.get_backend("cpu")
    counts: Counter = Counter()
    features: Counter = Counter()
    start = time.perf_counter()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None,
              phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(case=cases())
    def one(case: Case) -> None:
        try:
            outcome = run_case(case, work, backend)
            status = outcome.status if not outcome.kind_errors else "kind_error"
            text = outcome.report(case)
        except Exception as exc:  # noqa: BLE001 - the harness itself failed: recorded
            status, text = "harness_error", f"{type(exc).__name__}: {exc}"
        counts[status] += 1
        features.update(case.program.features)
        if status not in ("ok", "rejected"):
            n = sum(v for k, v in counts.items() if k not in ("ok", "rejected"))
            (args.out / f"failure-{n}.txt").write_text(text + "\n")
        total = sum(counts.values())
        (args.out / "summary.json").write_text(json.dumps(
            {"kernels": total, "counts": counts, "features": features,
             "seconds": round(time.perf_counter() - start, 1)}, indent=1))
        if total % 25 == 0:
            print(f"{total} kernels, {dict(counts)}, {time.perf_counter() - start:.0f} s",
                  flush=True)

    one()
    print(json.loads((args.out / "summary.json").read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
