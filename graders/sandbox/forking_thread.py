"""Start sandboxes from one thread that lives as long as the worker process.

bwrap's ``--die-with-parent`` is ``PR_SET_PDEATHSIG``, and Linux sends that signal when the
*thread* that forked the child exits, not when its process does. Warm runners are started
by short-lived threads too (grading/warm.py's refill thread ends once the pool is full), so a
runner forked there was sent SIGKILL when that thread finished. Frozen while it waited, it
kept the signal pending until a grading thawed it, and that honest submission was graded
"killed by SIGKILL" on its first call (one grading in three or four on a busy worker).

Every sandbox is therefore forked here, on one daemon thread that never returns: the signal
still comes when the worker dies (the thread dies with it), and never because the thread that
asked for a sandbox ended.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from concurrent.futures import Future
from typing import Any, cast

_Request = tuple[Future[subprocess.Popen[bytes]], tuple[Any, ...], dict[str, Any]]
_requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
_thread: threading.Thread | None = None
_thread_lock = threading.Lock()


def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(*args, **kwargs)``, forked on the forking thread; its errors are
    raised here, in the caller's thread."""
    if threading.current_thread() is _thread:
        return _fork(args, kwargs)
    _ensure_thread()
    result: Future[subprocess.Popen[bytes]] = Future()
    _requests.put((result, args, kwargs))
    return result.result()


def _ensure_thread() -> None:
    global _thread
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_serve, name="graders-forking", daemon=True)
            _thread.start()


def _serve() -> None:
    while True:
        result, args, kwargs = _requests.get()
        if not result.set_running_or_notify_cancel():
            continue
        try:
            result.set_result(_fork(args, kwargs))
        except BaseException as exc:  # handed to the caller, who raises it
            result.set_exception(exc)


def _fork(args: tuple[Any, ...], kwargs: dict[str, Any]) -> subprocess.Popen[bytes]:
    # The callers open binary pipes (no text=, encoding= or errors=).
    return cast("subprocess.Popen[bytes]", subprocess.Popen(*args, **kwargs))
