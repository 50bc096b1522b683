"""While the database is unreachable, the site says so with a 503 instead of a server error.

PostgreSQL restarting, failing over or cut off by the network reaches a view as Django's
`OperationalError` (cannot connect, connection lost) or `InterfaceError` (the connection is
already closed). Neither is a bug in the page, and the page comes back by itself once the
database does; so people get a short page saying that their saved work is safe and to try again
shortly, API clients a JSON error, and both a `Retry-After` header, which is what 503 means.

Nothing here touches the database. The page (`503.html`) extends nothing and is rendered
without the request: `base.html` and its context processors read the database, which is down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.utils.translation import gettext as _

logger = logging.getLogger(__name__)

# What Retry-After tells clients: a database restart or failover usually takes seconds to a
# minute, and a client that polls more often than this only adds load while it comes back.
RETRY_AFTER_S = 30
API_PREFIX = "/api/"
DATABASE_ERRORS = (OperationalError, InterfaceError)


def outage_response(request: HttpRequest) -> HttpResponse:
    """The 503 for this request: JSON for the API, the plain page for everything else."""
    if request.path_info.startswith(API_PREFIX):
        response: HttpResponse = JsonResponse(
            {
                "error": _(
                    "The course site cannot reach its database right now. Nothing you sent "
                    "before is lost; try again in %(seconds)d seconds."
                )
                % {"seconds": RETRY_AFTER_S}
            },
            status=503,
        )
    else:
        html = loader.get_template("503.html").render({"retry_after_s": RETRY_AFTER_S})
        response = HttpResponse(html, status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


class DatabaseOutageMiddleware:
    """Turns a view's database connection error into the 503 above.

    Views reach the database (the session, the user, the page's rows), so that is where an
    outage raises; `process_exception` sees those exceptions before Django's 500 handler does.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DATABASE_ERRORS):
            return None
        # One line, no traceback: during an outage every request lands here, and the cause is
        # the database's, not this code's.
        logger.warning(
            "Database unavailable for %s %s: %s",
            request.method,
            request.path,
            str(exception).strip().splitlines()[0] if str(exception).strip() else "",
        )
        return outage_response(request)
