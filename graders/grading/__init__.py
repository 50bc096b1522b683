"""One grading's phases: inputs, calls, checks, timing, warm runners."""
