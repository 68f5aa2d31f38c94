"""Third-party code kept as it was published (see README.md here): gpukit's own test run does not
collect it; tests/test_third_party.py runs it in subprocesses under the simulation mode."""

collect_ignore_glob = ["*.py"]
