"""What can go wrong, each with the exit code the command ends with and a message that says
what to do. Every failure the client expects is one of these; none reaches the user as a
traceback."""

from __future__ import annotations

from enum import IntEnum

from courseware.client import PROGRAM


class ExitCode(IntEnum):
    OK = 0
    REFUSED = 1  # the server said no (400, 403, 409, 5xx), or a local file could not be read
    USAGE = 2  # argparse's own code for a bad command line
    UNREACHABLE = 3  # connection refused, timed out, unknown host
    UNAUTHORIZED = 4  # no token, or the server refused it (401)
    NOT_FOUND = 5  # 404: no such exercise or submission
    TOO_LARGE = 6  # 413
    TOO_MANY = 7  # 429: too many submissions waiting
    STILL_WAITING = 8  # --wait ran out while following a submission that is not graded yet
    INTERRUPTED = 130  # Ctrl-C, as a shell reports it


class ClientError(Exception):
    """A failure to report in one message and end the command with `code`."""

    code: ExitCode = ExitCode.REFUSED

    def __init__(self, message: str, *, code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class Unreachable(ClientError):
    code = ExitCode.UNREACHABLE

    def __init__(self, server: str, why: str) -> None:
        super().__init__(f"cannot reach {server}: is the server running? check --server ({why})")
        self.server = server


def token_page(server: str) -> str:
    return f"{server}/account/token/"


class Unauthorized(ClientError):
    code = ExitCode.UNAUTHORIZED

    def __init__(self, server: str, said: str = "") -> None:
        # The server's own words first (in its language); then how to get a working token.
        lines = [f"the server refused your API token: {said}" if said else "not logged in"]
        lines.append(
            f"Get a token at {token_page(server)} (signed in on the web), then run "
            f"`{PROGRAM} login --server {server}` and paste it."
        )
        super().__init__("\n".join(lines))


def for_status(status: int, said: str, server: str) -> ClientError:
    """The error for an HTTP refusal, with the server's message shown as it wrote it."""
    said = said or f"the server answered HTTP {status}"
    if status == 401:
        return Unauthorized(server, said)
    if status == 404:
        return ClientError(said, code=ExitCode.NOT_FOUND)
    if status == 413:
        return ClientError(said, code=ExitCode.TOO_LARGE)
    if status == 429:
        return ClientError(said, code=ExitCode.TOO_MANY)
    if status >= 500:
        return ClientError(
            f"the server failed (HTTP {status}): {said}\nTry again in a minute; if it keeps "
            "failing, tell the course staff."
        )
    return ClientError(said)
