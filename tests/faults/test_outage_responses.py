"""What people and API clients get while the database is unreachable: a 503, never a 500.

The real outage (PostgreSQL behind a proxy that is cut, a real web server) is in
test_database_outage.py; these check the answer itself, in both languages, in milliseconds.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.db import InterfaceError
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory, override_settings

from courseware.outage import RETRY_AFTER_S, DatabaseOutageMiddleware

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.urls("tests.faults.outage_urls"),
]


def assert_not_debug_page(html: str) -> None:
    for mark in ("Traceback", "DEBUG = True", "Request Method", "OperationalError"):
        assert mark not in html


@pytest.fixture
def client() -> Client:
    client = Client()
    client.raise_request_exception = False
    return client


@override_settings(DEBUG=False)
def test_a_page_says_the_site_is_briefly_unavailable_and_when_to_retry(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="courseware.outage"):
        response = client.get("/test-db-gone/")
    html = response.content.decode()
    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_S)
    assert "briefly unavailable" in html and "safe" in html
    assert f"reload this page in {RETRY_AFTER_S} seconds" in html
    assert 'href="/"' in html
    assert "Connection refused" not in html and "5432" not in html
    assert_not_debug_page(html)
    # One line for the operators, with the cause, and no traceback.
    [record] = [r for r in caplog.records if r.name == "courseware.outage"]
    assert "Connection refused" in record.getMessage() and record.exc_info is None


@override_settings(DEBUG=False)
def test_the_page_speaks_chinese(client: Client) -> None:
    response = client.get("/test-db-gone/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    html = response.content.decode()
    assert response.status_code == 503
    assert "课程网站暂时无法访问" in html and f"{RETRY_AFTER_S} 秒后" in html
    assert 'lang="zh-hans"' in html and "briefly unavailable" not in html


@override_settings(DEBUG=True)
def test_even_with_debug_on_an_outage_is_a_503_not_a_traceback(client: Client) -> None:
    response = client.get("/test-db-gone/")
    assert response.status_code == 503
    assert_not_debug_page(response.content.decode())


def test_the_api_answers_json_with_retry_after(client: Client) -> None:
    response = client.get("/api/v1/test-db-gone")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"] == str(RETRY_AFTER_S)
    assert "database" in json.loads(response.content)["error"]

    chinese = client.get("/api/v1/test-db-gone", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "数据库" in json.loads(chinese.content)["error"]


def test_other_errors_are_left_to_the_500_page() -> None:
    def page(request: HttpRequest) -> HttpResponse:
        return HttpResponse("fine")

    middleware = DatabaseOutageMiddleware(page)
    request = RequestFactory().get("/")
    assert middleware.process_exception(request, ValueError("a bug")) is None
    answered = middleware.process_exception(request, InterfaceError("connection already closed"))
    assert answered is not None and answered.status_code == 503
