"""Code that runs INSIDE the sandbox, next to the student's submission.

Everything here must import without the rest of ``graders`` (the sandbox only
mounts this folder, as the package ``harness``) and must never hold reference
code or expected outputs. The trusted side imports ``inputs`` and ``timing``
from here too, so both sides generate inputs and time calls identically.
"""
