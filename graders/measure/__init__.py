"""Timing statistics, cache flushing, peak calibration and reused companion times."""
