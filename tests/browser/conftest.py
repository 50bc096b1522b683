"""Real Chromium (Debian's, installed by `make browser`) driven by Playwright against the live
test server. Every page a test visits can be saved as a screenshot under var/screenshots/,
which git ignores: look at them after a run.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from tests.celery_worker import worker

__all__ = ["browser", "log_in", "shots_dir", "worker"]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "var" / "screenshots"
# Playwright's sync API keeps an event loop in this thread; the tests' own ORM calls are
# synchronous and run between its calls, never inside it.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("Debian's chromium is missing: run `make browser` (root) to install it")
    return found


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(),
            headless=True,
            # The machine has no network beyond localhost: no background fetches, no sync.
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield launched
        launched.close()


class Student:
    """One person's browser context on the live server, logged in, in one language."""

    def __init__(self, context: BrowserContext, base_url: str, shots: Path, language: str) -> None:
        self.context, self.base_url, self.shots, self.language = context, base_url, shots, language
        self.page: Page = context.new_page()
        self.page.set_default_timeout(15_000)
        self.taken = 0

    def open(self, path: str) -> Page:
        self.page.goto(self.base_url + path)
        return self.page

    def screenshot(self, name: str) -> Path:
        self.taken += 1
        path = self.shots / f"{self.taken:02d}-{self.language}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def shots_dir(request: pytest.FixtureRequest) -> Path:
    folder = SCREENSHOTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def log_in(browser: Browser, live_server, shots_dir: Path) -> Iterator:
    """log_in(user, language="en") -> Student: a fresh context with the user's session cookie."""
    contexts: list[BrowserContext] = []

    def make(user: User, language: str = "en") -> Student:
        client = Client()
        client.force_login(user)
        context = browser.new_context(
            locale="zh-CN" if language.startswith("zh") else "en-US",
            timezone_id="Asia/Shanghai" if language.startswith("zh") else "America/New_York",
            viewport={"width": 1200, "height": 900},
        )
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    "url": live_server.url,
                },
                {"name": settings.LANGUAGE_COOKIE_NAME, "value": language, "url": live_server.url},
            ]
        )
        contexts.append(context)
        return Student(context, live_server.url, shots_dir, language)

    yield make
    for context in contexts:
        context.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here drives Chromium: `-m "not browser"` leaves them all out locally; CI
    (`make test`) runs them."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.browser)
