"""The project's URLs plus a page and an API route whose database is gone, for the 503 tests."""

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.urls import path

from config.urls import urlpatterns as project_urlpatterns


def database_gone(request: HttpRequest) -> HttpResponse:
    # What psycopg says when PostgreSQL refuses the connection.
    raise OperationalError(
        'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
        "Connection refused"
    )


urlpatterns = [
    *project_urlpatterns,
    path("test-db-gone/", database_gone),
    path("api/v1/test-db-gone", database_gone),
]
