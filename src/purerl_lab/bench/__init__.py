"""Benchmarks: `purerl bench` and `benchmarks/` share this code path."""
