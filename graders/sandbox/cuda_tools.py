"""The CUDA toolkit (nvcc) and Nsight Compute (ncu) as a CUDA sandbox sees them.

The sandbox shows read-only /usr, /bin, /lib*, the interpreter and its venv, and nothing
else of the host: an empty /opt, a private /tmp. A CUDA C++ submission builds with
``torch.utils.cpp_extension``, which looks for nvcc in ``CUDA_HOME`` (or ``CUDA_PATH``), then on
PATH, then in /usr/local/cuda; Nsight Compute usually lives under
``/opt/nvidia/nsight-compute/<version>/``. So the sandbox gets:

- ``CUDA_HOME`` and the toolkit's ``bin`` on its PATH, found the way cpp_extension finds it;
- a read-only bind of each install folder it could not see otherwise (the toolkit outside
  /usr, ncu's folder under /opt), at the same path, so a path found outside works inside.

Which binary runs is still asked from inside the sandbox (graders/measure/hardware_bytes.py,
graders/gpu_check/hardware_probe.py): only that view is the one a grading gets.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys
from pathlib import Path

_SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
USUAL_CUDA_HOME = "/usr/local/cuda"
NSIGHT_GLOB = "/opt/nvidia/nsight-compute/*/ncu"
_SCRIPT_PATHS = re.compile(rb"(/opt/[A-Za-z0-9._+/-]+)")


def cuda_home() -> str | None:
    """The CUDA toolkit's folder, as torch.utils.cpp_extension finds it: ``$CUDA_HOME`` or
    ``$CUDA_PATH``, else two levels above the ``nvcc`` on PATH, else /usr/local/cuda; of the
    last two, the first that holds a toolkit (``bin/nvcc`` and ``include/``), because an nvcc
    on PATH may be a launcher script (/usr/local/bin/nvcc execing the toolkit's)."""
    for key in ("CUDA_HOME", "CUDA_PATH"):
        configured = os.environ.get(key)
        if configured:
            return configured
    nvcc = shutil.which("nvcc")
    candidates = [os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))] if nvcc else []
    candidates.append(USUAL_CUDA_HOME)
    for candidate in candidates:
        if is_toolkit(candidate):
            return candidate
    return candidates[0] if nvcc else None


def is_toolkit(folder: str) -> bool:
    return os.access(f"{folder}/bin/nvcc", os.X_OK) and os.path.isdir(f"{folder}/include")


def ncu_path() -> str | None:
    """The ``ncu`` to run: ``$GRADERS_NCU``, else ``ncu`` on PATH, else the toolkit's, else the
    newest Nsight Compute under /opt/nvidia."""
    configured = os.environ.get("GRADERS_NCU")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    home = cuda_home()
    candidates = [f"{home}/bin/ncu"] if home else []
    candidates += sorted(glob.glob(NSIGHT_GLOB), reverse=True)
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def _visible_roots() -> list[str]:
    roots = list(_SYSTEM_ROOTS)
    roots += [os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix]
    return roots


def visible(path: str) -> bool:
    """Whether the sandbox sees ``path`` without a bind of its own (it and its target)."""
    roots = _visible_roots()
    real = os.path.realpath(path)
    return any(_under(path, root) for root in roots) and any(_under(real, root) for root in roots)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _referenced_folders(script: str) -> list[str]:
    """Folders under /opt that a launcher script names (ncu's wrappers exec the real binary
    by its full path), each the folder of the file named."""
    try:
        with open(script, "rb") as handle:
            head = handle.read(8192)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    found = []
    for match in _SCRIPT_PATHS.findall(head):
        named = match.decode(errors="replace").rstrip("/.")
        folder = named if os.path.isdir(named) else os.path.dirname(named)
        if folder and folder != "/opt" and os.path.isdir(folder):
            found.append(folder)
    return found


def install_folders(home: str | None, ncu: str | None) -> list[str]:
    """The folders to bind read-only into a CUDA sandbox: the toolkit's and ncu's, each
    only where the sandbox would not see it already."""
    folders: list[str] = []
    if home and os.path.isdir(home) and not visible(home):
        folders.append(os.path.realpath(home))
    if ncu and not visible(ncu):
        folders.append(os.path.dirname(os.path.realpath(ncu)))
    if ncu:
        folders += [f for f in _referenced_folders(os.path.realpath(ncu)) if not visible(f)]
    kept: list[str] = []
    for folder in sorted(set(folders), key=len):  # a folder inside one already kept: skip
        if not any(_under(folder, outer) for outer in kept):
            kept.append(folder)
    return kept


def bind_args(home: str | None, ncu: str | None) -> list[str]:
    """bwrap's arguments for :func:`install_folders` (after /tmp and /opt are made)."""
    args: list[str] = []
    made = {"/", "/tmp", "/opt"}  # the sandbox's own: never re-made
    for folder in install_folders(home, ncu):
        # bwrap makes missing parents 0700 (root's), which the sandbox's uid cannot enter.
        for parent in reversed(Path(folder).parents):
            if str(parent) not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        args += ["--ro-bind", folder, folder]
        real_home = os.path.realpath(home) if home else None
        if home and real_home == folder and home != folder and not visible(home):
            args += ["--symlink", folder, home]  # e.g. /opt/cuda -> /opt/cuda-13.0
    return args


def path_entries(home: str | None, ncu: str | None) -> list[str]:
    """What a CUDA sandbox's PATH adds: the toolkit's bin, ncu's own folder."""
    entries = []
    if home:
        entries.append(str(Path(home) / "bin"))
    if ncu:
        entries.append(os.path.dirname(ncu))
    return list(dict.fromkeys(entries))
