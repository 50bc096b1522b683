"""The project's URLs plus one view that fails, for the production 500 page's tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from config.urls import urlpatterns as project_urlpatterns


class DeliberateFailure(Exception):
    """What the test view raises: no real code path raises it."""


def raising_view(request: HttpRequest) -> HttpResponse:
    raise DeliberateFailure("secret-detail-from-the-server")


urlpatterns = [*project_urlpatterns, path("test-boom/", raising_view)]
