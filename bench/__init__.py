"""Benchmarks of the grading engine itself (fidelity and repeatability)."""
