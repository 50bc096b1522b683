"""Production error pages: a friendly page in the reader's language, never Django's debug page."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

DEBUG_PAGE_MARKS = (
    "Traceback",
    "Django tried these URL patterns",
    "DEBUG = True",
    "Request Method",
)


def assert_not_debug_page(html: str) -> None:
    for mark in DEBUG_PAGE_MARKS:
        assert mark not in html


@override_settings(DEBUG=False)
def test_a_missing_page_says_what_was_not_found_and_links_home() -> None:
    response = Client().get("/no-such-page/<b>x</b>/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "Page not found" in html
    assert "<code>/no-such-page/" in html and "<b>x</b>" not in html
    assert 'href="/"' in html
    assert_not_debug_page(html)


@override_settings(DEBUG=False)
def test_a_missing_page_speaks_chinese_to_a_logged_in_reader() -> None:
    client = Client()
    client.force_login(User.objects.create_user(username="reader", password="pw-reader"))
    response = client.get("/no-such-page/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    html = response.content.decode()
    assert response.status_code == 404
    assert "这个地址上没有内容" in html and "返回课程首页" in html and 'lang="zh-hans"' in html
    assert "Page not found" not in html
    assert "reader" in html  # the site's usual header, with who is logged in
    assert_not_debug_page(html)


@pytest.fixture
def failing_client() -> Client:
    client = Client()
    client.raise_request_exception = False
    return client


@override_settings(DEBUG=False, ROOT_URLCONF="tests.courseware.raising_urls")
def test_a_server_error_gives_a_friendly_page_and_is_logged(
    failing_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = failing_client.get("/test-boom/")
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong" in html and "logged" in html and "TA" in html
    assert 'href="/"' in html
    assert "secret-detail-from-the-server" not in html
    assert_not_debug_page(html)
    assert any(
        record.levelno == logging.ERROR and record.exc_info and "test-boom" in record.getMessage()
        for record in caplog.records
    )


@override_settings(DEBUG=False, ROOT_URLCONF="tests.courseware.raising_urls")
def test_a_server_error_page_speaks_chinese(failing_client: Client) -> None:
    response = failing_client.get("/test-boom/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    html = response.content.decode()
    assert response.status_code == 500
    assert "出错了" in html and "助教" in html and 'lang="zh-hans"' in html
    assert_not_debug_page(html)
