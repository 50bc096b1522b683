"""The seccomp filter every sandboxed command runs under, as a BPF program in a memfd.

bwrap loads it (``--add-seccomp-fd FD``) just before it execs the command, so bwrap's own
setup (mounts, namespaces) is unaffected while everything student-controlled is. The policy
allows by default (PyTorch, CUDA and the harness need a broad set of calls) and refuses
only what lets code escape or see past the sandbox:

* new namespaces (``unshare``, ``clone`` with any ``CLONE_NEW*`` flag, ``setns``): a fresh
  user namespace hands back every capability inside it and a much larger kernel surface;
* ``clone3``: its flags live in memory a filter cannot read, so it fails with ENOSYS and
  glibc falls back to ``clone``, whose flags the filter does see;
* io_uring: its ring performs syscalls the filter never sees;
* ``sched_setaffinity`` when no cpuset pins the sandbox (``taskset`` alone is undone by one
  call, and a submission spreading over other cores skews timings and steals companions' CPU);
* tracing and other processes' memory (``ptrace``, ``process_vm_*``, ``perf_event_open``,
  ``bpf``, ``userfaultfd``), the kernel keyring, mounts and kernel modules/kexec.

A call from a foreign ABI (i386 ``int 0x80``, x32) is killed by libseccomp's arch check.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from graders.errors import GraderError

# The CLONE_NEW* flags (linux/sched.h): each one creates a namespace.
_CLONE_NEW_FLAGS = {
    "CLONE_NEWTIME": 0x00000080,
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}

DENIED = (
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "unshare", "setns",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "perf_event_open", "bpf", "userfaultfd",
    "keyctl", "add_key", "request_key",
    "mount", "umount2", "pivot_root", "fsopen", "fsmount", "move_mount", "open_tree",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
)  # fmt: skip

INSTALL_HINT = (
    "seccomp filtering needs libseccomp and its Python binding: `apt-get install libseccomp2` "
    "(or your distribution's libseccomp package) and `pip install pyseccomp==0.1.2`. "
    "For local debugging only, GRADERS_SANDBOX=none runs submissions WITHOUT isolation."
)


def _library() -> Any:
    """The pyseccomp module, or GraderError saying what to install."""
    try:
        import pyseccomp  # type: ignore[import-untyped]
    except (ImportError, OSError, RuntimeError) as exc:  # RuntimeError: libseccomp not found
        raise GraderError(f"libseccomp cannot be loaded ({exc}). {INSTALL_HINT}") from None
    return pyseccomp


def export_fd(*, pinned: bool) -> int:
    """A memfd holding the compiled filter, positioned at its start; the caller closes it.

    ``pinned``: a cpuset confines the sandbox, so ``sched_setaffinity`` cannot leave it and
    stays allowed (some libraries call it at start-up and complain when it fails).
    """
    seccomp = _library()
    try:
        policy = seccomp.SyscallFilter(seccomp.ALLOW)
        deny = seccomp.ERRNO(errno.EPERM)
        names = [*DENIED, *(() if pinned else ("sched_setaffinity",))]
        for name in names:
            try:
                policy.add_rule(deny, name)
            except OSError:
                continue  # a call this kernel/arch does not have cannot be made either
        for flag in _CLONE_NEW_FLAGS.values():
            policy.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
        policy.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        fd = os.memfd_create("graders-seccomp")  # close-on-exec: only pass_fds hands it on
        try:
            with open(os.dup(fd), "wb", buffering=0) as sink:
                policy.export_bpf(sink)
            os.lseek(fd, 0, os.SEEK_SET)
        except BaseException:
            os.close(fd)
            raise
    except OSError as exc:
        raise GraderError(f"the seccomp filter could not be built ({exc}). {INSTALL_HINT}") from exc
    return fd
