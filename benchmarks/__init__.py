"""Side-by-side speed measurements of gpukit's simulator (`python -m benchmarks.simulator`).

Not part of the installed package: run from a checkout. BENCHMARKS.md holds the latest table.
"""
