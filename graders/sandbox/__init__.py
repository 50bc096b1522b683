"""Sandboxes: bubblewrap, cgroups, seccomp, the trusted channel and grading slots."""
