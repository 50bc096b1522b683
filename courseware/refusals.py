"""The one way a service says no to a user's request.

Submissions, quizzes and a TA's grades all refuse in the same shape: a message written for the
person (what to do next) and the HTTP status an API answers with. One class, so the views and
the API catch a single exception and every refusal reads the same.
"""

from __future__ import annotations


class Refused(Exception):
    """A service refused the user's request; nothing was saved.

    `message` says what the user can do about it (shown on the page or sent as the API's
    error); `status_code` is the HTTP status the API answers with: 400 for a malformed
    request, 403 when it is not allowed now (closed, out of attempts), 404 for something that
    is not there, 409/429 when it clashes with what is already there, 503 while content is
    being updated.
    """

    def __init__(self, message: str, *, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
