"""Benchmarks: speed and memory as ratios against a baseline in the same process
(docs/BENCHMARKS.md)."""
