"""The benchmark suite: `python -m tests.bench` (see docs/benchmarks.md).

Not part of the default test run: no module here is named `test_*`, and
nothing here asserts a speed. Every figure is measured against a baseline in
the same run, interleaved (baseline, subject, baseline, subject, …), and
reported as the median of repeated runs, so a busy machine slows both sides
alike and the ratio stays meaningful.
"""
